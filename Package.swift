// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "DBWatch",
    products: [
        .library(name: "DBWatch", targets: ["DBWatch"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2")
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(
            name: "DBWatch",
            dependencies: [
                "CSQLite",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "DBWatchTests",
            dependencies: ["DBWatch"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
