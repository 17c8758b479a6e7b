import ArgumentParser
import Logging

/// `--log-level trace|debug|info|notice|warning|error|critical`: swift-log's
/// level names (its raw values).
extension Logger.Level: @retroactive ExpressibleByArgument {}
