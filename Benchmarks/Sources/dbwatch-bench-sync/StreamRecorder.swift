import BenchProcess
import NIOHTTP1
import Synchronization

/// What the clients of one workload received: each sync client's session,
/// each client's latest round (the number after `marker` in a value or a
/// batch), when each round first arrived anywhere, the snapshots, the
/// bytes; and, for a few clients, the events themselves.
final class StreamRecorder: EventStreamListener {
    struct Counts {
        /// Clients that received a first event (a `hello` or a first value).
        var answered = 0
        /// Clients whose latest round is at least the armed target.
        var reached = 0
        /// Snapshot entries received, all clients together.
        var snapshots = 0
        /// Bytes of `data:` lines received, all clients together.
        var dataBytes = 0
        /// Streams refused (not 200) or ended.
        var refused = 0
        var ended = 0
        /// `error` messages of the sync protocol.
        var errors = 0
    }

    private struct State {
        var counts = Counts()
        var answered: [Bool]
        var sessions: [String?]
        var latest: [Int]
        var target = Int.max
        var receipts: [Int: UInt64] = [:]
        var kept: [Int: [[UInt8]]] = [:]
        var batchTimes: [UInt64] = []
        var lastError = ""
    }

    private let state: Mutex<State>
    private let marker: [UInt8]
    /// Clients whose events are kept whole (``events(of:)``).
    private let keptClients: Set<Int>
    /// Whether a batch's receipt is noted for every round it holds (a batch
    /// of several subscriptions), not only its first.
    private let readsEveryRound: Bool

    init(clients: Int, marker: String, keepingEventsOf keptClients: Set<Int> = [], readsEveryRound: Bool = false) {
        state = Mutex(
            State(
                answered: Array(repeating: false, count: clients),
                sessions: Array(repeating: nil, count: clients),
                latest: Array(repeating: Int.min, count: clients)))
        self.marker = Array(marker.utf8)
        self.keptClients = keptClients
        self.readsEveryRound = readsEveryRound
    }

    func received(_ event: ServerEvent, client: Int, at time: UInt64) {
        let name = String(decoding: event.name, as: UTF8.self)
        let session = name == "hello" ? JSONScan.string(after: Self.sessionField, in: event.data) : nil
        let round = name.isEmpty || name == "batch" ? JSONScan.integer(after: marker, in: event.data) : nil
        let snapshots = name == "batch" ? JSONScan.count(of: Self.snapshotKind, in: event.data) : 0
        let otherRounds =
            readsEveryRound && name == "batch" ? JSONScan.integers(after: marker, in: event.data).dropFirst() : []
        let kept = keptClients.contains(client) ? Array(event.data) : nil
        state.withLock { state in
            if !state.answered[client] {
                state.answered[client] = true
                state.counts.answered += 1
            }
            state.counts.dataBytes += event.data.count
            state.counts.snapshots += snapshots
            if let session { state.sessions[client] = session }
            if name == "error" || name == "end" {
                state.counts.errors += 1
                state.lastError = String(decoding: event.data, as: UTF8.self)
            }
            if let kept { state.kept[client, default: []].append(kept) }
            if name == "batch" { state.batchTimes.append(time) }
            if let round {
                if round > state.latest[client] {
                    if state.latest[client] < state.target && round >= state.target { state.counts.reached += 1 }
                    state.latest[client] = round
                }
                if state.receipts[round] == nil { state.receipts[round] = time }
            }
            for other in otherRounds where state.receipts[other] == nil { state.receipts[other] = time }
        }
    }

    func ended(client: Int, status: HTTPResponseStatus?) {
        state.withLock { state in
            if status != nil { state.counts.refused += 1 } else { state.counts.ended += 1 }
        }
    }

    var counts: Counts { state.withLock { $0.counts } }

    /// The session id of a sync client, once its `hello` arrived.
    func session(of client: Int) -> String? { state.withLock { $0.sessions[client] } }

    /// When round `round` first arrived at any client.
    func receipt(of round: Int) -> UInt64? { state.withLock { $0.receipts[round] } }

    /// The kept events of `client`, in order (their `data:` lines).
    func events(of client: Int) -> [[UInt8]] { state.withLock { $0.kept[client] ?? [] } }

    /// When each batch arrived, all clients together, in arrival order.
    var batchTimes: [UInt64] { state.withLock { $0.batchTimes } }

    /// The last `error` or `end` message received.
    var lastError: String { state.withLock { $0.lastError } }

    /// Counts, from now, the clients whose latest round is `round` or later.
    func arm(round: Int) {
        state.withLock { state in
            state.target = round
            state.counts.reached = state.latest.count { $0 != Int.min && $0 >= round }
        }
    }

    /// Waits until `condition` holds (checked every millisecond); throws
    /// after `timeout`, or as soon as a stream was refused or ended.
    func wait(
        for what: String, timeout: Duration, until condition: (Counts) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            let counts = counts
            if condition(counts) { return }
            if counts.refused > 0 || counts.ended > 0 {
                throw SyncBenchError(
                    description: "\(what): \(counts.refused) streams refused, \(counts.ended) ended (\(lastError))")
            }
            if ContinuousClock.now > deadline {
                throw SyncBenchError(
                    description:
                        "\(what): not within \(timeout) (answered \(counts.answered), reached \(counts.reached), snapshots \(counts.snapshots), errors \(counts.errors) \(lastError))"
                )
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    private static let sessionField = Array(#""session":""#.utf8)
    private static let snapshotKind = Array(#""kind":"snapshot""#.utf8)
}

struct SyncBenchError: Error, CustomStringConvertible {
    let description: String
}
