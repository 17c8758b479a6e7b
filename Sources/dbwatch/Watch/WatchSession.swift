import DBWatch
import Foundation

/// Runs the observations of `watch` and prints their values until the
/// count is reached, every query printed once (`--once`), Ctrl-C, or a
/// fatal error.
///
/// An error in a query's first fetch (bad SQL, a refused statement, a time
/// limit) ends the session; a later error (a table dropped meanwhile) is
/// reported on standard error and the query keeps being watched, so it
/// recovers when the schema does. A replaced or deleted database file always
/// ends it.
///
/// ```swift
/// var session = WatchSession(printer: printer, queryCount: 1, limit: 3, once: false)
/// try await session.run([query], on: pool, interrupt: InterruptSignal())
/// ```
struct WatchSession {
    /// Formats the values.
    var printer: WatchPrinter
    /// The number of watched queries.
    let queryCount: Int
    /// `--count`: stop after this many values.
    let limit: Int?
    /// `--once`: stop when every query printed a value.
    let once: Bool
    /// Whether a live screen was drawn (the caller leaves it cleanly).
    private(set) var printedLiveScreen = false
    /// The query whose error ended the session, from 0.
    private(set) var failedQuery: Int?
    /// The SQL of that query.
    private(set) var failedSQL: String?

    /// What the watch loop waits for.
    enum Event: Sendable {
        /// A new value or an error of query `index`.
        case result(Int, Result<QueryResult, any Error>)
        /// Ctrl-C, `SIGTERM` or `SIGHUP`.
        case interrupted
        /// A served query cannot be read (see ``ServedQueryReader``).
        case failed(any Error)
    }

    /// Watches `queries` on `pool` and prints; returns normally at the end
    /// or on Ctrl-C (`interrupt`), throws the error that ended the session.
    mutating func run(_ queries: [WatchedQuery], on pool: DatabasePool, interrupt: InterruptSignal) async throws {
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, query) in queries.enumerated() {
                group.addTask {
                    for await result in pool.observe(query).results {
                        continuation.yield(.result(index, result))
                    }
                }
            }
            group.addTask {
                if await interrupt.wait() != nil { continuation.yield(.interrupted) }
            }
            defer { group.cancelAll() }
            try await consume(events, sql: queries.map(\.sql))
        }
    }

    /// Watches the served query `reader` reads (its current value only with
    /// `--once`) and prints, as ``run(_:on:interrupt:)`` does for local
    /// queries; a lost connection is reopened (said on standard error).
    mutating func run(served reader: ServedQueryReader, keyNames: [String]?, interrupt: InterruptSignal) async throws {
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        let once = self.once
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    if once {
                        continuation.yield(.result(0, .success(try await reader.current(keyNames: keyNames))))
                    } else {
                        try await reader.follow(
                            keyNames: keyNames, onResult: { continuation.yield(.result(0, $0)) },
                            onNotice: { Output.standardError($0 + "\n") })
                    }
                } catch is CancellationError {
                } catch {
                    continuation.yield(.failed(error))
                }
            }
            group.addTask {
                if await interrupt.wait() != nil { continuation.yield(.interrupted) }
            }
            defer { group.cancelAll() }
            try await consume(events, sql: [nil])
        }
    }

    /// Prints the values of `events` until the session ends; `sql` is each
    /// query's SQL (`nil` for a served one) for error reports.
    private mutating func consume(_ events: AsyncStream<Event>, sql: [String?]) async throws {
        var printed = Array(repeating: false, count: queryCount)
        for await event in events {
            switch event {
            case .interrupted:
                return
            case .failed(let error):
                throw error
            case .result(let index, .success(let value)):
                let text = printer.text(for: value, query: index, at: Date())
                Output.standardOutput(text)
                if printer.redrawsInPlace { printedLiveScreen = true }
                printed[index] = true
                if once && printed.allSatisfy({ $0 }) { return }
                if let limit, printer.sequence >= limit { return }
            case .result(let index, .failure(let error)):
                if !printed[index] || error is DatabaseFileReplacedError {
                    failedQuery = queryCount > 1 ? index : nil
                    failedSQL = sql[index]
                    throw error
                }
                let context = queryCount > 1 ? "query \(index + 1)" : "query"
                Output.standardError(
                    ErrorReport.text(for: error, context: context, sql: sql[index], readOnlyCommand: true)
                        + "\n"
                        + "dbwatch: still watching; the next change refetches.\n")
            }
        }
    }
}
