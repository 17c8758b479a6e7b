import Foundation

/// One row of a ``KeyedRows`` result: its key and its JSON, both as UTF-8
/// JSON bytes that ``KeyedChanges`` compares byte for byte.
///
/// ```swift
/// let row = KeyedRow(key: Data("7".utf8), row: Data(#"{"id":7,"name":"Arthur","score":100}"#.utf8))
/// ```
public struct KeyedRow: Sendable, Hashable {
    /// The key as canonical JSON: a scalar (`7`, `"ab"`), or an array for
    /// a composite key (`[3,"x"]`). Equal keys must have equal bytes.
    public var key: Data
    /// The row as JSON, opaque to the engine: two rows are the same row
    /// when their bytes are equal.
    public var row: Data

    /// A row with its key.
    ///
    /// - Parameters:
    ///   - key: The key's canonical JSON bytes.
    ///   - row: The row's JSON bytes.
    public init(key: Data, row: Data) {
        self.key = key
        self.row = row
    }
}
