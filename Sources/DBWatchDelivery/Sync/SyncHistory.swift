/// The recent changes of one shared sync subscription (a ``SyncFeed``):
/// each step takes the value at one position to the value at the next,
/// oldest first, bounded in bytes. What a client that fell behind, or
/// resumes from a position, receives instead of a snapshot.
struct SyncHistory {
    /// One step: from the value at `from` to the value at `to`.
    struct Step {
        let from: UInt64
        let to: UInt64
        /// The last position at which a fetch found the value at `from`
        /// (`from`, or later when fetches found it unchanged). Between
        /// `from` and it the value is not known: it may have changed and
        /// changed back.
        let known: UInt64
        /// The value at `from` is the value at every position from `known`
        /// up to, not including, this one (at most `to`): the first commit
        /// after it that touched what the query reads, as far as the feed
        /// knew when it published the next value. Between it and `to` the
        /// value is not known.
        let until: UInt64

        /// Whether the value at `from` is known to be the value at `position`.
        func holds(at position: UInt64) -> Bool {
            position == from || (known <= position && position < until)
        }
        /// The keyed changes as JSON (`{"delete":…,"upsert":…}`); `nil`
        /// when no changes exist between the two values (one of them has no
        /// key): a client must take a snapshot.
        let changes: [UInt8]?
    }

    /// What the history holds between two positions.
    enum Between {
        /// Nothing changed: the client holds the current value.
        case upToDate
        /// These steps, in order.
        case steps(ArraySlice<Step>)
        /// The history no longer reaches back there.
        case tooOld
        /// A step on the way has no changes.
        case reset
    }

    private(set) var steps: [Step] = []
    private var head = 0
    private(set) var bytes = 0
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// The oldest position a client may stand at and still be brought
    /// forward, given the value at `current` (the latest value's position).
    func floor(current: UInt64) -> UInt64 {
        head < steps.count ? steps[head].from : current
    }

    mutating func append(_ step: Step) {
        steps.append(step)
        bytes += (step.changes?.count ?? 0) + 32
        while bytes > limit, head < steps.count - 1 {
            bytes -= (steps[head].changes?.count ?? 0) + 32
            head += 1
        }
        if head > 64, head * 2 > steps.count {
            steps.removeFirst(head)
            head = 0
        }
    }

    /// Whether a step starts at `position`: the value there was fetched,
    /// so it is known exactly.
    func hasStep(from position: UInt64) -> Bool {
        var low = head
        var high = steps.count
        while low < high {
            let middle = (low + high) / 2
            if steps[middle].from < position { low = middle + 1 } else { high = middle }
        }
        return low < steps.count && steps[low].from == position
    }

    /// The steps that take a client holding the value as of `position` to
    /// the latest value, at `current`.
    func between(_ position: UInt64, current: UInt64) -> Between {
        if position >= current { return .upToDate }
        guard head < steps.count, steps[head].from <= position else { return .tooOld }
        let slice = steps[firstEnding(after: position)...]
        if slice.contains(where: { $0.changes == nil }) { return .reset }
        return .steps(slice)
    }

    /// The steps that take a client holding the value as of `position` to
    /// the value at `end` (later than `position`), when the history knows
    /// the value at `end` exactly; `nil` when it does not (`end` lies
    /// between a value's fetch and the last position a fetch found it
    /// unchanged, between that and the next fetch, or after `currentUntil`).
    /// `current` is the latest value's position, `currentKnown` the last
    /// position a fetch found it at, and `currentUntil` the first position
    /// at which it may no longer be the value (or just past the database's
    /// position).
    func between(
        _ position: UInt64, end: UInt64, current: UInt64, currentKnown: UInt64, currentUntil: UInt64
    ) -> Between? {
        if end >= current {
            let holds = end == current || (currentKnown <= end && end < currentUntil)
            return holds ? between(position, current: current) : nil
        }
        // The step whose span holds `end`: the value there is the one it
        // starts from, if the step says it held there.
        let last = firstEnding(after: end)
        guard last < steps.count, steps[last].from <= end, steps[last].holds(at: end) else { return nil }
        if position >= steps[last].from { return .upToDate }
        guard head < steps.count, steps[head].from <= position else { return .tooOld }
        let slice = steps[firstEnding(after: position)..<last]
        if slice.contains(where: { $0.changes == nil }) { return .reset }
        return .steps(slice)
    }

    /// The index of the first step that ends after `position` (the value at
    /// `position` is the one that step starts from); `steps.count` for none.
    private func firstEnding(after position: UInt64) -> Int {
        var low = head
        var high = steps.count
        while low < high {
            let middle = (low + high) / 2
            if steps[middle].to <= position { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
