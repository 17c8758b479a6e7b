import CSQLite

/// A SQL file split into its statements, each with the line it starts on.
///
/// A statement ends at the first `;` after which `sqlite3_complete` calls
/// the text complete, so semicolons inside string literals, quoted names,
/// comments and `CREATE TRIGGER … BEGIN …; END;` bodies do not split it.
/// Whitespace, comments and empty statements (`;;`) between statements are
/// skipped; text after the last `;` that is more than whitespace and
/// comments is a last statement (SQLite reports it if it is incomplete).
///
/// ```swift
/// let script = SQLScript("""
///     CREATE TABLE note (text TEXT); -- one
///     INSERT INTO note VALUES ('a;b');
///     """)
/// script.statements.map(\.line)   // [1, 2]
/// ```
struct SQLScript {
    /// One statement of a script.
    struct Statement: Equatable, Sendable {
        /// The statement, from its first token through its `;` (if any).
        var sql: String
        /// The 1-based line of the file on which the statement starts.
        var line: Int
    }

    /// The statements, in file order.
    let statements: [Statement]

    /// Splits `text`.
    ///
    /// ```swift
    /// SQLScript("-- nothing here\n").statements   // []
    /// ```
    init(_ text: String) {
        let bytes = Array(text.utf8)
        var statements: [Statement] = []
        var line = 1
        var lineCountedUpTo = 0
        func lineAt(_ offset: Int) -> Int {
            for index in lineCountedUpTo..<offset where bytes[index] == UInt8(ascii: "\n") { line += 1 }
            lineCountedUpTo = offset
            return line
        }
        var start = SQLScript.skipBlank(bytes, from: 0)
        var index = start
        var candidate: [CChar] = []
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: ";") {
                candidate.removeAll(keepingCapacity: true)
                for byte in bytes[start...index] { candidate.append(CChar(bitPattern: byte)) }
                candidate.append(0)
                if sqlite3_complete(candidate) != 0 {
                    let sql = String(decoding: bytes[start...index], as: UTF8.self)
                    statements.append(Statement(sql: sql, line: lineAt(start)))
                    start = SQLScript.skipBlank(bytes, from: index + 1)
                    index = start
                    continue
                }
            }
            index += 1
        }
        if start < bytes.count {
            let sql = String(decoding: bytes[start...], as: UTF8.self)
            statements.append(Statement(sql: sql, line: lineAt(start)))
        }
        self.statements = statements
    }

    /// The offset of the first byte at or after `offset` that is not
    /// whitespace, a comment or a `;`.
    static func skipBlank(_ bytes: [UInt8], from offset: Int) -> Int {
        var index = offset
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0B, 0x0C,
                UInt8(ascii: ";"):
                index += 1
            case UInt8(ascii: "-") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "-"):
                while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "*"):
                index += 2
                while index < bytes.count
                    && !(bytes[index] == UInt8(ascii: "*") && index + 1 < bytes.count
                        && bytes[index + 1] == UInt8(ascii: "/"))
                {
                    index += 1
                }
                index = min(index + 2, bytes.count)
            default:
                return index
            }
        }
        return index
    }
}

extension SQLScript.Statement {
    /// Whether the statement would end or open a transaction: `BEGIN`,
    /// `COMMIT`, `END` or `ROLLBACK` (but not `ROLLBACK TO` a savepoint).
    ///
    /// A migration runs inside the migrator's own transaction, so these would
    /// break its all-or-nothing guarantee.
    ///
    /// ```swift
    /// SQLScript.Statement(sql: "COMMIT;", line: 1).isTransactionControl   // true
    /// ```
    var isTransactionControl: Bool {
        let words = leadingWords(3)
        guard let first = words.first else { return false }
        switch first {
        case "BEGIN", "COMMIT", "END":
            return true
        case "ROLLBACK":
            // ROLLBACK [TRANSACTION] TO [SAVEPOINT] name only undoes a savepoint.
            let rest = words.dropFirst().drop { $0 == "TRANSACTION" }
            return rest.first != "TO"
        default:
            return false
        }
    }

    /// The first `count` words of the statement, uppercased, skipping
    /// comments between them.
    private func leadingWords(_ count: Int) -> [String] {
        let bytes = Array(sql.utf8)
        var words: [String] = []
        var index = 0
        while words.count < count {
            index = SQLScript.skipBlank(bytes, from: index)
            var end = index
            while end < bytes.count, Self.isWordByte(bytes[end]) { end += 1 }
            guard end > index else { break }
            words.append(String(decoding: bytes[index..<end], as: UTF8.self).uppercased())
            index = end
        }
        return words
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
    }
}
