import DBWatchDelivery
import Foundation

/// `serve`'s keyed rows: the rows of a result keyed by its key columns,
/// each row's JSON exactly as in the whole value's `rows`.
extension QueryResult {
    /// The rows keyed by the columns named `key` (``ServedQuery/key``).
    ///
    /// ```swift
    /// try result.keyedRows(key: ["id"]).rows[0].row   // [1,"Arthur",100]
    /// ```
    func keyedRows(key: [String]) throws(KeyedRowsError) -> KeyedRows {
        try KeyedRows(
            columns: columns, rows: rows.map { row in row.map { Data(JSON($0).rendered().utf8) } }, key: key)
    }
}
