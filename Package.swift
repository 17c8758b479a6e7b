// swift-tools-version:6.1
import PackageDescription

/// Packages resolved only with the trait `Hummingbird` (the
/// `DBWatchHummingbird` product and its tests).
let hummingbird = TargetDependencyCondition.when(traits: ["Hummingbird"])
/// Packages resolved only with the trait `ServiceLifecycle` (the
/// `DBWatchServiceLifecycle` product; Hummingbird turns it on).
let serviceLifecycle = TargetDependencyCondition.when(traits: ["ServiceLifecycle"])
/// Packages resolved only with the trait `CommandLineTool` (the `dbwatch`
/// executable).
let commandLineTool = TargetDependencyCondition.when(traits: ["CommandLineTool"])
/// Packages resolved only with the trait `Postgres` (the `DBWatchPostgres`
/// product and its tests).
let postgres = TargetDependencyCondition.when(traits: ["Postgres"])
/// Packages resolved only with the trait `Vapor` (the `DBWatchVapor`
/// product and its tests).
let vapor = TargetDependencyCondition.when(traits: ["Vapor"])
/// Packages resolved only with the trait `Client` (the `DBWatchClient`
/// product; CommandLineTool turns it on).
let client = TargetDependencyCondition.when(traits: ["Client"])
/// Packages of either server adapter's tests.
let server = TargetDependencyCondition.when(traits: ["Hummingbird", "Vapor"])

// Platforms: Linux only. DBWatch uses inotify and Glibc (and the system
// SQLite, `apt-get install libsqlite3-dev`). There is no `platforms:` entry:
// SwiftPM's `platforms:` names only Apple platforms (macOS, iOS, ...) and
// cannot say "Linux only".
let package = Package(
    name: "DBWatch",
    products: [
        .library(name: "DBWatch", targets: ["DBWatch"]),
        .executable(name: "dbwatch", targets: ["dbwatch"]),
        .library(name: "DBWatchHummingbird", targets: ["DBWatchHummingbird"]),
        .library(name: "DBWatchServiceLifecycle", targets: ["DBWatchServiceLifecycle"]),
        .library(name: "DBWatchPostgres", targets: ["DBWatchPostgres"]),
        .library(name: "DBWatchVapor", targets: ["DBWatchVapor"]),
        .library(name: "DBWatchClient", targets: ["DBWatchClient"]),
    ],
    // A user of the `DBWatch` product alone depends with `traits: []` and
    // resolves swift-log only: SwiftPM fetches no package that only a
    // disabled trait uses.
    traits: [
        .trait(
            name: "Hummingbird",
            description: "The DBWatchHummingbird product: live queries over server-sent events and WebSockets.",
            enabledTraits: ["ServiceLifecycle"]),
        .trait(
            name: "ServiceLifecycle",
            description:
                "The DBWatchServiceLifecycle product: LiveQueries and LiveQuery as swift-service-lifecycle services."),
        .trait(
            name: "Postgres",
            description: "The DBWatchPostgres product: a live SQLite replica of PostgreSQL tables."),
        // Off by default and not part of CommandLineTool: a Hummingbird or
        // library user resolves none of Vapor.
        .trait(
            name: "Vapor",
            description: "The DBWatchVapor product: live queries over server-sent events and WebSockets in a Vapor app."
        ),
        .trait(
            name: "Client",
            description: "The DBWatchClient product: a server's live queries as Swift AsyncSequences (sync protocol)."),
        .trait(
            name: "CommandLineTool",
            description: "The dbwatch executable (watch, explain, migrate, demo, serve, replicate).",
            enabledTraits: ["Hummingbird", "Postgres", "Client"]),
        .default(enabledTraits: ["CommandLineTool"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Trait CommandLineTool.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Trait CommandLineTool: `serve --auth-jwt-secret-file` verifies JWTs.
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        // Traits CommandLineTool (token digests) and Postgres (SCRAM): the
        // version jwt-kit needs (4.x), which postgres-nio also accepts.
        .package(url: "https://github.com/apple/swift-crypto", "4.1.0"..<"6.0.0"),
        // Trait Hummingbird. Issue 16 pins hummingbird 2.28.x and
        // hummingbird-websocket 2.8.x.
        .package(url: "https://github.com/hummingbird-project/hummingbird", .upToNextMinor(from: "2.28.1")),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", .upToNextMinor(from: "2.8.1")),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // Trait Hummingbird: LiveQueries behind hummingbird's own authentication.
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", .upToNextMinor(from: "2.5.0")),
        // Trait Postgres. Issue 19 pins postgres-nio 1.33.x.
        .package(url: "https://github.com/vapor/postgres-nio", .upToNextMinor(from: "1.33.2")),
        // Trait Postgres: the replication connection (already resolved
        // through postgres-nio, in the ranges it accepts).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.29.0"),
        // Traits Hummingbird, Vapor and Postgres: the integrations report
        // through swift-metrics (already resolved through hummingbird, vapor
        // and postgres-nio); the dbwatch executable alone bootstraps
        // swift-prometheus as the backend of `serve --metrics` and
        // `replicate --metrics`.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Trait Vapor: the DBWatchVapor product.
        .package(url: "https://github.com/vapor/vapor", .upToNextMinor(from: "4.122.3")),
        // Traits Client (DBWatchClient) and CommandLineTool: `watch` of a
        // served query. And the tests' real streaming HTTP client.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Documentation only: `swift package generate-documentation --target
        // DBWatch` builds Sources/DBWatch/DBWatch.docc. No target uses it, so
        // SwiftPM does not fetch it for a package that depends on DBWatch.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
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
                // `serve` and `replicate` (CommandLineTool turns on
                // Hummingbird and Postgres).
                "DBWatchDelivery",
                "DBWatchHummingbird",
                "DBWatchMetrics",
                "DBWatchPostgres",
                // `watch http://…`: the server-sent events parser.
                "DBWatchClient",
                .product(name: "Metrics", package: "swift-metrics", condition: commandLineTool),
                .product(name: "Prometheus", package: "swift-prometheus", condition: commandLineTool),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
                .product(name: "Hummingbird", package: "hummingbird", condition: hummingbird),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: hummingbird),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: commandLineTool),
                .product(name: "JWTKit", package: "jwt-kit", condition: commandLineTool),
                .product(name: "Crypto", package: "swift-crypto", condition: commandLineTool),
                // `watch http://…/queries/NAME`: a served query's stream.
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: commandLineTool),
                .product(name: "Logging", package: "swift-log"),
            ],
            // `dbwatch demo`'s schema: `Demo/Migrations` links to the
            // repository's `Migrations/`, whose files become byte arrays
            // (`PackageResources`), so the binary needs no file at run time.
            // `serve`'s page, `Serve/Page/index.html`, likewise.
            resources: [.embedInCode("Demo/Migrations"), .embedInCode("Serve/Page")]
        ),
        // The delivery engine: a value of a shared observation encoded once
        // into frames, each client's pending frame, keep-alive and stall
        // rule, shutdown. Framework-neutral: the adapters (DBWatchHummingbird,
        // DBWatchVapor) turn requests into its streams and its frames into
        // response bodies and WebSocket messages.
        .target(
            name: "DBWatchDelivery",
            dependencies: [
                "DBWatch",
                .product(name: "Logging", package: "swift-log"),
            ],
            // The JavaScript client (`node --test Tests/JavaScript`),
            // embedded to be served at `/dbwatch.js` (`LiveQueries.javaScriptClient`).
            resources: [.embedInCode("Client/dbwatch.js")]
        ),
        // `LiveQueries` and `LiveQuery` as ServiceLifecycle services (any
        // server that runs a `ServiceGroup`; Hummingbird's `Application`
        // does).
        .target(
            name: "DBWatchServiceLifecycle",
            dependencies: [
                "DBWatch",
                "DBWatchDelivery",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: serviceLifecycle),
            ]
        ),
        // The delivery engine's counters in swift-metrics, for the adapters
        // (re-exported by DBWatchHummingbird and DBWatchVapor) and
        // `dbwatch serve`. Its own target so that DBWatchDelivery keeps
        // depending on DBWatch alone.
        .target(
            name: "DBWatchMetrics",
            dependencies: [
                "DBWatchDelivery",
                .product(name: "Metrics", package: "swift-metrics", condition: server),
            ]
        ),
        .target(
            name: "DBWatchHummingbird",
            dependencies: [
                "DBWatch",
                "DBWatchDelivery",
                "DBWatchMetrics",
                "DBWatchServiceLifecycle",
                .product(name: "Hummingbird", package: "hummingbird", condition: hummingbird),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket", condition: hummingbird),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: hummingbird),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: hummingbird),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth", condition: hummingbird),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "DBWatchPostgres",
            dependencies: [
                "DBWatch",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: postgres),
                .product(name: "NIOCore", package: "swift-nio", condition: postgres),
                .product(name: "NIOPosix", package: "swift-nio", condition: postgres),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: postgres),
                .product(name: "Crypto", package: "swift-crypto", condition: postgres),
                .product(name: "Metrics", package: "swift-metrics", condition: postgres),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "DBWatchVapor",
            dependencies: [
                "DBWatch",
                "DBWatchDelivery",
                // Re-exported (its swift-metrics only with a server trait).
                .target(name: "DBWatchMetrics", condition: vapor),
                .product(name: "Vapor", package: "vapor", condition: vapor),
                .product(name: "NIOCore", package: "swift-nio", condition: vapor),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The Swift client of the sync protocol: a served query as an
        // AsyncSequence of the server's values, over one server-sent events
        // connection per client, resumed from positions after a drop.
        .target(
            name: "DBWatchClient",
            dependencies: [
                "DBWatchDelivery",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: client),
                .product(name: "NIOCore", package: "swift-nio", condition: client),
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
        // Test support shared by the test targets: timeouts, gates,
        // temporary directories, the kinds of database, CPU load, the
        // lock that keeps latency tests apart from headless-browser tests,
        // the PostgreSQL test server, and one client of each kind (raw TCP,
        // server-sent events, WebSocket).
        .target(
            name: "DBWatchTestSupport",
            dependencies: [
                "DBWatch",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: hummingbird),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket", condition: hummingbird),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: hummingbird),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/DBWatchTestSupport"
        ),
        // Test support of the server adapters' tests (Hummingbird, Vapor):
        // the test requests and schema, a running server of each adapter
        // with the same routes (`AdapterServer`; Vapor's with the trait
        // Vapor only), requests over AsyncHTTPClient, a log recorder.
        .target(
            name: "DBWatchServerTestSupport",
            dependencies: [
                "DBWatch",
                "DBWatchDelivery",
                "DBWatchHummingbird",
                "DBWatchVapor",
                "DBWatchTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "Hummingbird", package: "hummingbird", condition: hummingbird),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket", condition: hummingbird),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: hummingbird),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: hummingbird),
                .product(name: "Vapor", package: "vapor", condition: vapor),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/DBWatchServerTestSupport"
        ),
        .testTarget(
            name: "DBWatchTests",
            dependencies: [
                "DBWatch", "CSQLite", "CFaultInjection", "DBWatchTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The delivery engine's state machines, without threads or sockets.
        .testTarget(
            name: "DBWatchDeliveryTests",
            dependencies: ["DBWatch", "DBWatchDelivery", "DBWatchTestSupport"]
        ),
        // The metrics target against a recording metrics factory, and the
        // Hummingbird adapter's health routes, over real sockets.
        .testTarget(
            name: "DBWatchMetricsTests",
            dependencies: [
                "DBWatch", "DBWatchDelivery", "DBWatchMetrics", "DBWatchHummingbird", "DBWatchTestSupport",
                "DBWatchServerTestSupport",
                .product(name: "Metrics", package: "swift-metrics", condition: server),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: server),
            ]
        ),
        .testTarget(
            name: "DBWatchHummingbirdTests",
            dependencies: [
                "DBWatch",
                "DBWatchDelivery",
                "DBWatchHummingbird",
                "DBWatchTestSupport",
                "DBWatchServerTestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: hummingbird),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket", condition: hummingbird),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket", condition: hummingbird),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth", condition: hummingbird),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: hummingbird),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: hummingbird),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: hummingbird),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The behaviour every server adapter shares, one suite run against
        // each adapter of the build (`Adapter.available`: Hummingbird, and
        // Vapor with the trait Vapor).
        .testTarget(
            name: "DBWatchAdapterTests",
            dependencies: [
                "DBWatch",
                "DBWatchDelivery",
                "DBWatchTestSupport",
                "DBWatchServerTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket", condition: server),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // DBWatchClient against the Hummingbird test server, over real
        // sockets (and a proxy the tests cut).
        .testTarget(
            name: "DBWatchClientTests",
            dependencies: [
                "DBWatch",
                "DBWatchClient",
                "DBWatchDelivery",
                "DBWatchTestSupport",
                "DBWatchServerTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: client),
                .product(name: "NIOCore", package: "swift-nio", condition: client),
                .product(name: "NIOPosix", package: "swift-nio", condition: client),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "DBWatchVaporTests",
            dependencies: [
                "DBWatch",
                "DBWatchVapor",
                "DBWatchTestSupport",
                "DBWatchServerTestSupport",
                .product(name: "Vapor", package: "vapor", condition: vapor),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: vapor),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: vapor),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket", condition: vapor),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "DBWatchPostgresTests",
            dependencies: [
                "DBWatch",
                "DBWatchPostgres",
                "DBWatchTestSupport",
                // Replicas served over the sync protocol (with the trait Hummingbird).
                "DBWatchDelivery",
                "DBWatchHummingbird",
                "DBWatchServerTestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: hummingbird),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: hummingbird),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: postgres),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: postgres),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "dbwatchTests",
            dependencies: [
                "dbwatch",
                "DBWatchClient",
                "DBWatch",
                "DBWatchTestSupport",
                // Its log recorder (`serve`'s log lines, captured in-process)
                // and the sync protocol's test client.
                "DBWatchServerTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: hummingbird),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: commandLineTool),
                // The JWTs of the authentication tests are signed by the tests.
                .product(name: "JWTKit", package: "jwt-kit", condition: commandLineTool),
                .product(name: "Crypto", package: "swift-crypto", condition: commandLineTool),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
