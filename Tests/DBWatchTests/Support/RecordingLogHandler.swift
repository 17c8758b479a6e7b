import DBWatchTestSupport
import Logging

@testable import DBWatch

/// A swift-log handler that keeps what is logged, for tests that check
/// what DBWatch logs (never bootstrapped: pass `logger` in a `Configuration`).
final class LogRecorder: Sendable {
    struct Entry: Sendable {
        let level: Logger.Level
        let message: String
    }

    private let state = Protected<[Entry]>([])

    var entries: [Entry] { state.withLock { $0 } }

    /// The messages logged at `level`.
    func messages(at level: Logger.Level) -> [String] {
        entries.filter { $0.level == level }.map(\.message)
    }

    /// A logger that records here, at `level` and above.
    func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "dbwatch.test") { _ in Handler(recorder: self) }
        logger.logLevel = level
        return logger
    }

    fileprivate func append(_ entry: Entry) {
        state.withLock { $0.append(entry) }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            recorder.append(Entry(level: event.level, message: "\(event.message)"))
        }
    }
}
