import Foundation

/// A message from a sync client: `subscribe` or `unsubscribe` (see the
/// reference, <doc:SyncProtocol#Client-messages>).
enum SyncClientMessage: Sendable, Equatable {
    /// Subscribe `id` to `subscription`, resuming from `position` when given.
    case subscribe(id: String, subscription: SyncSubscription, mode: SyncMode, position: SyncPosition?)
    case unsubscribe(id: String)

    /// The longest message accepted, in bytes.
    static let maximumSize = 64 * 1024

    private struct Fields: Decodable {
        var type: String
        var id: String?
        var query: String?
        var params: [String: String]?
        var mode: String?
        var position: String?
    }

    /// Decodes one message, or a JSON array of messages (handled together:
    /// see ``SyncSession/receive(_:)``); throws
    /// ``LiveQueriesError/badRequest(_:)`` saying what is wrong.
    static func messages(json: Data) throws(LiveQueriesError) -> [SyncClientMessage] {
        guard json.count <= Self.maximumSize else { throw .badRequest("the message is longer than 64 KiB") }
        let isArray = json.first { ![UInt8(ascii: " "), 0x09, 0x0A, 0x0D].contains($0) } == UInt8(ascii: "[")
        let fields: [Fields]
        do {
            fields =
                isArray
                ? try JSONDecoder().decode([Fields].self, from: json)
                : [try JSONDecoder().decode(Fields.self, from: json)]
        } catch let error as DecodingError {
            throw .badRequest("bad message: \(ErrorBody.describe(error))")
        } catch {
            throw .badRequest("bad message: not JSON")
        }
        guard !fields.isEmpty else { throw .badRequest("bad message: an empty array") }
        var messages: [SyncClientMessage] = []
        for message in fields { messages.append(try SyncClientMessage(fields: message)) }
        return messages
    }

    private init(fields: Fields) throws(LiveQueriesError) {
        guard let id = fields.id, (1...64).contains(id.count) else {
            throw .badRequest("bad message: id must be 1 to 64 characters")
        }
        switch fields.type {
        case "subscribe":
            guard let query = fields.query, !query.isEmpty, query.utf8.count <= 256 else {
                throw .badRequest("bad message: subscribe needs a query name")
            }
            let mode: SyncMode
            switch fields.mode {
            case nil, "changes": mode = .changes
            case "values": mode = .values
            case let other?: throw .badRequest("bad message: unknown mode \"\(other.prefix(32))\"")
            }
            var position: SyncPosition?
            if let text = fields.position {
                guard let parsed = SyncPosition(parsing: text) else {
                    throw .badRequest("bad message: position must be EPOCH/SEQUENCE")
                }
                position = parsed
            }
            self = .subscribe(
                id: id, subscription: SyncSubscription(query: query, params: fields.params ?? [:]), mode: mode,
                position: position)
        case "unsubscribe":
            self = .unsubscribe(id: id)
        default:
            throw .badRequest("bad message: unknown type \"\(fields.type.prefix(32))\"")
        }
    }
}

/// How a subscription receives its query's results.
enum SyncMode: Sendable, Equatable {
    /// A snapshot, then keyed changes (whole values for a query without a key).
    case changes
    /// A whole value after every change.
    case values
}
