import DBWatch
import Foundation
import NIOCore

/// One event of a shared observation, framed once for every transport and
/// written as the same bytes to every client.
struct Frame: Sendable {
    enum Kind: Sendable {
        /// A fetched value, with its version.
        case value
        /// A failing fetch: the stream goes on.
        case error
        /// The last event of a stream.
        case end
    }

    let kind: Kind
    /// The version of a value (0 for other kinds).
    let version: UInt64
    /// A digest of the value's JSON: a client resuming with it already holds
    /// this value.
    let digest: UInt64
    /// The server-sent event, ready to write.
    let serverSentEvent: ByteBuffer
    /// The WebSocket text message, ready to write.
    let webSocketMessage: ByteBuffer

    /// The `id:` of a value: its version and the digest of its JSON.
    static func eventID(version: UInt64, digest: UInt64) -> String {
        "\(version)-\(String(digest, radix: 16))"
    }

    /// The digest part of a `Last-Event-ID`, if it has the form of ours.
    static func digest(ofEventID eventID: String) -> UInt64? {
        guard let dash = eventID.firstIndex(of: "-") else { return nil }
        return UInt64(eventID[eventID.index(after: dash)...], radix: 16)
    }

    /// A value frame around `json`, the value encoded once.
    static func value(json: ByteBuffer, version: UInt64) -> Frame {
        let digest = fnv1a(json)
        let id = eventID(version: version, digest: digest)
        var sse = ByteBuffer()
        sse.reserveCapacity(json.readableBytes + id.utf8.count + 16)
        sse.writeString("id: \(id)\ndata: ")
        sse.writeImmutableBuffer(json)
        sse.writeString("\n\n")
        var message = ByteBuffer()
        message.reserveCapacity(json.readableBytes + id.utf8.count + 40)
        message.writeString("{\"type\":\"value\",\"version\":\"\(id)\",\"value\":")
        message.writeImmutableBuffer(json)
        message.writeString("}")
        return Frame(kind: .value, version: version, digest: digest, serverSentEvent: sse, webSocketMessage: message)
    }

    /// An error frame: `{"code": …, "message": …}`.
    static func error(_ body: ErrorBody) -> Frame {
        let json = body.json
        var sse = ByteBuffer(string: "event: error\ndata: ")
        sse.writeImmutableBuffer(json)
        sse.writeString("\n\n")
        var message = ByteBuffer(string: "{\"type\":\"error\",\"error\":")
        message.writeImmutableBuffer(json)
        message.writeString("}")
        return Frame(kind: .error, version: 0, digest: 0, serverSentEvent: sse, webSocketMessage: message)
    }

    /// The final event of a stream: `event: end` with `{"reason": …}`.
    static func end(reason: String) -> Frame {
        let json = #"{"reason":"\#(reason)"}"#
        return Frame(
            kind: .end, version: 0, digest: 0,
            serverSentEvent: ByteBuffer(string: "event: end\ndata: \(json)\n\n"),
            webSocketMessage: ByteBuffer(string: #"{"type":"end","reason":"\#(reason)"}"#))
    }

    /// A keep-alive comment line.
    static let keepAlive = ByteBuffer(string: ": keep-alive\n\n")

    /// 64-bit FNV-1a: cheap, once per value, not per client.
    static func fnv1a(_ buffer: ByteBuffer) -> UInt64 {
        buffer.withUnsafeReadableBytes { bytes in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
            return hash
        }
    }
}

/// The JSON body of an error: an `error` event, a WebSocket error message
/// or an HTTP error answer.
struct ErrorBody: Encodable, Sendable {
    /// What went wrong, without the SQL or bound values.
    var message: String
    /// The SQLite extended result code, when SQLite reported the error.
    var code: Int32?

    init(message: String, code: Int32?) {
        self.message = message
        self.code = code
    }

    init(_ error: any Error) {
        if let error = error as? SQLiteError {
            self.init(message: error.message ?? "\(error.code)", code: error.code.rawValue)
        } else if error is DatabaseFileReplacedError {
            // Not the error's description: it holds the server's path.
            self.init(message: LiveQueryError.databaseReplaced.message, code: nil)
        } else if let error = error as? LiveQueryError {
            self.init(message: error.message, code: nil)
        } else if let error = error as? DecodingError {
            self.init(message: "invalid request parameters: \(Self.describe(error))", code: nil)
        } else {
            self.init(message: "\(error)", code: nil)
        }
    }

    /// A client's request that was refused: a ``LiveQueryError``'s message,
    /// what does not decode, or, for any other error (which may hold the
    /// server's details), only that it was refused.
    init(refusal error: any Error) {
        if error is LiveQueryError || error is DecodingError {
            self.init(error)
        } else {
            self.init(message: "the request was refused", code: nil)
        }
    }

    /// What is wrong with a request that does not decode, in a few words:
    /// `missing limit`, `limit has the wrong type`, `not JSON`.
    static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            let path = keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return path.isEmpty ? "the message" : String(path.prefix(100))
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing \(path(context.codingPath + [key]))"
        case .typeMismatch(_, let context): return "\(path(context.codingPath)) has the wrong type"
        case .valueNotFound(_, let context): return "\(path(context.codingPath)) is null"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not JSON" : "\(path(context.codingPath)) is invalid"
        @unknown default: return "does not decode"
        }
    }

    /// `{"code":…,"message":…}`, its keys sorted: equal errors are equal
    /// bytes (a plain encoder's order changes from one encoding to the next).
    var json: ByteBuffer {
        // Encoding two plain fields cannot fail.
        let data = (try? LiveQueries.makeEncoder().encode(self)) ?? Data(#"{"message":"error"}"#.utf8)
        return ByteBuffer(bytes: data)
    }
}
