import Testing

@testable import DBWatch

@Suite("Migrations: statement splitting")
struct MigrationScriptTests {
    private func split(_ text: String) -> [SQLScript.Statement] {
        SQLScript(text).statements
    }

    @Test func statementsWithTheirStartingLines() {
        let statements = split(
            """
            CREATE TABLE team (id INTEGER PRIMARY KEY, name TEXT);

            -- Players
            CREATE TABLE player (
                id INTEGER PRIMARY KEY,
                name TEXT
            );
            INSERT INTO team (name) VALUES ('Reds');
            """)
        #expect(
            statements == [
                .init(sql: "CREATE TABLE team (id INTEGER PRIMARY KEY, name TEXT);", line: 1),
                .init(sql: "CREATE TABLE player (\n    id INTEGER PRIMARY KEY,\n    name TEXT\n);", line: 4),
                .init(sql: "INSERT INTO team (name) VALUES ('Reds');", line: 8),
            ])
    }

    @Test func severalStatementsOnOneLine() {
        let statements = split("CREATE TABLE a (x); CREATE TABLE b (y);  -- done\nCREATE TABLE c (z);")
        #expect(statements.map(\.sql) == ["CREATE TABLE a (x);", "CREATE TABLE b (y);", "CREATE TABLE c (z);"])
        #expect(statements.map(\.line) == [1, 1, 2])
    }

    @Test func triggerBodiesStayWhole() {
        let trigger = """
            CREATE TRIGGER player_score AFTER UPDATE OF score ON player
            BEGIN
                INSERT INTO history (player_id, score) VALUES (new.id, new.score);
                UPDATE team SET updated = 1 WHERE id = new.team_id;
            END;
            """
        let statements = split(
            """
            CREATE TABLE history (player_id, score);
            \(trigger)
            CREATE TEMP TRIGGER t AFTER INSERT ON player BEGIN SELECT 1; SELECT 2; END; SELECT 3;
            """)
        #expect(
            statements == [
                .init(sql: "CREATE TABLE history (player_id, score);", line: 1),
                .init(sql: trigger, line: 2),
                .init(sql: "CREATE TEMP TRIGGER t AFTER INSERT ON player BEGIN SELECT 1; SELECT 2; END;", line: 7),
                .init(sql: "SELECT 3;", line: 7),
            ])
    }

    @Test func semicolonsInLiteralsAndQuotedNames() {
        let statements = split(
            """
            INSERT INTO note (text) VALUES ('a;b'), ('it''s; fine'), ('multi
            line; text');
            CREATE TABLE "odd;name" ([also;odd] TEXT, `back;tick` TEXT);
            SELECT x'3b3b';
            """)
        #expect(
            statements.map(\.sql) == [
                "INSERT INTO note (text) VALUES ('a;b'), ('it''s; fine'), ('multi\nline; text');",
                "CREATE TABLE \"odd;name\" ([also;odd] TEXT, `back;tick` TEXT);",
                "SELECT x'3b3b';",
            ])
        #expect(statements.map(\.line) == [1, 3, 4])
    }

    @Test func commentsWithSemicolons() {
        let statements = split(
            """
            /* Header; with a semicolon.
               Two lines; two semicolons. */
            CREATE TABLE a ( -- the first; column
                x INTEGER /* inline; comment */
            );
            -- between; statements
            /* another; */ CREATE TABLE b (y);
            """)
        #expect(statements.count == 2)
        #expect(statements[0].sql.hasPrefix("CREATE TABLE a ("))
        #expect(statements[0].sql.hasSuffix("\n);"))
        #expect(statements[0].line == 3)
        #expect(statements[1] == .init(sql: "CREATE TABLE b (y);", line: 7))
    }

    @Test(arguments: [
        "",
        "   \n\n\t  \n",
        "-- only a comment",
        "-- one; \n-- two;\n",
        "/* a block; comment */\n/* and\nanother; */",
        ";;\n;",
    ])
    func scriptsWithoutStatements(text: String) {
        #expect(split(text).isEmpty)
    }

    @Test func lastStatementWithoutSemicolon() {
        let statements = split("CREATE TABLE a (x);\n\nINSERT INTO a VALUES (1)\n-- trailing comment\n")
        #expect(statements.map(\.sql) == ["CREATE TABLE a (x);", "INSERT INTO a VALUES (1)\n-- trailing comment\n"])
        #expect(statements.map(\.line) == [1, 3])
    }

    @Test func incompleteTriggerIsOneLastStatement() {
        let statements = split("CREATE TABLE a (x);\nCREATE TRIGGER t AFTER INSERT ON a BEGIN\n  SELECT 1;\n")
        #expect(statements.count == 2)
        #expect(statements[1].sql == "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  SELECT 1;\n")
        #expect(statements[1].line == 2)
    }

    @Test func emptyStatementsAreSkipped() {
        #expect(split("CREATE TABLE a (x);;\n;CREATE TABLE b (y);").map(\.line) == [1, 2])
    }

    @Test func windowsLineEndings() {
        let statements = split("-- header\r\nCREATE TABLE a (x);\r\n\r\nCREATE TABLE b (y);\r\n")
        #expect(statements.map(\.line) == [2, 4])
        #expect(statements.map(\.sql) == ["CREATE TABLE a (x);", "CREATE TABLE b (y);"])
    }

    @Test func nonASCIIText() {
        let statements = split("INSERT INTO t VALUES ('héllo; wörld 🏆');\nSELECT 'ü';")
        #expect(statements.map(\.sql) == ["INSERT INTO t VALUES ('héllo; wörld 🏆');", "SELECT 'ü';"])
        #expect(statements.map(\.line) == [1, 2])
    }

    @Test(arguments: [
        ("BEGIN;", true),
        ("begin immediate transaction;", true),
        ("COMMIT;", true),
        ("END TRANSACTION;", true),
        ("ROLLBACK;", true),
        ("rollback transaction;", true),
        ("/* c */ -- c\n COMMIT;", true),
        ("ROLLBACK TO sp;", false),
        ("ROLLBACK TRANSACTION TO SAVEPOINT sp;", false),
        ("SAVEPOINT sp;", false),
        ("RELEASE sp;", false),
        ("CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END;", false),
        ("CREATE TABLE \"begin\" (x);", false),
        ("SELECT 'COMMIT';", false),
    ])
    func transactionControlStatements(sql: String, isTransactionControl: Bool) {
        #expect(SQLScript.Statement(sql: sql, line: 1).isTransactionControl == isTransactionControl)
    }
}
