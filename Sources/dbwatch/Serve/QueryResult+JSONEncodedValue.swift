import DBWatchHummingbird
import Foundation

/// `serve` writes a value as `watch --format json` does: `{"columns", "rows"}`.
extension QueryResult: JSONEncodedValue {
    /// The value's JSON, one line.
    func encodedJSON() throws -> Data {
        Data(json.rendered().utf8)
    }
}
