import Foundation

/// UUIDs are stored as GRDB stores them: a 16-byte blob. Reading also
/// accepts the text form (`"E621E1F8-C36C-495A-93FC-0C247A3E6E5F"`, any
/// case), so a column filled with `uuidString` values or by
/// `Decodable` code reads too.
///
/// A query compares a blob with a blob only: `WHERE id = ?` with a `UUID`
/// argument finds no row whose `id` is text. Bind `uuid.uuidString` for a
/// text column.
///
/// ```swift
/// let id = UUID()
/// try db.execute(sql: "INSERT INTO session (id) VALUES (?)", arguments: [id])
/// let same = try db.fetchOne(UUID.self, sql: "SELECT id FROM session")   // id
/// ```
extension UUID: DatabaseValueConvertible {
    /// The 16 bytes of the UUID, as a blob.
    ///
    /// ```swift
    /// UUID(uuid: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)).databaseValue
    /// // .blob(Data([0, 1, 2, …, 15]))
    /// ```
    public var databaseValue: DatabaseValue {
        withUnsafeBytes(of: uuid) { .blob(Data($0)) }
    }

    /// A UUID from a 16-byte blob or from its text form; `nil` otherwise.
    ///
    /// ```swift
    /// UUID.fromDatabaseValue(.text("e621e1f8-c36c-495a-93fc-0c247a3e6e5f"))   // that UUID
    /// UUID.fromDatabaseValue(.blob(Data([1, 2, 3])))                          // nil: not 16 bytes
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> UUID? {
        switch value {
        case .blob(let data):
            guard data.count == 16 else { return nil }
            var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &uuid) { $0.copyBytes(from: data) }
            return UUID(uuid: uuid)
        case .text(let text):
            return UUID(uuidString: text)
        case .integer, .real, .invalidUTF8Text, .null:
            return nil
        }
    }
}
