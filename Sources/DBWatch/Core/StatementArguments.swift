import CSQLite

/// Values bound to a statement's parameters: positional (`?`, `?NNN`) or
/// named (`:name`, `@name`, `$name`).
///
/// ```swift
/// try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: ["Arthur", 100])
/// try db.execute(sql: "UPDATE player SET score = :score WHERE name = :name",
///                arguments: [":score": 200, ":name": "Arthur"])
/// ```
///
/// A named key may be written with its prefix (`":name"`, `"@name"`,
/// `"$name"`) or without it (`"name"` matches any of the three). A wrong
/// number of positional values, a parameter with no value and a key that no
/// parameter uses are all errors (``ResultCode/misuse``), never a silent `NULL`.
public struct StatementArguments: Sendable, Hashable, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    /// Positional values, bound in order.
    ///
    /// ```swift
    /// StatementArguments([1, "Arthur", nil]).values   // [.integer(1), .text("Arthur"), .null]
    /// ```
    public var values: [DatabaseValue]
    /// Named values by key.
    ///
    /// ```swift
    /// StatementArguments(["name": "Arthur"]).namedValues   // ["name": .text("Arthur")]
    /// ```
    public var namedValues: [String: DatabaseValue]

    /// Whether no value is given.
    ///
    /// ```swift
    /// StatementArguments().isEmpty   // true
    /// ```
    public var isEmpty: Bool { values.isEmpty && namedValues.isEmpty }

    /// Positional arguments: `StatementArguments([1, "Arthur", nil])`.
    ///
    /// ```swift
    /// let arguments = StatementArguments([name, score, nil])
    /// try db.execute(sql: "INSERT INTO player (name, score, team_id) VALUES (?, ?, ?)", arguments: arguments)
    /// ```
    public init(_ values: [(any DatabaseValueConvertible)?] = []) {
        self.values = values.map { $0?.databaseValue ?? .null }
        self.namedValues = [:]
    }

    /// Named arguments: `StatementArguments(["name": "Arthur"])`.
    ///
    /// ```swift
    /// let arguments = StatementArguments(["id": id, "score": score])
    /// try db.execute(sql: "UPDATE player SET score = :score WHERE id = :id", arguments: arguments)
    /// ```
    public init(_ namedValues: [String: (any DatabaseValueConvertible)?]) {
        self.values = []
        self.namedValues = namedValues.mapValues { $0?.databaseValue ?? .null }
    }

    /// `[1, "Arthur", nil]`
    ///
    /// ```swift
    /// let arguments: StatementArguments = [1, "Arthur", nil]   // three positional values
    /// ```
    public init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        self.init(elements)
    }

    /// `[":name": "Arthur"]`
    ///
    /// ```swift
    /// let arguments: StatementArguments = [":name": "Arthur", ":score": 100]
    /// ```
    public init(dictionaryLiteral elements: (String, (any DatabaseValueConvertible)?)...) {
        var named: [String: DatabaseValue] = [:]
        for (key, value) in elements { named[key] = value?.databaseValue ?? .null }
        self.values = []
        self.namedValues = named
    }

    /// Consumes the arguments while binding the statements of a script.
    struct Consumer {
        var arguments: StatementArguments
        var position = 0
        var usedNames: Set<String> = []

        init(_ arguments: StatementArguments) {
            self.arguments = arguments
        }

        /// Binds the values `statement` needs: for positional arguments the
        /// next `parameterCount` values; for named ones each name.
        mutating func bind(_ statement: OpaquePointer, sql: String, isLastStatement: Bool) throws {
            let count = sqlite3_bind_parameter_count(statement)
            if !arguments.namedValues.isEmpty {
                for index in stride(from: Int32(1), through: count, by: 1) {
                    guard let cName = sqlite3_bind_parameter_name(statement, index) else {
                        throw SQLiteError.misuse(
                            "parameter \(index) is positional but the arguments are named", sql: sql)
                    }
                    let name = String(cString: cName)
                    let key = try resolve(name, sql: sql)
                    usedNames.insert(key)
                    try check(arguments.namedValues[key]!.bind(to: statement, at: index), statement, sql)
                }
                if isLastStatement {
                    let unused = Set(arguments.namedValues.keys).subtracting(usedNames)
                    if !unused.isEmpty {
                        throw SQLiteError.misuse(
                            "no parameter named \(unused.sorted().joined(separator: ", "))", sql: sql)
                    }
                }
                return
            }
            let available = arguments.values.count - position
            if Int(count) > available {
                // Later statements of a script may need more.
                let needs = isLastStatement ? "" : "at least "
                throw SQLiteError.misuse(
                    "wrong number of arguments: the SQL needs \(needs)\(position + Int(count)), got \(arguments.values.count)",
                    sql: sql)
            }
            if isLastStatement && Int(count) < available {
                throw SQLiteError.misuse(
                    "wrong number of arguments: the SQL needs \(position + Int(count)), got \(arguments.values.count)",
                    sql: sql)
            }
            var index: Int32 = 1
            while index <= count {
                try check(arguments.values[position].bind(to: statement, at: index), statement, sql)
                position += 1
                index += 1
            }
        }

        private func resolve(_ name: String, sql: String) throws -> String {
            if arguments.namedValues[name] != nil { return name }
            let bare = String(name.dropFirst())
            if arguments.namedValues[bare] != nil { return bare }
            throw SQLiteError.misuse("missing value for parameter \(name)", sql: sql)
        }

        private func check(_ code: Int32, _ statement: OpaquePointer, _ sql: String) throws {
            if code != SQLITE_OK {
                throw SQLiteError(connection: sqlite3_db_handle(statement), code: code, sql: sql)
            }
        }
    }
}
