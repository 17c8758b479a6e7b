import DBWatch
import Testing

@testable import DBWatchPostgres

/// The change feed's decisions, driven by hand-made streaming messages,
/// without a server.
@Suite("Replica: the change feed's state machine")
struct FeedStateMachineTests {
    static let table = SourceTable(
        oid: 16_384, schema: "public", name: "t",
        columns: [
            SourceColumn(
                name: "id", typeOID: 23, typeName: "integer", isKey: true, mapping: ColumnMapping(typeOID: 23)!),
            SourceColumn(
                name: "c", typeOID: 25, typeName: "text", isKey: false, mapping: ColumnMapping(typeOID: 25)!),
        ])

    /// One transaction inserting `id`: begin, relation, insert, commit,
    /// ending at `end`.
    static func transaction(id: Int, xid: UInt32, commit: UInt64, end: UInt64, relation: Bool = true)
        -> [StreamingMessage]
    {
        var messages = [data(Wire.begin(final: commit, xid: xid))]
        if relation {
            messages.append(data(Wire.relation(oid: table.oid, columns: [("id", 23, true), ("c", 25, false)])))
        }
        messages.append(data(Wire.insert(oid: table.oid, values: ["\(id)", "v\(id)"])))
        messages.append(data(Wire.commit(commit: commit, end: end)))
        return messages
    }

    static func data(_ payload: [UInt8]) -> StreamingMessage {
        .data(start: .zero, serverEnd: LogSequenceNumber(rawValue: 0x9000), payload: payload)
    }

    static func keepalive(_ end: UInt64, reply: Bool = false) -> StreamingMessage {
        .keepalive(end: LogSequenceNumber(rawValue: end), replyRequested: reply)
    }

    @Test("A streamed transaction is applied, and its end becomes the applied position")
    func aTransactionIsAppliedAndConfirmed() {
        var machine = FeedStateMachine(
            tables: [Self.table], position: LogSequenceNumber(rawValue: 0x100), snapshot: nil)
        let batch = machine.receive(Self.transaction(id: 1, xid: 7, commit: 0x200, end: 0x230))
        #expect(batch.transactions.map(\.endPosition) == [LogSequenceNumber(rawValue: 0x230)])
        #expect(batch.transactions.first?.changes.count == 1)
        #expect(machine.applied == LogSequenceNumber(rawValue: 0x100), "nothing is applied before SQLite commits")
        #expect(machine.batchApplied(through: LogSequenceNumber(rawValue: 0x230)) == nil)
        #expect(machine.applied == LogSequenceNumber(rawValue: 0x230))
    }

    @Test("Transactions at or before the file's position are skipped (PostgreSQL resends from the slot)")
    func resentTransactionsAreSkipped() {
        var machine = FeedStateMachine(
            tables: [Self.table], position: LogSequenceNumber(rawValue: 0x230), snapshot: nil)
        let batch = machine.receive(
            Self.transaction(id: 1, xid: 7, commit: 0x200, end: 0x230)
                + Self.transaction(id: 2, xid: 8, commit: 0x300, end: 0x330, relation: false))
        #expect(batch.transactions.map(\.transactionID) == [8])
    }

    @Test("A keepalive after applied transactions moves the applied position to its end")
    func keepaliveAfterAppliedTransactionsIsABoundary() {
        var machine = FeedStateMachine(
            tables: [Self.table], position: LogSequenceNumber(rawValue: 0x100), snapshot: nil)
        let batch = machine.receive(
            Self.transaction(id: 1, xid: 7, commit: 0x200, end: 0x230) + [Self.keepalive(0x500)])
        #expect(batch.caughtUp)
        _ = machine.batchApplied(through: LogSequenceNumber(rawValue: 0x230))
        #expect(machine.applied == LogSequenceNumber(rawValue: 0x500))
    }

    @Test("A keepalive's end is not claimed when applying the batch failed")
    func failedApplyClaimsNothing() {
        var machine = FeedStateMachine(
            tables: [Self.table], position: LogSequenceNumber(rawValue: 0x100), snapshot: nil)
        _ = machine.receive(Self.transaction(id: 1, xid: 7, commit: 0x200, end: 0x230) + [Self.keepalive(0x500)])
        // The streaming loop throws instead of calling batchApplied.
        #expect(machine.applied == LogSequenceNumber(rawValue: 0x100))
    }

    @Test("A keepalive that asks for a reply says so")
    func replyIsRequested() {
        var machine = FeedStateMachine(tables: [Self.table], position: .zero, snapshot: nil)
        #expect(machine.receive([Self.keepalive(0x10, reply: true)]).replyRequested)
        #expect(!machine.receive([Self.keepalive(0x20)]).replyRequested)
    }

    @Test("A transaction split over two batches is applied once whole")
    func splitTransaction() {
        var machine = FeedStateMachine(tables: [Self.table], position: .zero, snapshot: nil)
        let messages = Self.transaction(id: 1, xid: 7, commit: 0x200, end: 0x230)
        #expect(machine.receive(Array(messages.prefix(2))).transactions.isEmpty)
        #expect(machine.receive(Array(messages.dropFirst(2))).transactions.count == 1)
    }

    @Test("A transaction the copy's snapshot saw is stored as a position only")
    func snapshotTransactionsKeepNoChanges() throws {
        // xmin 10, xmax 12, 10 in progress: 9 and 11 were seen, 10 and 12 not.
        let snapshot = try #require(CopySnapshot("10:12:10", position: LogSequenceNumber(rawValue: 0x1000)))
        var machine = FeedStateMachine(tables: [Self.table], position: .zero, snapshot: snapshot)
        let batch = machine.receive(
            Self.transaction(id: 1, xid: 9, commit: 0x200, end: 0x230)
                + Self.transaction(id: 2, xid: 10, commit: 0x300, end: 0x330, relation: false)
                + Self.transaction(id: 3, xid: 11, commit: 0x400, end: 0x430, relation: false)
                + Self.transaction(id: 4, xid: 12, commit: 0x2000, end: 0x2030, relation: false))
        #expect(batch.transactions.map(\.changes.count) == [0, 1, 0, 1])
    }

    @Test("A changed relation stops the feed after the transactions before it, not those after")
    func schemaChangeStops() {
        var machine = FeedStateMachine(tables: [Self.table], position: .zero, snapshot: nil)
        var changed = Self.transaction(id: 2, xid: 8, commit: 0x300, end: 0x330)
        changed[1] = Self.data(Wire.relation(oid: Self.table.oid, columns: [("id", 23, true), ("d", 25, false)]))
        let batch = machine.receive(
            Self.transaction(id: 1, xid: 7, commit: 0x200, end: 0x230) + changed
                + Self.transaction(id: 3, xid: 9, commit: 0x400, end: 0x430, relation: false)
                + [Self.keepalive(0x500)])
        #expect(batch.transactions.map(\.transactionID) == [7])
        let stop = machine.batchApplied(through: LogSequenceNumber(rawValue: 0x230))
        #expect(stop?.code == .schemaChanged)
        #expect(machine.applied == LogSequenceNumber(rawValue: 0x230), "the keepalive after the change is not claimed")
    }

    @Test("A catalog change stops the feed once everything before its position is applied")
    func catalogChangeWaitsForItsPosition() {
        var machine = FeedStateMachine(
            tables: [Self.table], position: LogSequenceNumber(rawValue: 0x100), snapshot: nil)
        let dropped = ReplicaError(.tableDropped, "dropped")
        #expect(machine.catalogChanged(dropped, at: LogSequenceNumber(rawValue: 0x400)) == nil)
        _ = machine.receive(Self.transaction(id: 1, xid: 7, commit: 0x200, end: 0x230))
        #expect(machine.batchApplied(through: LogSequenceNumber(rawValue: 0x230)) == nil)
        _ = machine.receive([Self.keepalive(0x480)])
        #expect(machine.batchApplied(through: nil) == dropped)
    }

    @Test("The status update confirms the applied position as flushed")
    func statusUpdateCarriesTheAppliedPosition() throws {
        var machine = FeedStateMachine(
            tables: [Self.table], position: LogSequenceNumber(rawValue: 0x100), snapshot: nil)
        _ = machine.receive([Self.keepalive(0x480)])
        _ = machine.batchApplied(through: nil)
        let bytes = machine.statusUpdate(replyRequested: true, now: 5)
        #expect(bytes.count == 34 && bytes[0] == UInt8(ascii: "r"))
        var reader = PgOutputReader(Array(bytes.dropFirst()))
        let write = try reader.readPosition("write")
        let flush = try reader.readPosition("flush")
        let apply = try reader.readPosition("apply")
        let time = try reader.readInt64("time")
        let reply = try reader.readByte("reply")
        #expect([write, flush, apply] == Array(repeating: LogSequenceNumber(rawValue: 0x480), count: 3))
        #expect(time == 5 && reply == 1)
    }
}

/// `pgoutput` and streaming messages made by hand.
enum Wire {
    static func int<Integer: FixedWidthInteger>(_ value: Integer) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    static func string(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    static func begin(final: UInt64, xid: UInt32) -> [UInt8] {
        [UInt8(ascii: "B")] + int(final) + int(Int64(0)) + int(xid)
    }

    static func commit(commit: UInt64, end: UInt64) -> [UInt8] {
        [UInt8(ascii: "C"), 0] + int(commit) + int(end) + int(Int64(0))
    }

    static func relation(oid: UInt32, columns: [(String, UInt32, Bool)]) -> [UInt8] {
        var bytes = [UInt8(ascii: "R")] + int(oid) + string("public") + string("t") + [UInt8(ascii: "d")]
        bytes += int(Int16(columns.count))
        for (name, type, isKey) in columns {
            bytes += [isKey ? 1 : 0] + string(name) + int(type) + int(Int32(-1))
        }
        return bytes
    }

    static func insert(oid: UInt32, values: [String]) -> [UInt8] {
        var bytes = [UInt8(ascii: "I")] + int(oid) + [UInt8(ascii: "N")] + int(Int16(values.count))
        for value in values { bytes += [UInt8(ascii: "t")] + int(Int32(value.utf8.count)) + Array(value.utf8) }
        return bytes
    }

    /// A backend message: type, length, body.
    static func backend(_ type: Character, _ body: [UInt8]) -> [UInt8] {
        [type.asciiValue!] + int(Int32(body.count + 4)) + body
    }
}
