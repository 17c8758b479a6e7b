import Foundation

/// Why keyed rows could not be built, or keyed changes could not be
/// applied or decoded.
///
/// A result whose declared key is not unique (a join that repeats it) is
/// ``duplicateKey(_:)``: its query is then delivered as whole values. The
/// other errors mean that changes do not fit the result they are applied
/// to, or are not valid JSON changes: a client then asks for a snapshot.
///
/// ```swift
/// do {
///     current = try current.applying(changes)
/// } catch let error as KeyedRowsError {
///     logger.debug("changes do not fit: \(error)")   // refetch a snapshot
/// }
/// ```
public struct KeyedRowsError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case duplicateKey
        case unknownKey
        case keyRepeated
        case missingRow
        case indexOutOfRange
        case indexRepeated
        case unknownKeyColumn
        case invalidJSON
    }

    private let code: Code
    /// The key concerned (canonical JSON bytes), if any.
    ///
    /// ```swift
    /// KeyedRowsError.unknownKey(Data("7".utf8)).key   // Data("7".utf8)
    /// ```
    public let key: Data?
    /// The index or byte offset concerned, if any.
    ///
    /// ```swift
    /// KeyedRowsError.indexOutOfRange(12).position   // 12
    /// ```
    public let position: Int?
    private let detail: String?

    private init(code: Code, key: Data? = nil, position: Int? = nil, detail: String? = nil) {
        self.code = code
        self.key = key
        self.position = position
        self.detail = detail
    }

    /// Two rows of one result have the same key: the key is not unique.
    ///
    /// ```swift
    /// catch let error as KeyedRowsError where error == .duplicateKey(key) { … }
    /// ```
    ///
    /// - Parameter key: The repeated key.
    public static func duplicateKey(_ key: Data) -> KeyedRowsError {
        KeyedRowsError(code: .duplicateKey, key: key)
    }

    /// A change deletes, updates in place or moves without a row a key the
    /// result does not have.
    ///
    /// ```swift
    /// catch let error as KeyedRowsError where error == .unknownKey(key) { … }
    /// ```
    ///
    /// - Parameter key: The key that is not in the result.
    public static func unknownKey(_ key: Data) -> KeyedRowsError {
        KeyedRowsError(code: .unknownKey, key: key)
    }

    /// Changes mention a key twice (two upserts, or a delete and an upsert).
    ///
    /// ```swift
    /// catch let error as KeyedRowsError where error == .keyRepeated(key) { … }
    /// ```
    ///
    /// - Parameter key: The key mentioned twice.
    public static func keyRepeated(_ key: Data) -> KeyedRowsError {
        KeyedRowsError(code: .keyRepeated, key: key)
    }

    /// An upsert without an index has no row: it changes nothing.
    ///
    /// ```swift
    /// catch let error as KeyedRowsError where error == .missingRow(key) { … }
    /// ```
    ///
    /// - Parameter key: The upsert's key.
    public static func missingRow(_ key: Data) -> KeyedRowsError {
        KeyedRowsError(code: .missingRow, key: key)
    }

    /// An upsert's index is negative, or beyond the end of the result when
    /// its row is inserted.
    ///
    /// ```swift
    /// catch let error as KeyedRowsError where error == .indexOutOfRange(12) { … }
    /// ```
    ///
    /// - Parameter index: The upsert's index.
    public static func indexOutOfRange(_ index: Int) -> KeyedRowsError {
        KeyedRowsError(code: .indexOutOfRange, position: index)
    }

    /// Two upserts have the same index.
    ///
    /// ```swift
    /// catch let error as KeyedRowsError where error == .indexRepeated(3) { … }
    /// ```
    ///
    /// - Parameter index: The index given twice.
    public static func indexRepeated(_ index: Int) -> KeyedRowsError {
        KeyedRowsError(code: .indexRepeated, position: index)
    }

    /// A key column is not a column of the rows.
    ///
    /// ```swift
    /// catch let error as KeyedRowsError where error == .unknownKeyColumn("id") { … }
    /// ```
    ///
    /// - Parameter name: The key column's name.
    public static func unknownKeyColumn(_ name: String) -> KeyedRowsError {
        KeyedRowsError(code: .unknownKeyColumn, detail: name)
    }

    /// JSON changes that ``KeyedChanges/init(json:)`` cannot read.
    ///
    /// ```swift
    /// catch let error as KeyedRowsError where error.isInvalidJSON { … }
    /// ```
    ///
    /// - Parameters:
    ///   - offset: The byte offset where reading stopped.
    ///   - reason: What was expected there.
    public static func invalidJSON(at offset: Int, _ reason: String) -> KeyedRowsError {
        KeyedRowsError(code: .invalidJSON, position: offset, detail: reason)
    }

    /// Whether the error is ``invalidJSON(at:_:)``, whatever its offset.
    ///
    /// ```swift
    /// (try? KeyedChanges(json: Data("{".utf8))) == nil   // an invalidJSON error
    /// ```
    public var isInvalidJSON: Bool { code == .invalidJSON }

    /// What went wrong, with the key as JSON text.
    public var description: String {
        let key = key.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let position = position.map(String.init) ?? ""
        switch code {
        case .duplicateKey: return "the key \(key) is not unique in the result"
        case .unknownKey: return "the key \(key) is not in the result"
        case .keyRepeated: return "the changes mention the key \(key) twice"
        case .missingRow: return "the upsert of the key \(key) has neither an index nor a row"
        case .indexOutOfRange: return "the index \(position) is out of range"
        case .indexRepeated: return "two upserts have the index \(position)"
        case .unknownKeyColumn: return "the key column \(detail ?? "") is not a column of the rows"
        case .invalidJSON: return "invalid JSON changes at byte \(position): \(detail ?? "")"
        }
    }
}
