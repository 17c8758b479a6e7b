import ArgumentParser
import DBWatchHummingbird

/// `serve`'s bounds on what clients may make it hold: parameters' types and
/// ranges, distinct observations, connections, request heads, unsent bytes.
///
/// ```sh
/// dbwatch serve app.sqlite --query top="… LIMIT :n" --param top.n=integer:1...100 --max-observations 500
/// ```
struct ServeProtections: ParsableArguments {
    @Option(
        name: .customLong("param"), parsing: .unconditionalSingleValue, help: ParameterBound.help,
        transform: ParameterBound.parse)
    var bounds: [ParameterBound] = []

    @Option(
        help: ArgumentHelp(
            "The most distinct requests (query and parameters) observed at once for streams; "
                + "a stream that would start one more is a 503 with Retry-After.", valueName: "n"))
    var maxObservations: Int = 1_000

    @Option(
        help: ArgumentHelp(
            "The most connections open at once, streams or not; the next ones wait in the kernel's queue "
                + "(default: the open-file limit less 64).", valueName: "n"))
    var maxConnections: Int?

    @Option(
        help: ArgumentHelp(
            "Close a connection that has not sent a whole request head this many seconds after connecting "
                + "(or after its previous answer).", valueName: "seconds"))
    var requestTimeout: Double = 10

    @Option(
        help: ArgumentHelp(
            "Disconnect a client whose connection takes no bytes for this many seconds (it reads nothing).",
            valueName: "seconds"))
    var stallTimeout: Double = 30

    @Option(
        help: ArgumentHelp(
            "Each connection's socket send buffer, in bytes (the kernel doubles it): what a client that "
                + "reads nothing can make the server's kernel hold; 0 keeps the system's (megabytes).",
            valueName: "bytes"))
    var sendBuffer: Int = 16_384

    func validate() throws {
        if maxObservations < 1 { throw ValidationError("--max-observations must be at least 1.") }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be at least 1.") }
        if !(requestTimeout >= 0.01 && requestTimeout <= 3600) {
            throw ValidationError("--request-timeout must be between 0.01 and 3600 seconds.")
        }
        if !(stallTimeout >= 0.01 && stallTimeout <= 3600) {
            throw ValidationError("--stall-timeout must be between 0.01 and 3600 seconds.")
        }
        if sendBuffer != 0 && !(1024...(64 << 20)).contains(sendBuffer) {
            throw ValidationError("--send-buffer must be 0 (the system's) or between 1024 and 67108864 bytes.")
        }
        var seen = Set<String>()
        for bound in bounds where !seen.insert("\(bound.query).\(bound.parameter)").inserted {
            throw ValidationError("--param \(bound.query).\(bound.parameter) is given twice.")
        }
    }

    /// Checks that each `--param` names a query of `queries`.
    func validate(queries: [ServedQuery]) throws {
        let names = Set(queries.map(\.name))
        for bound in bounds where !names.contains(bound.query) {
            throw ValidationError(
                "--param \(bound.query).\(bound.parameter): there is no --query \(bound.query).")
        }
    }

    /// `queries` with their `--param` bounds.
    func applied(to queries: [ServedQuery]) -> [ServedQuery] {
        queries.map { query in
            var query = query
            for bound in bounds where bound.query == query.name { query.bounds[bound.parameter] = bound }
            return query
        }
    }

    /// `configuration` with the cap on observations and the stall timeout.
    func applied(to configuration: LiveQueriesConfiguration) -> LiveQueriesConfiguration {
        var configuration = configuration
        configuration.maxObservations = maxObservations
        configuration.stalledClientTimeout = .seconds(stallTimeout)
        return configuration
    }

    /// The connections' limits.
    var connections: ServeConnections {
        var connections = ServeConnections()
        if let maxConnections { connections.maxConnections = maxConnections }
        connections.limits.requestHeadTimeout = .seconds(requestTimeout)
        connections.limits.unsentDataTimeout = .seconds(stallTimeout)
        connections.limits.sendBufferSize = sendBuffer == 0 ? nil : sendBuffer
        return connections
    }
}
