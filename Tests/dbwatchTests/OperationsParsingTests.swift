import ArgumentParser
import Testing

@testable import dbwatch

/// `serve --metrics` and `replicate --metrics ADDRESS --ready-max-lag`, in process.
@Suite("dbwatch serve and replicate: operations options")
struct OperationsParsingTests {
    static let url = "postgres://u@h/db"

    @Test func anAddressIsAPortWithAnOptionalHost() throws {
        #expect(try OperationsAddress.parse("9187") == OperationsAddress(host: "127.0.0.1", port: 9187))
        #expect(try OperationsAddress.parse("0.0.0.0:9187") == OperationsAddress(host: "0.0.0.0", port: 9187))
        #expect(try OperationsAddress.parse("[::1]:0") == OperationsAddress(host: "::1", port: 0))
    }

    @Test(arguments: ["", "host", ":9187", "127.0.0.1:", "127.0.0.1:70000", "127.0.0.1:-1", "127.0.0.1:http"])
    func badAddressesAreUsageErrors(address: String) {
        #expect(throws: ValidationError.self) { _ = try OperationsAddress.parse(address) }
        #expect(throws: (any Error).self) {
            _ = try DBWatchCommand.parseAsRoot([
                "replicate", Self.url, "r.sqlite", "--table", "t", "--metrics", address,
            ])
        }
    }

    @Test func replicateTakesMetricsAndAMaximumLag() throws {
        let command = try #require(
            try DBWatchCommand.parseAsRoot([
                "replicate", Self.url, "r.sqlite", "--table", "t", "--metrics", "9187", "--ready-max-lag", "2.5",
            ]) as? ReplicateCommand)
        #expect(command.metrics == "9187")
        #expect(command.readyMaxLag == 2.5)
        let defaults = try #require(
            try DBWatchCommand.parseAsRoot(["replicate", Self.url, "r.sqlite", "--table", "t"]) as? ReplicateCommand)
        #expect(defaults.metrics == nil && defaults.readyMaxLag == 10)
        #expect(throws: (any Error).self) {
            _ = try DBWatchCommand.parseAsRoot([
                "replicate", Self.url, "r.sqlite", "--table", "t", "--ready-max-lag", "-1",
            ])
        }
    }

    @Test func serveMetricsIsAFlag() throws {
        let on = try #require(
            try DBWatchCommand.parseAsRoot(["serve", "db.sqlite", "--query", "a=SELECT 1", "--metrics"])
                as? ServeCommand)
        #expect(on.metrics)
        let off = try #require(
            try DBWatchCommand.parseAsRoot(["serve", "db.sqlite", "--query", "a=SELECT 1"]) as? ServeCommand)
        #expect(!off.metrics)
    }
}
