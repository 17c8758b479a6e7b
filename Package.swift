// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "DBWatch",
    products: [
        .library(name: "DBWatch", targets: ["DBWatch"]),
        .executable(name: "dbwatch", targets: ["dbwatch"]),
        .library(name: "DBWatchHummingbird", targets: ["DBWatchHummingbird"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // DBWatchHummingbird only: a user of DBWatch alone builds none of these
        // (but still resolves them: package traits could spare that, later).
        // Issue 16 pins hummingbird 2.28.x and hummingbird-websocket 2.8.x.
        .package(url: "https://github.com/hummingbird-project/hummingbird", .upToNextMinor(from: "2.28.1")),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", .upToNextMinor(from: "2.8.1")),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // Tests of DBWatchHummingbird only: a real streaming HTTP client.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
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
                // `serve`: a package trait may gate it later.
                "DBWatchHummingbird",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "DBWatchHummingbird",
            dependencies: [
                "DBWatch",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
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
            name: "DBWatchHummingbirdTests",
            dependencies: [
                "DBWatch",
                "DBWatchHummingbird",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "dbwatchTests",
            dependencies: [
                "dbwatch",
                "DBWatch",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // The page tests drive headless Chromium over its DevTools WebSocket.
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
