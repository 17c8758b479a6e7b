/// What PostgreSQL sends inside the copy of `START_REPLICATION`
/// (PostgreSQL's "Streaming Replication Protocol").
enum StreamingMessage: Sendable, Equatable {
    /// `w` (XLogData): one `pgoutput` message, and the end of the
    /// server's log when it was sent.
    case data(start: LogSequenceNumber, serverEnd: LogSequenceNumber, payload: [UInt8])
    /// `k` (primary keepalive): everything before `end` was decoded and
    /// sent; `replyRequested` asks for a standby status update at once.
    case keepalive(end: LogSequenceNumber, replyRequested: Bool)

    /// The message in a `CopyData` body.
    init(copyData bytes: [UInt8]) throws(PgOutputParseError) {
        var reader = PgOutputReader(bytes)
        switch try reader.readByte("streaming message type") {
        case UInt8(ascii: "w"):
            let start = try reader.readPosition("data start")
            let end = try reader.readPosition("server end")
            _ = try reader.readInt64("send time")
            self = .data(start: start, serverEnd: end, payload: try reader.readBytes(reader.remaining, "payload"))
        case UInt8(ascii: "k"):
            let end = try reader.readPosition("server end")
            _ = try reader.readInt64("send time")
            let reply = try reader.readByte("reply requested")
            self = .keepalive(end: end, replyRequested: reply != 0)
        case let type:
            throw PgOutputParseError(message: "unknown streaming message type \(type)", offset: 0)
        }
    }

    /// A standby status update (`r`) in a `CopyData` body: the position
    /// received (`write`), and the one durably applied (`flush`, `apply`),
    /// which lets PostgreSQL release its log before it.
    static func statusUpdate(
        received: LogSequenceNumber, applied: LogSequenceNumber, replyRequested: Bool, now: Int64
    ) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "r")]
        FrontendMessage.append(received.rawValue, to: &bytes)
        FrontendMessage.append(applied.rawValue, to: &bytes)
        FrontendMessage.append(applied.rawValue, to: &bytes)
        FrontendMessage.append(now, to: &bytes)
        bytes.append(replyRequested ? 1 : 0)
        return bytes
    }
}
