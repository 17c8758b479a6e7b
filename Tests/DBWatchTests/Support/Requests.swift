import DBWatch

/// All players by id.
struct AllPlayers: Queryable {
    static let defaultValue: [Player] = []
    func fetch(_ db: Database) throws -> [Player] {
        try db.fetchAll(Player.self, sql: "SELECT * FROM player ORDER BY id")
    }
}

/// Names only: does not read `score`.
struct PlayerNames: Queryable {
    static let defaultValue: [String] = []
    func fetch(_ db: Database) throws -> [String] {
        try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY id")
    }
}

/// Any SQL returning rows.
struct SQLRequest: Queryable {
    static let defaultValue: [Row] = []
    var sql: String
    var arguments: StatementArguments = []
    init(_ sql: String, arguments: StatementArguments = []) {
        self.sql = sql
        self.arguments = arguments
    }
    func fetch(_ db: Database) throws -> [Row] {
        try db.fetchAll(sql: sql, arguments: arguments)
    }
}

/// A single integer.
struct IntRequest: Queryable {
    static let defaultValue = 0
    var sql: String
    init(_ sql: String) { self.sql = sql }
    func fetch(_ db: Database) throws -> Int {
        try db.fetchOne(Int.self, sql: sql) ?? 0
    }
}

/// Names that start with `prefix`; `["(loading)"]` before the first fetch.
struct NameSearch: Queryable {
    static let defaultValue: [String] = ["(loading)"]
    var prefix: String
    func fetch(_ db: Database) throws -> [String] {
        try db.fetchAll(
            String.self, sql: "SELECT name FROM player WHERE name LIKE ? || '%' ORDER BY name", arguments: [prefix])
    }
}
