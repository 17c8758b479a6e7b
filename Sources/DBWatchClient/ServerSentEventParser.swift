/// Cuts a server-sent events stream into events as its bytes arrive, in
/// pieces of any size (the HTML standard's parsing, for the fields DBWatch
/// sends: `event`, `data`, `id`; comment lines are keep-alives). Shared
/// by ``SyncClient`` and `dbwatch watch`.
///
/// ```swift
/// var parser = ServerSentEventParser()
/// parser.feed(Array("id: 1-a\ndata: {}\n\n".utf8))   // [ServerSentEventParser.Event(type: nil, data: "{}", id: "1-a")]
/// ```
package struct ServerSentEventParser {
    /// One event.
    package struct Event: Equatable, Sendable {
        /// The `event:` field; `nil` for a plain message (a value).
        package var type: String?
        /// The `data:` lines, joined by newlines.
        package var data: String
        /// The `id:` field, if the event had one.
        package var id: String?

        /// An event of `type` (`nil`: a plain message) with `data` and `id`.
        package init(type: String?, data: String, id: String?) {
            self.type = type
            self.data = data
            self.id = id
        }
    }

    /// The most an unfinished line may hold: a longer one is a broken
    /// stream, not a value to wait for.
    package let maximumLineLength: Int

    private var line: [UInt8] = []
    private var pending = Event(type: nil, data: "", id: nil)
    private var hasData = false
    private var lastByteWasCarriageReturn = false

    /// A parser whose lines may hold `maximumLineLength` bytes.
    package init(maximumLineLength: Int = 256 << 20) {
        self.maximumLineLength = maximumLineLength
    }

    /// A line longer than ``maximumLineLength``.
    package struct LineTooLong: Error, CustomStringConvertible {
        package var description: String { "the server sent an event line beyond the size limit" }
    }

    /// The events that `bytes` completes.
    package mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [Event] {
        var events: [Event] = []
        for byte in bytes {
            if byte == 0x0A && lastByteWasCarriageReturn {
                lastByteWasCarriageReturn = false
                continue
            }
            lastByteWasCarriageReturn = byte == 0x0D
            if byte == 0x0A || byte == 0x0D {
                if let event = endLine() { events.append(event) }
            } else {
                guard line.count < maximumLineLength else { throw LineTooLong() }
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endLine() -> Event? {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            defer {
                pending = Event(type: nil, data: "", id: pending.id)
                hasData = false
            }
            return hasData ? pending : nil
        }
        if line.first == UInt8(ascii: ":") { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let field = String(decoding: line[..<colon], as: UTF8.self)
        var valueStart = colon < line.endIndex ? colon + 1 : colon
        if valueStart < line.endIndex, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = String(decoding: line[valueStart...], as: UTF8.self)
        switch field {
        case "event": pending.type = value
        case "data":
            pending.data = hasData ? pending.data + "\n" + value : value
            hasData = true
        case "id": pending.id = value
        default: break
        }
        return nil
    }
}
