import Foundation

/// A value that writes its own JSON, for values whose JSON `Encodable`
/// cannot express exactly (numbers kept as written, keys in a given order):
/// ``LiveQueries`` serves a request whose `Value` conforms with the same
/// one-shot answers and server-sent events as an `Encodable` one.
///
/// ```swift
/// struct Rows: JSONEncodedValue, Hashable {
///     var json: String
///     func encodedJSON() throws -> Data { Data(json.utf8) }
/// }
/// router.get("rows") { _, context in await live.current(RowsQuery(), context: context) }
/// ```
public protocol JSONEncodedValue: Sendable {
    /// The value as one JSON value, UTF-8. Equal values must give equal
    /// bytes: a resuming client's `Last-Event-ID` and the skipping of an
    /// unchanged value compare them.
    ///
    /// ```swift
    /// try value.encodedJSON()   // {"columns":["n"],"rows":[[1]]}
    /// ```
    func encodedJSON() throws -> Data
}
