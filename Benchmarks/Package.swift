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
let package = Package(
    name: "DBWatchBenchmarks",
    traits: [
        .trait(name: "GRDB", description: "Compare with GRDB.swift 7.10.0 (--grdb)."),
        .default(enabledTraits: ["GRDB"]),
    ],
    dependencies: [
        .package(name: "DBWatch", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
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
    ],
    swiftLanguageModes: [.v6]
)
