// swift-tools-version:6.1
import PackageDescription

// The leaderboard of `dbwatch demo`, live in a browser: DBWatch's
// Hummingbird integration serving its page over the sync protocol (keyed
// changes, with `/dbwatch.js`), and the leaderboard as JSON, server-sent
// events and a WebSocket. Depends on DBWatch by path, so it builds against
// this checkout.
let package = Package(
    name: "LeaderboardServer",
    dependencies: [
        .package(name: "DBWatch", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", .upToNextMinor(from: "2.28.1")),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", .upToNextMinor(from: "2.8.1")),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", .upToNextMinor(from: "2.5.0")),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Tests only: a real HTTP client.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // The server: routes, the page and the migrations, in a library so
        // that tests start it in-process.
        .target(
            name: "LeaderboardApp",
            dependencies: [
                .product(name: "DBWatch", package: "DBWatch"),
                .product(name: "DBWatchHummingbird", package: "DBWatch"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Resources/Migrations"), .copy("Resources/index.html")]
        ),
        .executableTarget(
            name: "LeaderboardServer",
            dependencies: [
                "LeaderboardApp",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "LeaderboardAppTests",
            dependencies: [
                "LeaderboardApp",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
