#ifndef DBWATCH_BENCHMARKS_CSQLITERAW_SHIM_H
#define DBWATCH_BENCHMARKS_CSQLITERAW_SHIM_H

// The raw-SQLite baselines of the benchmarks call the system SQLite directly,
// through this module of their own (the library's CSQLite is not a product).
#include <sqlite3.h>
#include <malloc.h>
#include <stddef.h>

/// Bytes of heap in use (all arenas, mmapped chunks included), for the
/// memory-per-observation workload.
static inline size_t bench_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

/// `SQLITE_TRANSIENT` is a macro casting -1 to a function pointer.
static inline sqlite3_destructor_type bench_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

#endif
