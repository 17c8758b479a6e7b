#ifndef DBWATCH_FAULT_INJECTING_VFS_H
#define DBWATCH_FAULT_INJECTING_VFS_H

#include <stdint.h>

/// A SQLite VFS over the default one whose writes fail on demand, for tests
/// of disk-full and I/O-error handling. Each test registers its own
/// instance under its own name and selects it with a URI filename
/// (`file:/path/db.sqlite?vfs=name`); nothing is shared between instances.
typedef struct dbwatch_fault_vfs dbwatch_fault_vfs;

/// Registers a new instance named `name` (copied), not as the default VFS.
/// Returns NULL when out of memory or when SQLite refuses the registration.
dbwatch_fault_vfs *dbwatch_fault_vfs_register(const char *name);

/// Unregisters and frees the instance. Every connection that uses it must
/// be closed first.
void dbwatch_fault_vfs_unregister(dbwatch_fault_vfs *vfs);

/// From now on every write, truncation and sync of every file opened
/// through the instance fails with `result_code` (`SQLITE_FULL` is what
/// SQLite's unix VFS returns on ENOSPC); 0 lets them through again.
void dbwatch_fault_vfs_set_write_error(dbwatch_fault_vfs *vfs, int result_code);

/// From now on every read of every file opened through the instance fails
/// with `result_code` (`SQLITE_IOERR_READ` is what the unix VFS returns on
/// EIO); 0 lets them through again.
void dbwatch_fault_vfs_set_read_error(dbwatch_fault_vfs *vfs, int result_code);

/// How many writes, truncations, syncs and reads have failed so far.
int64_t dbwatch_fault_vfs_failure_count(dbwatch_fault_vfs *vfs);

#endif
