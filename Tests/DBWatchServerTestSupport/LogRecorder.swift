import DBWatchTestSupport
import Logging
import DBWatch

/// One recorded log message, with the logger's metadata merged in.
public struct LogEntry: Sendable {
    public var label: String
    public var level: Logger.Level
    public var message: String
    public var metadata: [String: String]
}

/// Keeps every message of the loggers it makes.
public final class LogRecorder: Sendable {
    private let entries = Protected<[LogEntry]>([])

    public init() {}

    public var all: [LogEntry] { entries.withLock { $0 } }

    /// A logger at `level` whose messages are recorded here.
    public func logger(label: String, level: Logger.Level = .debug) -> Logger {
        var logger = Logger(label: label) { label in RecordingLogHandler(recorder: self, label: label) }
        logger.logLevel = level
        return logger
    }

    fileprivate func append(_ entry: LogEntry) {
        entries.withLock { $0.append(entry) }
    }
}

private struct RecordingLogHandler: LogHandler {
    let recorder: LogRecorder
    let label: String
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        merged.merge(event.metadata ?? [:]) { $1 }
        recorder.append(
            LogEntry(
                label: label, level: event.level, message: "\(event.message)",
                metadata: merged.mapValues { "\($0)" }))
    }
}
