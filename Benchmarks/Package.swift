// swift-tools-version:6.1
import PackageDescription

// The DBWatch benchmarks: one executable that runs every workload of issue 3
// and compares each with raw SQLite doing the same work in the same run.
//
//     swift build -c release --package-path Benchmarks
//     Benchmarks/.build/release/dbwatch-benchmarks --runs 5
//
// The trait GRDB (on by default) adds the same workloads on GRDB.swift
// (`--grdb`). Without it the build is faster:
//
//     swift build -c release --package-path Benchmarks --disable-default-traits
//
// The server workloads of issue 16 (SSE fan-out over loopback) are two more
// executables: `dbwatch-bench-server` (Hummingbird, with or without DBWatch)
// and `dbwatch-bench-load` (a SwiftNIO client that also starts and stops the
// server processes and prints the table):
//
//     Benchmarks/.build/release/dbwatch-bench-load --runs 3
//
// The fan-out of issue 25 adds a floor, `dbwatch-bench-floor` (plain
// SwiftNIO, no framework), and the server built from the code before a
// change (`--before-server PATH`):
//
//     Benchmarks/.build/release/dbwatch-bench-load --only fanout --floor --before-server OTHER/dbwatch-bench-server
//
// `dbwatch serve` under the same fan-out, written by another process
// (issue 17), needs the `dbwatch` executable too:
//
//     swift build -c release --package-path Benchmarks --disable-default-traits --product dbwatch
//     Benchmarks/.build/release/dbwatch-bench-load --only serve --clients 1000 --runs 3
//
// The PostgreSQL replica of issue 19 (`DBWatchPostgres`; starts its own
// PostgreSQL 15 from /usr/lib/postgresql/15/bin):
//
//     swift build -c release --package-path Benchmarks --disable-default-traits --product dbwatch-bench-replica
//     Benchmarks/.build/release/dbwatch-bench-replica --runs 3
//
// Keyed changes against whole values (issue 26), a 10,000-row leaderboard
// where one score changes:
//
//     swift build -c release --package-path Benchmarks --disable-default-traits --product dbwatch-bench-changes
//     Benchmarks/.build/release/dbwatch-bench-changes --runs 101
//
// The sync protocol over HTTP (issue 26): server CPU per commit against
// whole values, latency against the number of live queries, resume after
// a minute. `dbwatch-bench-sync` starts `dbwatch-bench-sync-server`
// processes and drives them:
//
//     swift build -c release --package-path Benchmarks --disable-default-traits --product dbwatch-bench-sync-server
//     swift build -c release --package-path Benchmarks --disable-default-traits --product dbwatch-bench-sync
//     Benchmarks/.build/release/dbwatch-bench-sync --runs 3
let package = Package(
    name: "DBWatchBenchmarks",
    traits: [
        .trait(name: "GRDB", description: "Compare with GRDB.swift 7.10.0 (--grdb)."),
        .default(enabledTraits: ["GRDB"]),
    ],
    dependencies: [
        .package(name: "DBWatch", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", .upToNextMinor(from: "2.28.1")),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/vapor/postgres-nio", .upToNextMinor(from: "1.33.2")),
    ],
    targets: [
        // The raw-SQLite baselines: the root package's CSQLite is a target,
        // not a product, so the benchmarks link the system library themselves.
        .systemLibrary(
            name: "CSQLiteRaw",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .executableTarget(
            name: "dbwatch-benchmarks",
            dependencies: [
                "CSQLiteRaw",
                .product(name: "DBWatch", package: "DBWatch"),
                .product(name: "GRDB", package: "GRDB.swift", condition: .when(traits: ["GRDB"])),
            ]
        ),
        // What the server and the load client share: the monotonic clock,
        // the file-descriptor limit, CPU time and RSS of a process.
        .target(name: "BenchProcess"),
        .executableTarget(
            name: "dbwatch-bench-server",
            dependencies: [
                "BenchProcess",
                .product(name: "DBWatch", package: "DBWatch"),
                .product(name: "DBWatchHummingbird", package: "DBWatch"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The floor of the fan-out (issue 25): plain SwiftNIO and raw SQLite,
        // one fetch per write and the same buffer written to every client.
        .executableTarget(
            name: "dbwatch-bench-floor",
            dependencies: [
                "BenchProcess",
                "CSQLiteRaw",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "dbwatch-bench-load",
            dependencies: [
                "BenchProcess",
                "CSQLiteRaw",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // Keyed changes against whole values (issue 26): bytes and time for
        // a 10,000-row ordered result where one row changes.
        .executableTarget(
            name: "dbwatch-bench-changes",
            dependencies: [
                .product(name: "DBWatchHummingbird", package: "DBWatch")
            ]
        ),
        // The sync protocol over HTTP (issue 26): a server with the whole-value
        // route and the sync routes, and the client that drives it.
        .executableTarget(
            name: "dbwatch-bench-sync-server",
            dependencies: [
                "BenchProcess",
                .product(name: "DBWatch", package: "DBWatch"),
                .product(name: "DBWatchHummingbird", package: "DBWatch"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "dbwatch-bench-sync",
            dependencies: [
                "BenchProcess",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The PostgreSQL replica of issue 19: commit-to-value latency and
        // apply rate against a PostgreSQL 15 it starts itself, each beside
        // the same work written straight into a DBWatch pool.
        .executableTarget(
            name: "dbwatch-bench-replica",
            dependencies: [
                "BenchProcess",
                .product(name: "DBWatch", package: "DBWatch"),
                .product(name: "DBWatchPostgres", package: "DBWatch"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
