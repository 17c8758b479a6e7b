import ArgumentParser

/// `--format`: how `watch` prints each value.
enum OutputFormat: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// An aligned table for people (the default on a terminal).
    case table
    /// Each value as a pretty-printed JSON object (a stream `jq` reads).
    case json
    /// Each value as a JSON object on one line (the default into a pipe or file).
    case ndjson
    /// Each value as CSV: a header line, then the rows; values are separated by an empty line.
    case csv
}
