#include "DBWatchVFS.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>

struct dbwatch_temp_budget {
    _Atomic int64_t limit;  // negative: no limit
    _Atomic int64_t used;
    _Atomic int exceeded;
    _Atomic int64_t references;
};

// The budget that temporary files opened on this thread are charged to:
// set by a connection while it runs untrusted SQL on this thread (a
// connection is used by one thread at a time, and SQLite opens a
// statement's temporary files on the thread that steps it, as DBWatch
// allows no sorter worker threads under the policy).
static _Thread_local dbwatch_temp_budget *current_budget = 0;

// The default VFS, which does the work; set once by register_vfs.
static sqlite3_vfs *real_vfs = 0;
static sqlite3_vfs dbwatch_vfs;
static int registered = 0;
static pthread_once_t registration = PTHREAD_ONCE_INIT;

// A file opened through the VFS: our header, then the real file.
typedef struct {
    sqlite3_file base;
    sqlite3_file *real;
    dbwatch_temp_budget *budget;  // NULL for files that are not charged
    int64_t charged;              // the furthest offset written, charged to budget
} budget_file;

#define REAL(file) (((budget_file *)(file))->real)

static void budget_retain(dbwatch_temp_budget *budget) { atomic_fetch_add(&budget->references, 1); }

void dbwatch_temp_budget_release(dbwatch_temp_budget *budget) {
    if (budget == 0) return;
    if (atomic_fetch_sub(&budget->references, 1) == 1) free(budget);
}

// Charges `size` more bytes to `budget`; 0 (nothing charged) beyond its limit.
static int budget_charge(dbwatch_temp_budget *budget, int64_t size) {
    int64_t used = atomic_fetch_add(&budget->used, size) + size;
    int64_t limit = atomic_load(&budget->limit);
    if (limit >= 0 && used > limit) {
        atomic_fetch_sub(&budget->used, size);
        atomic_store(&budget->exceeded, 1);
        return 0;
    }
    return 1;
}

// Grows the file's charge to `end` bytes; 0 if the budget refuses.
static int charge_to(budget_file *file, int64_t end) {
    if (end <= file->charged) return 1;
    if (!budget_charge(file->budget, end - file->charged)) return 0;
    file->charged = end;
    return 1;
}

static int f_close(sqlite3_file *file) {
    budget_file *wrapper = (budget_file *)file;
    int rc = REAL(file)->pMethods ? REAL(file)->pMethods->xClose(REAL(file)) : SQLITE_OK;
    if (wrapper->budget) {
        atomic_fetch_sub(&wrapper->budget->used, wrapper->charged);
        dbwatch_temp_budget_release(wrapper->budget);
        wrapper->budget = 0;
        wrapper->charged = 0;
    }
    return rc;
}
static int f_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    return REAL(file)->pMethods->xRead(REAL(file), buffer, amount, offset);
}
static int f_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    budget_file *wrapper = (budget_file *)file;
    if (wrapper->budget && !charge_to(wrapper, offset + amount)) return SQLITE_FULL;
    return REAL(file)->pMethods->xWrite(REAL(file), buffer, amount, offset);
}
static int f_truncate(sqlite3_file *file, sqlite3_int64 size) {
    budget_file *wrapper = (budget_file *)file;
    int rc = REAL(file)->pMethods->xTruncate(REAL(file), size);
    if (rc == SQLITE_OK && wrapper->budget && size < wrapper->charged) {
        atomic_fetch_sub(&wrapper->budget->used, wrapper->charged - size);
        wrapper->charged = size;
    }
    return rc;
}
static int f_sync(sqlite3_file *file, int flags) { return REAL(file)->pMethods->xSync(REAL(file), flags); }
static int f_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    return REAL(file)->pMethods->xFileSize(REAL(file), size);
}
static int f_lock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xLock(REAL(file), level); }
static int f_unlock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xUnlock(REAL(file), level); }
static int f_check_reserved(sqlite3_file *file, int *result) {
    return REAL(file)->pMethods->xCheckReservedLock(REAL(file), result);
}
static int f_file_control(sqlite3_file *file, int op, void *arg) {
    budget_file *wrapper = (budget_file *)file;
    // A size hint allocates the file up to the hinted size (the sorter
    // sends one before writing each run): charged like a write there.
    if (op == SQLITE_FCNTL_SIZE_HINT && wrapper->budget && !charge_to(wrapper, *(sqlite3_int64 *)arg)) {
        return SQLITE_FULL;
    }
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
    return REAL(file)->pMethods->xFetch(REAL(file), offset, amount, out);
}
static int f_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *page) {
    return REAL(file)->pMethods->xUnfetch(REAL(file), offset, page);
}

// One table per version of the real file's methods, so that SQLite sees
// the same capabilities (shared memory from version 2, memory mapping
// from version 3) as it would without the wrapper.
static const sqlite3_io_methods methods_v1 = {
    1,
    f_close, f_read, f_write, f_truncate, f_sync, f_file_size, f_lock, f_unlock, f_check_reserved,
    f_file_control, f_sector_size, f_device_characteristics,
};
static const sqlite3_io_methods methods_v2 = {
    2,
    f_close, f_read, f_write, f_truncate, f_sync, f_file_size, f_lock, f_unlock, f_check_reserved,
    f_file_control, f_sector_size, f_device_characteristics,
    f_shm_map, f_shm_lock, f_shm_barrier, f_shm_unmap,
};
static const sqlite3_io_methods methods_v3 = {
    3,
    f_close, f_read, f_write, f_truncate, f_sync, f_file_size, f_lock, f_unlock, f_check_reserved,
    f_file_control, f_sector_size, f_device_characteristics,
    f_shm_map, f_shm_lock, f_shm_barrier, f_shm_unmap,
    f_fetch, f_unfetch,
};

static int is_temporary(const char *name, int flags) {
    const int temporary =
        SQLITE_OPEN_TEMP_DB | SQLITE_OPEN_TEMP_JOURNAL | SQLITE_OPEN_SUBJOURNAL | SQLITE_OPEN_TRANSIENT_DB;
    return name == 0 || (flags & temporary) != 0;
}

static int v_open(sqlite3_vfs *base, const char *name, sqlite3_file *file, int flags, int *out_flags) {
    (void)base;
    budget_file *wrapper = (budget_file *)file;
    wrapper->real = (sqlite3_file *)(wrapper + 1);
    wrapper->budget = 0;
    wrapper->charged = 0;
    int rc = real_vfs->xOpen(real_vfs, name, wrapper->real, flags, out_flags);
    const sqlite3_io_methods *real_methods = wrapper->real->pMethods;
    // SQLite calls xClose only when pMethods is set, and must not when the
    // open failed.
    if (real_methods == 0) {
        wrapper->base.pMethods = 0;
        return rc;
    }
    wrapper->base.pMethods =
        real_methods->iVersion >= 3 ? &methods_v3 : real_methods->iVersion == 2 ? &methods_v2 : &methods_v1;
    dbwatch_temp_budget *budget = current_budget;
    if (rc == SQLITE_OK && budget != 0 && is_temporary(name, flags)) {
        budget_retain(budget);
        wrapper->budget = budget;
    }
    return rc;
}
static int v_delete(sqlite3_vfs *base, const char *name, int sync_dir) {
    (void)base;
    return real_vfs->xDelete(real_vfs, name, sync_dir);
}
static int v_access(sqlite3_vfs *base, const char *name, int flags, int *result) {
    (void)base;
    return real_vfs->xAccess(real_vfs, name, flags, result);
}
static int v_full_pathname(sqlite3_vfs *base, const char *name, int size, char *out) {
    (void)base;
    return real_vfs->xFullPathname(real_vfs, name, size, out);
}
static void *v_dl_open(sqlite3_vfs *base, const char *name) {
    (void)base;
    return real_vfs->xDlOpen(real_vfs, name);
}
static void v_dl_error(sqlite3_vfs *base, int size, char *out) {
    (void)base;
    real_vfs->xDlError(real_vfs, size, out);
}
static void (*v_dl_sym(sqlite3_vfs *base, void *handle, const char *symbol))(void) {
    (void)base;
    return real_vfs->xDlSym(real_vfs, handle, symbol);
}
static void v_dl_close(sqlite3_vfs *base, void *handle) {
    (void)base;
    real_vfs->xDlClose(real_vfs, handle);
}
static int v_randomness(sqlite3_vfs *base, int size, char *out) {
    (void)base;
    return real_vfs->xRandomness(real_vfs, size, out);
}
static int v_sleep(sqlite3_vfs *base, int microseconds) {
    (void)base;
    return real_vfs->xSleep(real_vfs, microseconds);
}
static int v_current_time(sqlite3_vfs *base, double *out) {
    (void)base;
    return real_vfs->xCurrentTime(real_vfs, out);
}
static int v_last_error(sqlite3_vfs *base, int size, char *out) {
    (void)base;
    return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, size, out) : 0;
}
static int v_current_time_int64(sqlite3_vfs *base, sqlite3_int64 *out) {
    (void)base;
    return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static void register_vfs(void) {
    if (sqlite3_initialize() != SQLITE_OK) return;
    sqlite3_vfs *real = sqlite3_vfs_find(0);
    if (real == 0 || real->iVersion < 2 || real->xCurrentTimeInt64 == 0) return;
    real_vfs = real;
    dbwatch_vfs.iVersion = 2;
    dbwatch_vfs.szOsFile = (int)sizeof(budget_file) + real->szOsFile;
    dbwatch_vfs.mxPathname = real->mxPathname;
    dbwatch_vfs.zName = "dbwatch";
    dbwatch_vfs.pAppData = 0;
    dbwatch_vfs.xOpen = v_open;
    dbwatch_vfs.xDelete = v_delete;
    dbwatch_vfs.xAccess = v_access;
    dbwatch_vfs.xFullPathname = v_full_pathname;
    dbwatch_vfs.xDlOpen = v_dl_open;
    dbwatch_vfs.xDlError = v_dl_error;
    dbwatch_vfs.xDlSym = v_dl_sym;
    dbwatch_vfs.xDlClose = v_dl_close;
    dbwatch_vfs.xRandomness = v_randomness;
    dbwatch_vfs.xSleep = v_sleep;
    dbwatch_vfs.xCurrentTime = v_current_time;
    dbwatch_vfs.xGetLastError = v_last_error;
    dbwatch_vfs.xCurrentTimeInt64 = v_current_time_int64;
    registered = sqlite3_vfs_register(&dbwatch_vfs, 0) == SQLITE_OK;
}

const char *dbwatch_vfs_name(void) {
    pthread_once(&registration, register_vfs);
    return registered ? dbwatch_vfs.zName : 0;
}

dbwatch_temp_budget *dbwatch_temp_budget_create(void) {
    dbwatch_temp_budget *budget = calloc(1, sizeof *budget);
    if (budget == 0) return 0;
    atomic_init(&budget->limit, -1);
    atomic_init(&budget->used, 0);
    atomic_init(&budget->exceeded, 0);
    atomic_init(&budget->references, 1);
    return budget;
}

void dbwatch_temp_budget_set_limit(dbwatch_temp_budget *budget, int64_t limit) {
    atomic_store(&budget->limit, limit);
}

int64_t dbwatch_temp_budget_used(dbwatch_temp_budget *budget) { return atomic_load(&budget->used); }

int dbwatch_temp_budget_take_exceeded(dbwatch_temp_budget *budget) { return atomic_exchange(&budget->exceeded, 0); }

dbwatch_temp_budget *dbwatch_temp_budget_enter(dbwatch_temp_budget *budget) {
    dbwatch_temp_budget *previous = current_budget;
    current_budget = budget;
    return previous;
}

void dbwatch_temp_budget_leave(dbwatch_temp_budget *previous) { current_budget = previous; }
