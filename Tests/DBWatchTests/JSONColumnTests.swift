import DBWatch
import Foundation
import Testing

/// A property that is itself a structure (an array, a struct, a
/// dictionary) reads its column as JSON, as GRDB reads nested `Codable`
/// properties.
@Suite("JSON in columns")
struct JSONColumnTests {
    struct Address: Codable, Equatable {
        var city: String
        var zip: String?
    }

    struct Profile: Decodable, Equatable {
        var name: String
        var tags: [String]
        var address: Address?
        var scores: [String: Int]
    }

    /// A wrapper that reads its one value through a single-value container.
    struct Tags: Decodable, Equatable {
        var values: [String]
        init(values: [String]) { self.values = values }
        init(from decoder: any Decoder) throws { values = try decoder.singleValueContainer().decode([String].self) }
    }

    struct Tagged: Decodable, Equatable {
        var tags: Tags
    }

    @Test func nestedPropertiesReadJSONTextAndBlobs() async throws {
        let queue = try DatabaseQueue()
        let (profiles, tagged) = try await queue.write { db in
            try db.execute(sql: "CREATE TABLE profile (name TEXT, tags TEXT, address, scores TEXT)")
            try db.execute(
                sql: "INSERT INTO profile VALUES (?, ?, ?, ?), (?, ?, ?, ?)",
                arguments: [
                    "Arthur", #"["a","b"]"#, #"{"city":"Paris","zip":"75001"}"#, #"{"x":1}"#,
                    "Barbara", "[]", nil, "{}",
                ])
            try db.execute(sql: #"UPDATE profile SET address = CAST('{"city":"Lyon"}' AS BLOB) WHERE name = 'Barbara'"#)
            return (
                try db.fetchAll(Profile.self, sql: "SELECT * FROM profile ORDER BY name"),
                try db.fetchOne(Tagged.self, sql: #"SELECT '["z"]' AS tags"#)
            )
        }
        #expect(
            profiles == [
                Profile(
                    name: "Arthur", tags: ["a", "b"], address: Address(city: "Paris", zip: "75001"), scores: ["x": 1]),
                Profile(name: "Barbara", tags: [], address: Address(city: "Lyon", zip: nil), scores: [:]),
            ])
        #expect(tagged == Tagged(tags: Tags(values: ["z"])))
    }

    @Test func aNullNestedValueIsNilWhenOptional() async throws {
        let queue = try DatabaseQueue()
        let profile = try await queue.read { db in
            try db.fetchOne(Profile.self, sql: "SELECT 'A' AS name, '[]' AS tags, NULL AS address, '{}' AS scores")
        }
        #expect(profile == Profile(name: "A", tags: [], address: nil, scores: [:]))
    }

    @Test func errorsNameTheColumnAndThePathInside() async throws {
        let queue = try DatabaseQueue()
        func failure(_ sql: String) async throws -> DecodingError {
            do {
                _ = try await queue.read { db in try db.fetchAll(Profile.self, sql: sql) }
            } catch let error as DecodingError {
                return error
            }
            Issue.record("\(sql) decoded")
            throw CancellationError()
        }
        // Not JSON at all.
        let corrupted = try await failure("SELECT 'A' AS name, 'a, b' AS tags, NULL AS address, '{}' AS scores")
        guard case .dataCorrupted(let context) = corrupted else {
            Issue.record("\(corrupted)")
            return
        }
        #expect(context.codingPath.map(\.stringValue) == ["tags"])
        #expect(context.debugDescription.contains("JSON in column tags"))
        // JSON of the wrong shape: the path goes on inside it.
        let mismatch = try await failure(
            #"SELECT 'A' AS name, '[]' AS tags, '{"city":7}' AS address, '{}' AS scores"#)
        guard case .typeMismatch(_, let inside) = mismatch else {
            Issue.record("\(mismatch)")
            return
        }
        #expect(inside.codingPath.map(\.stringValue) == ["address", "city"])
        // NULL for a non-optional structure, and a number.
        let null = try await failure("SELECT 'A' AS name, NULL AS tags, NULL AS address, '{}' AS scores")
        guard case .valueNotFound = null else {
            Issue.record("\(null)")
            return
        }
        let number = try await failure("SELECT 'A' AS name, 12 AS tags, NULL AS address, '{}' AS scores")
        guard case .typeMismatch = number else {
            Issue.record("\(number)")
            return
        }
    }

    /// A list that turns any error of its container into its own.
    struct Scores: Decodable, Equatable {
        struct Invalid: Error {
            var underlying: any Error
        }
        var values: [Int]
        init(values: [Int]) { self.values = values }
        init(from decoder: any Decoder) throws {
            do {
                var container = try decoder.unkeyedContainer()
                var values: [Int] = []
                while !container.isAtEnd { values.append(try container.decode(Int.self)) }
                self.values = values
            } catch {
                throw Invalid(underlying: error)
            }
        }
    }

    struct Game: Decodable, Equatable {
        var scores: Scores
    }

    /// A type whose `init(from:)` wraps the error of its container request
    /// still reads the JSON, and its errors hold nothing of ours.
    @Test func aTypeThatWrapsErrorsReadsTheJSON() async throws {
        let queue = try DatabaseQueue()
        let (games, failure) = try await queue.read { db in
            let games = try db.fetchAll(Game.self, sql: "SELECT '[3,1]' AS scores")
            do {
                _ = try db.fetchAll(Game.self, sql: #"SELECT '["x"]' AS scores"#)
                return (games, nil as (any Error)?)
            } catch {
                return (games, error)
            }
        }
        #expect(games == [Game(scores: Scores(values: [3, 1]))])
        let error = try #require(failure)
        #expect(error is Scores.Invalid)
        #expect(!"\(error)".contains("JSONInColumn"), "\(error)")
    }

    struct Count: Decodable {
        var value: Int
        init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int.self) }
    }

    struct Counted: Decodable {
        var count: Count
    }

    /// Inside a single-value wrapper the path still starts at the
    /// property's column, not at its position.
    @Test func errorsInsideAWrapperNameTheColumn() async throws {
        let queue = try DatabaseQueue()
        let (failure, notANumber) = try await queue.read { db -> ((any Error)?, (any Error)?) in
            func failure(_ read: () throws -> Void) -> (any Error)? {
                do {
                    try read()
                    return nil
                } catch {
                    return error
                }
            }
            return (
                failure { _ = try db.fetchAll(Tagged.self, sql: "SELECT '[1]' AS tags") },
                failure { _ = try db.fetchAll(Counted.self, sql: "SELECT 'many' AS count") }
            )
        }
        #expect("\(notANumber as Any)".contains("cannot decode Int from TEXT in column count"), "\(notANumber as Any)")
        guard case .typeMismatch(_, let context) = try #require(failure as? DecodingError) else {
            Issue.record("\(failure as Any)")
            return
        }
        #expect(context.codingPath.map(\.stringValue) == ["tags", "Index 0"])
        #expect(context.debugDescription.hasPrefix("JSON in column tags as"), "\(context.debugDescription)")
    }

    struct Visit: Codable, Equatable {
        var at: Date
    }

    struct Visitor: Decodable, Equatable {
        var visits: [Visit]
    }

    struct Attachment: Codable, Equatable {
        var bytes: Data
        var ratio: Double
        var url: URL
    }

    /// JSON written by `DatabaseValue.json` reads back as it was, dates and
    /// data included, in GRDB's form: sorted keys, dates as milliseconds
    /// since 1970, data as base64.
    @Test func jsonArgumentsRoundTripInGRDBsForm() async throws {
        let visits = [Visit(at: Date(timeIntervalSince1970: 1_700_000_000.5))]
        let attachment = Attachment(bytes: Data([0, 1, 255]), ratio: 0.5, url: URL(string: "https://a.b/c")!)
        let queue = try DatabaseQueue()
        let (visitor, storedVisits, storedAttachment, readAttachment) = try await queue.read { db in
            let visitsJSON = try DatabaseValue.json(visits)
            let attachmentJSON = try DatabaseValue.json(attachment)
            return (
                try db.fetchOne(Visitor.self, sql: "SELECT ? AS visits", arguments: [visitsJSON]),
                visitsJSON, attachmentJSON,
                try db.fetchOne(
                    AttachmentHolder.self, sql: "SELECT json(?) AS attachment", arguments: [attachmentJSON])
            )
        }
        #expect(visitor == Visitor(visits: visits))
        #expect(storedVisits == .text(#"[{"at":1700000000500}]"#))
        #expect(storedAttachment == .text(#"{"bytes":"AAH/","ratio":0.5,"url":"https://a.b/c"}"#))
        #expect(readAttachment == AttachmentHolder(attachment: attachment))
    }

    struct AttachmentHolder: Decodable, Equatable {
        var attachment: Attachment
    }

    /// A database GRDB wrote: its nested dates are milliseconds since 1970.
    @Test func readsJSONThatGRDBWrote() async throws {
        let queue = try DatabaseQueue()
        let visitor = try await queue.read { db in
            try db.fetchOne(Visitor.self, sql: #"SELECT '[{"at":86400000}]' AS visits"#)
        }
        #expect(visitor == Visitor(visits: [Visit(at: Date(timeIntervalSince1970: 86_400))]))
    }

    @Test func jsonRefusesWhatItCannotHold() {
        #expect(throws: EncodingError.self) { try DatabaseValue.json([Double.nan]) }
    }

    /// A whole row is not JSON: a top-level array type still fails clearly.
    @Test func aRowIsNotAnArray() async throws {
        let queue = try DatabaseQueue()
        await #expect(throws: DecodingError.self) {
            try await queue.read { db in try db.fetchAll([String].self, sql: #"SELECT '["a"]'"#) }
        }
    }
}
