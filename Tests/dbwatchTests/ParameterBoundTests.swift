import ArgumentParser
import DBWatch
import DBWatchHummingbird
import Testing

@testable import dbwatch

/// `serve --param QUERY.NAME=TYPE[:RANGE]`, in process.
@Suite("dbwatch serve: parameter types and ranges")
struct ParameterBoundTests {
    @Test func boundsParseTypesAndRanges() throws {
        let integer = try ParameterBound.parse("top.n=integer:1...100")
        #expect(integer.query == "top" && integer.parameter == "n")
        #expect(integer.kind == .integer(min: 1, max: 100))
        #expect(try ParameterBound.parse("top.n=integer:0...").kind == .integer(min: 0, max: .max))
        #expect(try ParameterBound.parse("top.n=integer:...-1").kind == .integer(min: .min, max: -1))
        #expect(try ParameterBound.parse("top.n=integer").kind == .integer(min: .min, max: .max))
        #expect(try ParameterBound.parse("geo.lat=real:-90...90").kind == .real(min: -90, max: 90))
        #expect(try ParameterBound.parse("find.name=text:64").kind == .text(maxLength: 64))
        #expect(try ParameterBound.parse("find.name=text").kind == .text(maxLength: nil))
        #expect(integer.description == "integer:1...100")
        #expect(try ParameterBound.parse("top.n=integer:0...").description == "integer:0...")
    }

    @Test(arguments: [
        "top=integer", "n=integer", ".n=integer", "top.=integer", "top.n=", "top.n=number", "top.n=integer:1..100",
        "top.n=integer:a...b", "top.n=integer:...", "top.n=integer:5...1", "top.n=real:1...x", "top.n=text:-1",
        "top.n=text:abc",
    ])
    func badBoundsAreUsageErrors(argument: String) {
        #expect(throws: ValidationError.self) { _ = try ParameterBound.parse(argument) }
    }

    @Test func valuesOutsideTheBoundAreBadRequestsNamingTheParameter() throws {
        let integer = try ParameterBound.parse("top.n=integer:1...100")
        #expect(try integer.value(from: "1") == .integer(1))
        #expect(try integer.value(from: "100") == .integer(100))
        for bad in ["-1", "0", "101", "abc", "1.5", "", "99999999999999999999"] {
            let error = #expect(throws: LiveQueriesError.self, "\(bad)") { _ = try integer.value(from: bad) }
            #expect(error?.message.contains("parameter n") == true, "\(bad)")
        }
        let real = try ParameterBound.parse("geo.lat=real:-90...90")
        #expect(try real.value(from: "45") == .real(45))
        #expect(try real.value(from: "-90.0") == .real(-90))
        for bad in ["90.5", "nan", "inf", "x", "1e999"] {
            #expect(throws: LiveQueriesError.self, "\(bad)") { _ = try real.value(from: bad) }
        }
        let text = try ParameterBound.parse("find.name=text:4")
        #expect(try text.value(from: "abcd") == .text("abcd"))
        #expect(try text.value(from: "007") == .text("007"))
        #expect(try text.value(from: "NULL") == .text("NULL"))
        #expect(throws: LiveQueriesError.self) { _ = try text.value(from: "abcde") }
    }

    @Test func aQueryTakesItsBoundsInsteadOfTheArgTyping() throws {
        var query = try ServedQuery.parse("top=SELECT :n, :name")
        query.parameters = [":n", ":name"]
        query.bounds = [
            "n": try ParameterBound.parse("top.n=integer:1...10"),
            "name": try ParameterBound.parse("top.name=text:8"),
        ]
        let limits = try QueryLimits.parse([])
        let request = try query.request(
            queryString: [(key: "n", value: "3"), (key: "name", value: "42")], limits: limits)
        #expect(request.arguments.namedValues == ["n": .integer(3), "name": .text("42")])
        #expect(throws: LiveQueriesError.self) {
            _ = try query.request(queryString: [(key: "n", value: "-1"), (key: "name", value: "a")], limits: limits)
        }
        // The run at start binds a value inside the bound.
        #expect(query.startRequest(limits: limits).arguments.namedValues == ["n": .integer(1), "name": .text("")])
    }

    @Test func serveTakesItsProtections() throws {
        let command = try DBWatchCommand.parseAsRoot([
            "serve", "db.sqlite", "--query", "top=SELECT :n", "--param", "top.n=integer:1...100", "--max-observations",
            "5", "--max-connections", "50", "--request-timeout", "2", "--stall-timeout", "3", "--send-buffer", "8192",
        ])
        let serve = try #require(command as? ServeCommand)
        #expect(serve.protections.bounds.map(\.parameter) == ["n"])
        #expect(serve.protections.maxObservations == 5)
        let connections = serve.protections.connections
        #expect(connections.maxConnections == 50)
        #expect(connections.limits.requestHeadTimeout == .seconds(2))
        #expect(connections.limits.unsentDataTimeout == .seconds(3))
        #expect(connections.limits.sendBufferSize == 8192)
        #expect(serve.protections.applied(to: LiveQueriesConfiguration()).stalledClientTimeout == .seconds(3))
        let defaults = try #require(
            try DBWatchCommand.parseAsRoot(["serve", "db.sqlite", "--query", "a=SELECT 1"]) as? ServeCommand)
        #expect(defaults.protections.maxObservations == 1_000)
        #expect(defaults.protections.connections.maxConnections == ServeConnections.defaultMaxConnections)
    }

    @Test(arguments: [
        ["--param", "other.n=integer"],
        ["--param", "top.n=integer", "--param", "top.n=integer:1...2"],
        ["--max-observations", "0"],
        ["--max-connections", "0"],
        ["--request-timeout", "0"],
        ["--stall-timeout", "0"],
        ["--send-buffer", "10"],
    ])
    func badProtectionsAreUsageErrors(arguments: [String]) {
        #expect(throws: (any Error).self) {
            _ = try DBWatchCommand.parseAsRoot(["serve", "db.sqlite", "--query", "top=SELECT :n"] + arguments)
        }
    }
}
