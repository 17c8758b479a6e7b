#ifndef DBWATCH_CSQLITE_SHIM_H
#define DBWATCH_CSQLITE_SHIM_H

// The system library is built with SQLITE_ENABLE_PREUPDATE_HOOK; the header
// only declares the pre-update API when the macro is set.
#ifndef SQLITE_ENABLE_PREUPDATE_HOOK
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#endif
#include <sqlite3.h>

// Only what Swift cannot call directly lives here.

/// `sqlite3_db_config` is variadic; this wraps the integer form
/// (`SQLITE_DBCONFIG_DEFENSIVE`, `SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION`, ...).
static inline int dbwatch_db_config_int(sqlite3 *db, int op, int value, int *result) {
    return sqlite3_db_config(db, op, value, result);
}

/// `SQLITE_TRANSIENT` is a macro casting -1 to a function pointer.
static inline sqlite3_destructor_type dbwatch_transient(void) {
    return SQLITE_TRANSIENT;
}

#ifdef __linux__
#include <pthread.h>

// glibc declares pthread_setname_np only under _GNU_SOURCE, which Swift's
// Glibc module is not built with.
extern int pthread_setname_np(pthread_t thread, const char *name);

/// Names the calling thread as `top -H`, `perf` and `/proc` show it (at
/// most 15 bytes; a longer name is refused and the old one kept).
/// Foundation's `Thread.name` does so only when it wins a race with the
/// thread's creator.
static inline int dbwatch_name_current_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}
#endif

#endif
