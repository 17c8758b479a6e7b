/// One schema migration: a number, a name and the SQL to run.
///
/// Migrations usually come from files named `NNNN_description.sql` (see
/// ``Migrator/init(directory:)``); a binary can also carry them in code:
///
/// ```swift
/// let migrator = try Migrator(migrations: [
///     Migration(number: 1, name: "create_player", sql: """
///         CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL);
///         """),
///     Migration(number: 2, name: "add_player_team", sql: "ALTER TABLE player ADD COLUMN team TEXT;"),
/// ])
/// ```
public struct Migration: Hashable, Sendable, CustomStringConvertible {
    /// The position in the sequence, from 1.
    ///
    /// ```swift
    /// try Migrator(directory: "Migrations").migrations.map(\.number)   // [1, 2, 3, 4]
    /// ```
    public let number: Int
    /// The description part of the file name.
    ///
    /// ```swift
    /// migration.name   // "create_player" for 0001_create_player.sql
    /// ```
    public let name: String
    /// The SQL text: any number of statements, comments included.
    ///
    /// ```swift
    /// Migration(number: 1, name: "create_note", sql: "CREATE TABLE note (text TEXT);").sql
    /// ```
    public let sql: String
    /// The file name: the real one for a migration read from a directory,
    /// otherwise `NNNN_name.sql` with the number padded to four digits.
    ///
    /// ```swift
    /// Migration(number: 7, name: "add_trophy", sql: "").fileName   // "0007_add_trophy.sql"
    /// ```
    public let fileName: String
    /// The SHA-256 of the SQL's UTF-8 bytes (for a file: of the file's bytes),
    /// as 64 lowercase hexadecimal digits. A migration read from a file and
    /// the same text given in code have the same checksum.
    ///
    /// ```swift
    /// Migration(number: 1, name: "empty", sql: "").checksum   // "e3b0c442…7852b855"
    /// ```
    public let checksum: String

    /// Creates a migration carried in code.
    ///
    /// The number and name are checked by ``Migrator/init(migrations:)``.
    ///
    /// ```swift
    /// let migration = Migration(number: 1, name: "create_player", sql: "CREATE TABLE player (id INTEGER);")
    /// migration.fileName   // "0001_create_player.sql"
    /// ```
    ///
    /// - Parameters:
    ///   - number: the position in the sequence, from 1, without gaps.
    ///   - name: a description made of letters, digits, `_` and `-`.
    ///   - sql: the statements to run.
    public init(number: Int, name: String, sql: String) {
        self.init(number: number, name: name, sql: sql, fileName: Migration.fileName(number: number, name: name))
    }

    /// A migration read from the file `fileName`.
    init(number: Int, name: String, sql: String, fileName: String) {
        self.number = number
        self.name = name
        self.sql = sql
        self.fileName = fileName
        self.checksum = SHA256.hexDigest(of: Array(sql.utf8))
    }

    /// The file name.
    ///
    /// ```swift
    /// "\(migration)"   // "0001_create_player.sql"
    /// ```
    public var description: String { fileName }

    /// `NNNN_name.sql`, the number padded with zeros to four digits.
    static func fileName(number: Int, name: String) -> String {
        "\(paddedNumber(number))_\(name).sql"
    }

    /// The number padded with zeros to four digits: `0007`.
    static func paddedNumber(_ number: Int) -> String {
        let digits = String(number)
        return number >= 0 ? String(repeating: "0", count: max(0, 4 - digits.count)) + digits : digits
    }

    /// Splits a file name of the form `NNNN_description.sql` (at least four
    /// digits, a number of at least 1, a non-empty description of letters,
    /// digits, `_` and `-`). Returns `nil` when it does not match.
    ///
    /// ```swift
    /// Migration.parseFileName("0002_add_team.sql")   // (2, "add_team")
    /// ```
    static func parseFileName(_ fileName: String) -> (number: Int, name: String)? {
        guard fileName.hasSuffix(".sql") else { return nil }
        let stem = fileName.utf8.dropLast(4)
        guard let separator = stem.firstIndex(of: UInt8(ascii: "_")) else { return nil }
        let digits = stem[..<separator]
        let name = stem[stem.index(after: separator)...]
        guard digits.count >= 4, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let number = Int(String(decoding: digits, as: UTF8.self)), number >= 1,
            !name.isEmpty, name.allSatisfy(isNameByte)
        else { return nil }
        return (number, String(decoding: name, as: UTF8.self))
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "-")
    }
}
