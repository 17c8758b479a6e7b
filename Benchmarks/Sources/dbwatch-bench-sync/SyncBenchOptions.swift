import Foundation

/// The command line of `dbwatch-bench-sync`.
struct SyncBenchOptions {
    var runs = 3
    var only: Set<String> = ["cpu", "latency", "resume", "storm"]
    var server = ""
    var clients = 1_000
    var rows = 1_000
    var commits = 200
    var queries = [1, 100, 1_000, 10_000]
    var perConnection = [1, 100]
    var queryShape = LatencyWorkload.QueryShape.key
    var latencyCommits = 300
    var latencyIntervalMilliseconds = 10
    var resumeRows = 10_000
    var resumeCommits = 600
    var resumeRate = 10.0
    var stormQueries = 1_000
    var stormRate = 200.0
    var stormSeconds = 5.0

    static let usage = """
        usage: dbwatch-bench-sync [--runs N] [--only cpu,latency,resume] [--server PATH]
                                  [--clients N] [--rows N] [--commits N]
                                  [--queries 1,100,1000,10000] [--per-connection 1,100] [--query-shape key|slot]
                                  [--latency-commits N]
                                  [--latency-interval-ms N]
                                  [--resume-rows N] [--resume-commits N] [--resume-rate N]
                                  [--storm-queries N] [--storm-rate N] [--storm-seconds N]

          --runs N            each workload N times; ratios within each run, then median [min – max]
          --only L            cpu (server CPU per commit, sync against whole values), latency (commit to
                              client against the number of live queries), resume (after an absence),
                              storm (batches while commits do not wait for the clients)
          --server P          the dbwatch-bench-sync-server executable (default: next to this one)
          --clients N         cpu: clients of the one leaderboard (1,000)
          --rows N            cpu: rows of the leaderboard (1,000)
          --commits N         cpu: measured commits, each awaited at every client (200)
          --queries L         latency: numbers of distinct live queries (1,100,1000,10000)
          --per-connection L  latency: subscriptions per sync connection, one table each (1,100; 100 is
                              the server's default limit)
          --query-shape S     latency: key (`WHERE id = ?`, a region of one row; default) or slot
                              (`WHERE slot = ?`, an indexed column that is not the key: a region of the
                              whole table, so every commit refetches every query)
          --latency-commits N latency: measured commits per number of queries (300)
          --latency-interval-ms N  latency: one commit every N ms at most (10)
          --resume-rows N     resume: rows of the leaderboard (10,000)
          --resume-commits N  resume: commits while the client is away (600)
          --resume-rate N     resume: commits per second meanwhile (10: a minute)
          --storm-queries N   storm: live queries, by key and by slot (1,000)
          --storm-rate N      storm: commits per second, not waiting for the clients (200)
          --storm-seconds N   storm: for this long (5)

        Starts dbwatch-bench-sync-server processes on 127.0.0.1 (a new one per measurement), drives
        them, stops each by its PID. Every loop is bounded in count and time.
        """

    init(arguments: [String]) throws {
        server =
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("dbwatch-bench-sync-server").path
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument == "-h" || argument == "--help" {
                print(Self.usage)
                exit(0)
            }
            guard let value = iterator.next() else { throw SyncBenchError(description: "\(argument) needs a value") }
            func number() throws -> Int {
                guard let number = Int(value), number > 0 else {
                    throw SyncBenchError(description: "\(argument) needs a positive number")
                }
                return number
            }
            switch argument {
            case "--runs": runs = try number()
            case "--only": only = Set(value.split(separator: ",").map(String.init))
            case "--server": server = value
            case "--clients": clients = try number()
            case "--rows": rows = try number()
            case "--commits": commits = try number()
            case "--queries": queries = value.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
            case "--per-connection":
                perConnection = value.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
            case "--query-shape":
                guard let shape = LatencyWorkload.QueryShape(rawValue: value) else {
                    throw SyncBenchError(description: "--query-shape is key or slot")
                }
                queryShape = shape
            case "--latency-commits": latencyCommits = try number()
            case "--latency-interval-ms": latencyIntervalMilliseconds = try number()
            case "--resume-rows": resumeRows = try number()
            case "--resume-commits": resumeCommits = try number()
            case "--storm-queries": stormQueries = try number()
            case "--storm-rate", "--storm-seconds":
                guard let number = Double(value), number > 0 else {
                    throw SyncBenchError(description: "\(argument) needs a positive number")
                }
                if argument == "--storm-rate" { stormRate = number } else { stormSeconds = number }
            case "--resume-rate":
                guard let rate = Double(value), rate > 0 else {
                    throw SyncBenchError(description: "--resume-rate needs a positive number")
                }
                resumeRate = rate
            default: throw SyncBenchError(description: "unknown option \(argument)\n\(Self.usage)")
            }
        }
        if queries.isEmpty { throw SyncBenchError(description: "--queries needs positive numbers") }
        if perConnection.isEmpty { throw SyncBenchError(description: "--per-connection needs positive numbers") }
    }
}
