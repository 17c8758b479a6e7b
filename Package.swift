// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "DBWatch",
    products: [
        .library(name: "DBWatch", targets: ["DBWatch"]),
        .executable(name: "dbwatch", targets: ["dbwatch"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // DBWatch's VFS, which bounds the temporary files of untrusted SQL.
        .target(
            name: "CDBWatchVFS",
            dependencies: ["CSQLite"]
        ),
        .target(
            name: "DBWatch",
            dependencies: [
                "CSQLite",
                "CDBWatchVFS",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "dbwatch",
            dependencies: [
                "DBWatch",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Test support: a SQLite VFS whose writes fail on demand (disk full,
        // I/O errors). Not part of any product.
        .target(
            name: "CFaultInjection",
            dependencies: ["CSQLite"],
            path: "Tests/CFaultInjection"
        ),
        .testTarget(
            name: "DBWatchTests",
            dependencies: [
                "DBWatch", "CSQLite", "CFaultInjection",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "dbwatchTests",
            dependencies: [
                "dbwatch",
                "DBWatch",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
