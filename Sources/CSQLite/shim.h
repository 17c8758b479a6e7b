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

#endif
