import DBWatch

/// How a client receives frames: the bytes of a frame differ by transport.
package enum Transport: Sendable, Hashable {
    /// Server-sent events: `id:`/`data:` lines, `event: error`, `event: end`.
    case serverSentEvents
    /// WebSocket text messages: `{"type": "value" | "error" | "end", …}`.
    case webSocket
}

/// One event of a shared observation, framed once for every transport and
/// written as the same bytes to every client.
package final class Frame: Sendable {
    package enum Kind: Sendable {
        /// A fetched value.
        case value
        /// A failing fetch or a refused request: the stream goes on.
        case error
        /// The last event of a stream.
        case end
        /// A comment that keeps an idle stream open (server-sent events).
        case keepAlive
    }

    package let kind: Kind
    /// A digest of a value's JSON (0 for other kinds): a client resuming
    /// with it already holds this value.
    package let digest: UInt64
    /// The server-sent event, ready to write.
    package let serverSentEvent: [UInt8]
    /// The WebSocket text message, ready to write.
    package let webSocketMessage: [UInt8]
    /// When the commit this frame is news of was published (the commit at
    /// its value's position), for the commit-to-socket latency; `nil` for
    /// frames that are no commit's news (errors, ends, an observation's first value).
    package let committedAt: ContinuousClock.Instant?
    /// The bytes in the adapter's buffer type, made once per transport for
    /// every client (see ``wire(_:_:)``).
    private let wires = Locked<[Transport: any Sendable]>([:])

    init(
        kind: Kind, digest: UInt64, serverSentEvent: [UInt8], webSocketMessage: [UInt8],
        committedAt: ContinuousClock.Instant? = nil
    ) {
        self.kind = kind
        self.digest = digest
        self.serverSentEvent = serverSentEvent
        self.webSocketMessage = webSocketMessage
        self.committedAt = committedAt
    }

    /// The bytes for `transport`.
    package func bytes(for transport: Transport) -> [UInt8] {
        switch transport {
        case .serverSentEvents: serverSentEvent
        case .webSocket: webSocketMessage
        }
    }

    /// The bytes for `transport` in the adapter's buffer type, made by
    /// `make` for the first client and shared by the others: a framework's
    /// buffer (NIO's `ByteBuffer`) is reference-counted, so every client's
    /// socket is written from one copy.
    ///
    /// ```swift
    /// try await writer.write(frame.wire(.serverSentEvents) { ByteBuffer(bytes: $0) })
    /// ```
    package func wire<Wire: Sendable>(_ transport: Transport, _ make: ([UInt8]) -> Wire) -> Wire {
        wires.withLock { wires in
            if let made = wires[transport] as? Wire { return made }
            let made = make(bytes(for: transport))
            wires[transport] = made
            return made
        }
    }

    /// The `id:` of a value: a version and the digest of its JSON.
    package static func eventID(version: UInt64, digest: UInt64) -> String {
        "\(version)-\(String(digest, radix: 16))"
    }

    /// The digest part of a `Last-Event-ID`, if it has the form of ours.
    package static func digest(ofEventID eventID: String) -> UInt64? {
        guard let dash = eventID.firstIndex(of: "-") else { return nil }
        return UInt64(eventID[eventID.index(after: dash)...], radix: 16)
    }

    /// A value frame around `json`, the value encoded once; `version` grows
    /// with each value the server sends; `committedAt`, when the commit of
    /// the value's position was published.
    package static func value(
        json: [UInt8], version: UInt64, committedAt: ContinuousClock.Instant? = nil
    ) -> Frame {
        let digest = fnv1a(json)
        let id = eventID(version: version, digest: digest)
        var event: [UInt8] = []
        event.reserveCapacity(json.count + id.utf8.count + 16)
        event += "id: \(id)\ndata: ".utf8
        event += json
        event += "\n\n".utf8
        var message: [UInt8] = []
        message.reserveCapacity(json.count + id.utf8.count + 40)
        message += #"{"type":"value","id":"\#(id)","value":"#.utf8
        message += json
        message += "}".utf8
        return Frame(
            kind: .value, digest: digest, serverSentEvent: event, webSocketMessage: message, committedAt: committedAt)
    }

    /// An error frame: `{"message": …, "code": …}`.
    package static func error(_ body: ErrorBody) -> Frame {
        let json = body.json
        return Frame(
            kind: .error, digest: 0,
            serverSentEvent: Array("event: error\ndata: ".utf8) + json + Array("\n\n".utf8),
            webSocketMessage: Array(#"{"type":"error","error":"#.utf8) + json + Array("}".utf8))
    }

    /// The final event of a stream: `event: end` with `{"reason": …}`.
    package static func end(_ reason: EndReason) -> Frame {
        let json = #"{"reason":"\#(reason.rawValue)"}"#
        return Frame(
            kind: .end, digest: 0,
            serverSentEvent: Array("event: end\ndata: \(json)\n\n".utf8),
            webSocketMessage: Array(#"{"type":"end","reason":"\#(reason.rawValue)"}"#.utf8))
    }

    /// Why a stream ends, as its final event says.
    package enum EndReason: String, Sendable {
        case shutdown = "shutdown"
        case databaseClosed = "database closed"
        case databaseReplaced = "database file replaced"
        case tooManyObservations = "too many observations"
    }

    /// A keep-alive comment line (server-sent events only; WebSockets have
    /// their own pings).
    package static let keepAlive = Frame(
        kind: .keepAlive, digest: 0, serverSentEvent: Array(": keep-alive\n\n".utf8), webSocketMessage: [])

    /// 64-bit FNV-1a: cheap, once per value, not per client.
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}
