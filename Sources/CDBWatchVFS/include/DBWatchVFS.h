#ifndef DBWATCH_VFS_H
#define DBWATCH_VFS_H

#include <stdint.h>

/// DBWatch's VFS: a pass-through over SQLite's default VFS that counts the
/// bytes of temporary files (sorters, transient tables, temporary
/// databases and journals) against a budget, so that untrusted SQL cannot
/// fill the disk. Every other file is forwarded untouched, at the cost of
/// one pointer check per write.
///
/// A temporary file is charged to the budget that is current on the thread
/// that opens it (see `dbwatch_temp_budget_enter`); a write that would take
/// the budget's files together beyond its limit fails with `SQLITE_FULL`.
typedef struct dbwatch_temp_budget dbwatch_temp_budget;

/// The name of the VFS to pass to `sqlite3_open_v2`, registered on first
/// call (once, thread-safe), never as the default VFS. NULL if SQLite
/// refused the registration (out of memory).
const char *dbwatch_vfs_name(void);

/// A new budget with no limit and nothing charged, or NULL when out of
/// memory. The caller holds one reference; each temporary file charged to
/// it holds another until it is closed.
dbwatch_temp_budget *dbwatch_temp_budget_create(void);

/// Drops the caller's reference; the budget is freed once its files are
/// closed too.
void dbwatch_temp_budget_release(dbwatch_temp_budget *budget);

/// Sets how many bytes the budget's temporary files may hold together;
/// negative for no limit (they are still counted).
void dbwatch_temp_budget_set_limit(dbwatch_temp_budget *budget, int64_t limit);

/// How many bytes the budget's open temporary files hold (the furthest
/// offset written in each, summed).
int64_t dbwatch_temp_budget_used(dbwatch_temp_budget *budget);

/// Whether a write was refused for the limit since the last call; clears it.
int dbwatch_temp_budget_take_exceeded(dbwatch_temp_budget *budget);

/// Makes `budget` (or none, for NULL) the calling thread's current budget,
/// which temporary files opened on this thread are charged to; returns the
/// previous one, to give back to `dbwatch_temp_budget_leave`.
dbwatch_temp_budget *dbwatch_temp_budget_enter(dbwatch_temp_budget *budget);

/// Restores the calling thread's previous current budget.
void dbwatch_temp_budget_leave(dbwatch_temp_budget *previous);

#endif
