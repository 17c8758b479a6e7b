/// The change feed's logic, without I/O: what to apply of the messages
/// PostgreSQL streams, which position the SQLite file durably holds, what
/// to confirm to PostgreSQL, and when to stop. The replica's streaming
/// loop runs the I/O around it (``PostgresReplica/stream(from:record:)``);
/// tests drive it with messages alone.
///
/// Positions:
/// - ``applied``: every transaction up to here is applied and committed in
///   SQLite (the file's stored position, or a later keepalive's position
///   once everything before it was applied: no transaction of the
///   replica's tables commits in between). Confirmed to PostgreSQL as
///   flushed, so it may release its log before it, and claimed by the
///   replica's status.
/// - ``received``: the furthest position PostgreSQL said it sent.
///
/// A transaction that ends at or before ``applied`` is skipped (PostgreSQL
/// resends from the slot's confirmed position, which may be behind the
/// file); one that the initial copy's snapshot saw is stored as a position
/// only.
struct FeedStateMachine {
    /// Where the machine is.
    private enum State {
        case streaming
        /// A table changed in the catalog at `position`: stop once
        /// everything before it is applied.
        case stopping(ReplicaError, at: LogSequenceNumber)
        /// The feed must end with this error, after the last batch's
        /// transactions.
        case stopped(ReplicaError)
    }

    private var state = State.streaming
    private var assembler: ChangeAssembler
    private let snapshot: CopySnapshot?
    /// The position of the last keepalive of the batch being handled.
    private var boundary: LogSequenceNumber?

    private(set) var applied: LogSequenceNumber
    private(set) var received: LogSequenceNumber
    /// The end of PostgreSQL's log, as the last data message said.
    private(set) var serverEnd: LogSequenceNumber?

    /// A feed of `tables` whose file holds everything up to `position`.
    init(tables: [SourceTable], position: LogSequenceNumber, snapshot: CopySnapshot?) {
        assembler = ChangeAssembler(tables: tables)
        self.snapshot = snapshot
        applied = position
        received = position
    }

    /// What a batch of messages asks for.
    struct Batch {
        /// The transactions to apply, in order, each whole.
        var transactions: [ReplicatedTransaction] = []
        /// A keepalive asked for a status update at once.
        var replyRequested = false
        /// Whether the batch brought the feed to PostgreSQL's end (a
        /// keepalive, sent only when PostgreSQL waits for more log).
        var caughtUp = false
    }

    /// Reads a batch of streamed messages.
    mutating func receive(_ messages: [StreamingMessage]) -> Batch {
        var batch = Batch()
        var payloads: [[UInt8]] = []
        for message in messages {
            if case .stopped = state { break }
            switch message {
            case .data(let start, let end, let payload):
                payloads.append(payload)
                received = max(received, start)
                serverEnd = max(serverEnd ?? end, end)
            case .keepalive(let end, let replyRequested):
                batch.replyRequested = batch.replyRequested || replyRequested
                received = max(received, end)
                // The messages before the keepalive end their transactions
                // (pgoutput sends a transaction whole, at its commit).
                assemble(&payloads, into: &batch)
                if case .stopped = state { break }
                if !assembler.hasOpenTransaction {
                    boundary = max(boundary ?? end, end)
                    batch.caughtUp = true
                }
            }
        }
        assemble(&payloads, into: &batch)
        batch.transactions = batch.transactions.filter { $0.endPosition > applied }
        if let snapshot {
            for index in batch.transactions.indices
            where snapshot.holds(
                transactionID: batch.transactions[index].transactionID,
                commitPosition: batch.transactions[index].commitPosition)
            {
                // The copy holds it already: only its position is stored.
                batch.transactions[index].changes = []
            }
        }
        return batch
    }

    /// Turns `payloads` into transactions of `batch`, and empties it; an
    /// error stops the feed after the transactions before it.
    private mutating func assemble(_ payloads: inout [[UInt8]], into batch: inout Batch) {
        guard !payloads.isEmpty else { return }
        let (complete, stop) = assembler.transactions(in: payloads)
        payloads = []
        batch.transactions += complete
        if let stop { state = .stopped(stop) }
    }

    /// Records that the batch's transactions are applied and committed
    /// through `position` (`nil`: none was), and returns the error that
    /// ends the feed, if any.
    mutating func batchApplied(through position: LogSequenceNumber?) -> ReplicaError? {
        if let position { applied = max(applied, position) }
        switch state {
        case .stopped(let error):
            boundary = nil
            return error
        case .streaming, .stopping:
            if let boundary { applied = max(applied, boundary) }
            boundary = nil
            received = max(received, applied)
            return stopError()
        }
    }

    /// A replicated table changed in the catalog (a `DROP` or `ALTER` that
    /// no row change followed sends nothing in the feed); `position` is a
    /// log position after the change. The feed applies what came before,
    /// then ends with `error`; returns `error` when that is already done.
    mutating func catalogChanged(_ error: ReplicaError, at position: LogSequenceNumber) -> ReplicaError? {
        guard case .streaming = state else { return stopError() }
        state = .stopping(error, at: position)
        return stopError()
    }

    private func stopError() -> ReplicaError? {
        switch state {
        case .streaming: nil
        case .stopping(let error, let position): applied >= position ? error : nil
        case .stopped(let error): error
        }
    }

    /// The standby status update that confirms ``applied``.
    func statusUpdate(replyRequested: Bool, now: Int64) -> [UInt8] {
        StreamingMessage.statusUpdate(
            received: max(received, applied), applied: applied, replyRequested: replyRequested, now: now)
    }
}
