#include "FaultInjectingVFS.h"

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct dbwatch_fault_vfs {
    sqlite3_vfs base;       // registered with SQLite; pAppData points back here
    sqlite3_vfs *real;      // the default VFS, which does the work
    char *name;
    _Atomic int write_error;
    _Atomic int read_error;
    _Atomic int64_t failures;
};

// A file opened through the instance: our header, then the real file.
typedef struct {
    sqlite3_file base;
    dbwatch_fault_vfs *vfs;
    sqlite3_file *real;
} fault_file;

static int injected(dbwatch_fault_vfs *vfs) {
    int code = atomic_load(&vfs->write_error);
    if (code != 0) atomic_fetch_add(&vfs->failures, 1);
    return code;
}

static int injected_read(dbwatch_fault_vfs *vfs) {
    int code = atomic_load(&vfs->read_error);
    if (code != 0) atomic_fetch_add(&vfs->failures, 1);
    return code;
}

#define REAL(file) (((fault_file *)(file))->real)
#define VFS_OF(file) (((fault_file *)(file))->vfs)

static int f_close(sqlite3_file *file) {
    int rc = REAL(file)->pMethods ? REAL(file)->pMethods->xClose(REAL(file)) : SQLITE_OK;
    return rc;
}
static int f_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    int code = injected_read(VFS_OF(file));
    if (code != 0) return code;
    return REAL(file)->pMethods->xRead(REAL(file), buffer, amount, offset);
}
static int f_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    int code = injected(VFS_OF(file));
    if (code != 0) return code;
    return REAL(file)->pMethods->xWrite(REAL(file), buffer, amount, offset);
}
static int f_truncate(sqlite3_file *file, sqlite3_int64 size) {
    int code = injected(VFS_OF(file));
    if (code != 0) return code;
    return REAL(file)->pMethods->xTruncate(REAL(file), size);
}
static int f_sync(sqlite3_file *file, int flags) {
    int code = injected(VFS_OF(file));
    if (code != 0) return code;
    return REAL(file)->pMethods->xSync(REAL(file), flags);
}
static int f_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    return REAL(file)->pMethods->xFileSize(REAL(file), size);
}
static int f_lock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xLock(REAL(file), level); }
static int f_unlock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xUnlock(REAL(file), level); }
static int f_check_reserved(sqlite3_file *file, int *result) {
    return REAL(file)->pMethods->xCheckReservedLock(REAL(file), result);
}
static int f_file_control(sqlite3_file *file, int op, void *arg) {
    return REAL(file)->pMethods->xFileControl(REAL(file), op, arg);
}
static int f_sector_size(sqlite3_file *file) { return REAL(file)->pMethods->xSectorSize(REAL(file)); }
static int f_device_characteristics(sqlite3_file *file) {
    return REAL(file)->pMethods->xDeviceCharacteristics(REAL(file));
}
static int f_shm_map(sqlite3_file *file, int page, int size, int extend, void volatile **out) {
    return REAL(file)->pMethods->xShmMap(REAL(file), page, size, extend, out);
}
static int f_shm_lock(sqlite3_file *file, int offset, int n, int flags) {
    return REAL(file)->pMethods->xShmLock(REAL(file), offset, n, flags);
}
static void f_shm_barrier(sqlite3_file *file) { REAL(file)->pMethods->xShmBarrier(REAL(file)); }
static int f_shm_unmap(sqlite3_file *file, int delete_flag) {
    return REAL(file)->pMethods->xShmUnmap(REAL(file), delete_flag);
}
static int f_fetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out) {
    // No memory-mapped pages: every read goes through xRead.
    (void)file; (void)offset; (void)amount;
    *out = 0;
    return SQLITE_OK;
}
static int f_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *page) {
    (void)file; (void)offset; (void)page;
    return SQLITE_OK;
}

static const sqlite3_io_methods fault_methods = {
    3,
    f_close, f_read, f_write, f_truncate, f_sync, f_file_size, f_lock, f_unlock, f_check_reserved,
    f_file_control, f_sector_size, f_device_characteristics,
    f_shm_map, f_shm_lock, f_shm_barrier, f_shm_unmap,
    f_fetch, f_unfetch,
};

static int v_open(sqlite3_vfs *base, const char *name, sqlite3_file *file, int flags, int *out_flags) {
    dbwatch_fault_vfs *vfs = base->pAppData;
    fault_file *wrapper = (fault_file *)file;
    wrapper->vfs = vfs;
    wrapper->real = (sqlite3_file *)(wrapper + 1);
    int rc = vfs->real->xOpen(vfs->real, name, wrapper->real, flags, out_flags);
    // SQLite calls xClose only when pMethods is set, and must not when the
    // open failed.
    wrapper->base.pMethods = wrapper->real->pMethods ? &fault_methods : 0;
    return rc;
}
static int v_delete(sqlite3_vfs *base, const char *name, int sync_dir) {
    dbwatch_fault_vfs *vfs = base->pAppData;
    return vfs->real->xDelete(vfs->real, name, sync_dir);
}
static int v_access(sqlite3_vfs *base, const char *name, int flags, int *result) {
    dbwatch_fault_vfs *vfs = base->pAppData;
    return vfs->real->xAccess(vfs->real, name, flags, result);
}
static int v_full_pathname(sqlite3_vfs *base, const char *name, int size, char *out) {
    dbwatch_fault_vfs *vfs = base->pAppData;
    return vfs->real->xFullPathname(vfs->real, name, size, out);
}
static void *v_dl_open(sqlite3_vfs *base, const char *name) {
    (void)base; (void)name;
    return 0;
}
static void v_dl_error(sqlite3_vfs *base, int size, char *out) {
    (void)base;
    if (size > 0) out[0] = 0;
}
static void (*v_dl_sym(sqlite3_vfs *base, void *handle, const char *symbol))(void) {
    (void)base; (void)handle; (void)symbol;
    return 0;
}
static void v_dl_close(sqlite3_vfs *base, void *handle) { (void)base; (void)handle; }
static int v_randomness(sqlite3_vfs *base, int size, char *out) {
    dbwatch_fault_vfs *vfs = base->pAppData;
    return vfs->real->xRandomness(vfs->real, size, out);
}
static int v_sleep(sqlite3_vfs *base, int microseconds) {
    dbwatch_fault_vfs *vfs = base->pAppData;
    return vfs->real->xSleep(vfs->real, microseconds);
}
static int v_current_time(sqlite3_vfs *base, double *out) {
    dbwatch_fault_vfs *vfs = base->pAppData;
    return vfs->real->xCurrentTime(vfs->real, out);
}
static int v_last_error(sqlite3_vfs *base, int size, char *out) {
    dbwatch_fault_vfs *vfs = base->pAppData;
    return vfs->real->xGetLastError ? vfs->real->xGetLastError(vfs->real, size, out) : 0;
}
static int v_current_time_int64(sqlite3_vfs *base, sqlite3_int64 *out) {
    dbwatch_fault_vfs *vfs = base->pAppData;
    return vfs->real->xCurrentTimeInt64(vfs->real, out);
}

dbwatch_fault_vfs *dbwatch_fault_vfs_register(const char *name) {
    if (sqlite3_initialize() != SQLITE_OK) return 0;
    sqlite3_vfs *real = sqlite3_vfs_find(0);
    if (real == 0 || real->iVersion < 2) return 0;
    dbwatch_fault_vfs *vfs = calloc(1, sizeof *vfs);
    if (vfs == 0) return 0;
    vfs->name = strdup(name);
    if (vfs->name == 0) {
        free(vfs);
        return 0;
    }
    vfs->real = real;
    atomic_init(&vfs->write_error, 0);
    atomic_init(&vfs->read_error, 0);
    atomic_init(&vfs->failures, 0);
    vfs->base.iVersion = 2;
    vfs->base.szOsFile = (int)sizeof(fault_file) + real->szOsFile;
    vfs->base.mxPathname = real->mxPathname;
    vfs->base.zName = vfs->name;
    vfs->base.pAppData = vfs;
    vfs->base.xOpen = v_open;
    vfs->base.xDelete = v_delete;
    vfs->base.xAccess = v_access;
    vfs->base.xFullPathname = v_full_pathname;
    vfs->base.xDlOpen = v_dl_open;
    vfs->base.xDlError = v_dl_error;
    vfs->base.xDlSym = v_dl_sym;
    vfs->base.xDlClose = v_dl_close;
    vfs->base.xRandomness = v_randomness;
    vfs->base.xSleep = v_sleep;
    vfs->base.xCurrentTime = v_current_time;
    vfs->base.xGetLastError = v_last_error;
    vfs->base.xCurrentTimeInt64 = v_current_time_int64;
    if (sqlite3_vfs_register(&vfs->base, 0) != SQLITE_OK) {
        free(vfs->name);
        free(vfs);
        return 0;
    }
    return vfs;
}

void dbwatch_fault_vfs_unregister(dbwatch_fault_vfs *vfs) {
    if (vfs == 0) return;
    sqlite3_vfs_unregister(&vfs->base);
    free(vfs->name);
    free(vfs);
}

void dbwatch_fault_vfs_set_write_error(dbwatch_fault_vfs *vfs, int result_code) {
    atomic_store(&vfs->write_error, result_code);
}

void dbwatch_fault_vfs_set_read_error(dbwatch_fault_vfs *vfs, int result_code) {
    atomic_store(&vfs->read_error, result_code);
}

int64_t dbwatch_fault_vfs_failure_count(dbwatch_fault_vfs *vfs) {
    return atomic_load(&vfs->failures);
}
