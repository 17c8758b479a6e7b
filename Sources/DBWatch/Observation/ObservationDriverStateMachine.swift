/// A subscriber as an ``ObservationDriverStateMachine`` sees it: a
/// ``ResultMailbox`` (tests use a recording stub). Results are handed in
/// under the driver's lock, which keeps their order; the consumer is woken
/// with the returned `Wakeup` once that lock is released.
protocol DriverSubscriber<Value>: AnyObject {
    associatedtype Value
    associatedtype Wakeup
    /// Whether it has been handed a first result.
    var hasReceived: Bool { get }
    /// Whether it wants ``noteUnchangedWakingLater(at:)`` calls.
    var reportsUnchanged: Bool { get }
    /// Hands a result fetched at `position` in (latest wins); returns the
    /// consumer to wake, if it waits.
    func offerWakingLater(_ result: Result<Value, any Error>, at position: UInt64) -> Wakeup?
    /// A fetch at `position` found the result it was handed last unchanged.
    func noteUnchangedWakingLater(at position: UInt64) -> Wakeup?
    /// Ends it after `last` (when given); returns the consumer to wake, if it waits.
    func finishWakingLater(after last: Result<Value, any Error>?, at position: UInt64) -> Wakeup?
}

extension ResultMailbox: DriverSubscriber {}

/// The states of one observed request (``ObservationDriver``) and their
/// transitions: one fetch in flight and at most one pending, the rate
/// limit's wait, the last subscriber leaving, the database closing. Each
/// transition changes the state and returns what the driver must do once
/// its lock is released: queue a fetch, start or cancel the rate limit's
/// timer, cancel a running fetch, wake consumers.
///
/// Results are handed to the subscribers inside the transitions (under the
/// driver's lock, so that none receives an older result after a newer one);
/// only the wake-ups wait for the lock's release.
///
/// Rate limit: after a value, the next fetch for the subscribers waits
/// until the interval has passed. A subscriber that joins meanwhile is not
/// made to wait: it gets at once a result that no commit outdated (one
/// fetched for an earlier newcomer), or a fetch starts now, whose result
/// goes to the newcomers only (the others keep waiting for the interval).
/// Until the next value for everyone, the driver remembers what each
/// newcomer got (`primed`), so that it is not delivered to it twice.
struct ObservationDriverStateMachine<Subscriber: DriverSubscriber, Timer> {
    typealias Element = Result<Subscriber.Value, any Error>

    /// The fetch queued or running.
    struct Fetch {
        /// The running fetch, to cancel when nobody waits for it any more.
        var running: AccessCancellation?
        /// A commit touched the region after this fetch was queued: its
        /// result may be outdated, another fetch must follow.
        var missedChange = false
        /// Started for newcomers while the rate limit holds back a change
        /// from the others: unless the interval has passed when it ends, its
        /// result goes to the newcomers only.
        var forNewcomers = false
    }

    /// The rate limit holds back a change until its interval has passed.
    struct Waiting {
        /// The timer that ends the wait, once started.
        var timer: Timer?
        /// Which ``Action/startTimer`` this wait belongs to.
        var token: UInt32
        /// The result newcomers got during the wait, while no commit
        /// outdated it, with the position it was fetched at.
        var current: (result: Element, position: UInt64)?
    }

    enum Phase {
        /// No fetch queued or running; the last result is current.
        case idle
        case fetching(Fetch)
        case waiting(Waiting)
        /// The last subscriber left: no new one is taken, no fetch runs.
        case stopped
        /// The database closed: subscribers, old and new, get its error and end.
        case closed
    }

    /// The rate limit at the moment of a transition.
    struct RateLimitReading {
        /// Time elapsed on the limit's clock (see ``ObservationOptions/RateLimit``).
        var now: Duration
        var interval: Duration
    }

    /// What the driver does outside its lock, in this order.
    struct Action {
        var wakeups: [Subscriber.Wakeup] = []
        /// Queue a fetch of the request.
        var fetch = false
        /// Start a timer until this offset on the limit's clock, then call
        /// ``timerFired(_:)`` with the token (and ``timerStarted(_:token:)``
        /// once it is created).
        var startTimer: (token: UInt32, until: Duration)?
        var cancelTimer: Timer?
        var cancelFetch: AccessCancellation?
        /// The last result changed: from this one (for logging).
        var replaced: Element??
        /// Tell the center that the driver stopped.
        var stopped = false
    }

    typealias Comparison = (Element, Element?) -> Bool

    // Stored in this order, which packs them best: an idle observation
    // keeps one of these, and must stay small.

    /// Usually one: an array costs less memory than a dictionary.
    private(set) var subscribers: [Subscriber] = []
    /// What newcomers got while the rate limit held the others back; empty
    /// (no allocation) otherwise.
    private var primed: [ObjectIdentifier: Element] = [:]
    /// Fetches, deliveries and notifications, counted as they happen.
    private(set) var statistics = ObservationStatistics()
    /// Rate limit: when the next fetch for everyone may start (zero: now).
    private var nextFetchAllowedAt: Duration = .zero
    /// The position of the last fetch for everyone: ``lastResult`` is the
    /// result at that position (an equal result is not delivered again).
    private(set) var lastPosition: UInt64 = 0
    private(set) var phase: Phase = .idle
    private var lastTimerToken: UInt32 = 0
    /// How many of the last fetches in a row were slow (at most 2).
    private var slowFetchStreak: UInt8 = 0
    /// The last result delivered to every subscriber, for deduplication and
    /// late subscribers.
    private(set) var lastResult: Element?

    var isStopped: Bool {
        if case .stopped = phase { true } else { false }
    }

    /// Two slow fetches in a row: the next runs in a batch of its own.
    var fetchesAlone: Bool { slowFetchStreak >= 2 }

    // MARK: - Subscribers

    /// Adds a subscriber; `nil` when the driver stopped (nothing added).
    /// `startFetch` for a new driver's first subscriber. Otherwise it gets
    /// the current result at once when one exists that no commit outdated,
    /// or the result of the fetch in flight, or of a fetch started now.
    mutating func add(_ subscriber: Subscriber, startFetch: Bool) -> Action? {
        var action = Action()
        switch phase {
        case .stopped:
            return nil
        case .closed:
            subscribers.append(subscriber)
            action.wakeups +=
                subscriber.finishWakingLater(after: .failure(SQLiteError.databaseClosed), at: lastPosition)
                .map { [$0] } ?? []
            return action
        case .idle:
            subscribers.append(subscriber)
            if startFetch {
                phase = .fetching(Fetch())
                action.fetch = true
            } else if let lastResult, let wakeup = subscriber.offerWakingLater(lastResult, at: lastPosition) {
                action.wakeups.append(wakeup)
            }
        case .fetching:
            subscribers.append(subscriber)
        case .waiting(let waiting):
            subscribers.append(subscriber)
            if let current = waiting.current {
                primed[ObjectIdentifier(subscriber)] = current.result
                if let wakeup = subscriber.offerWakingLater(current.result, at: current.position) {
                    action.wakeups.append(wakeup)
                }
            } else {
                action.cancelTimer = waiting.timer
                phase = .fetching(Fetch(forNewcomers: true))
                action.fetch = true
            }
        }
        return action
    }

    /// Removes a subscriber; the last one stops the driver, cancelling its
    /// fetch or timer (nobody waits for them).
    mutating func remove(_ id: ObjectIdentifier) -> (removed: Bool, action: Action) {
        var action = Action()
        let count = subscribers.count
        subscribers.removeAll { ObjectIdentifier($0) == id }
        if !primed.isEmpty { primed[id] = nil }
        let removed = subscribers.count < count
        guard subscribers.isEmpty, !isStopped else { return (removed, action) }
        switch phase {
        case .fetching(let fetch): action.cancelFetch = fetch.running
        case .waiting(let waiting): action.cancelTimer = waiting.timer
        case .idle, .stopped, .closed: break
        }
        phase = .stopped
        primed = [:]
        action.stopped = true
        return (removed, action)
    }

    /// The database closed: every subscriber ends with its error (unless
    /// it was the last result it got); later subscribers too.
    mutating func close(isSame: Comparison) -> Action {
        var action = Action()
        switch phase {
        case .closed, .stopped: return action
        case .fetching(let fetch): action.cancelFetch = fetch.running
        case .waiting(let waiting): action.cancelTimer = waiting.timer
        case .idle: break
        }
        phase = .closed
        primed = [:]
        let error = SQLiteError.databaseClosed
        let delivered = isSame(.failure(error), lastResult)
        action.wakeups = subscribers.compactMap { subscriber in
            subscriber.finishWakingLater(
                after: delivered && subscriber.hasReceived ? nil : .failure(error), at: lastPosition)
        }
        return action
    }

    /// An error for every subscriber (the database file was replaced).
    mutating func deliver(_ error: any Error) -> Action {
        lastResult = .failure(error)
        primed = [:]
        statistics.valuesDelivered += 1
        return Action(wakeups: subscribers.compactMap { $0.offerWakingLater(.failure(error), at: lastPosition) })
    }

    // MARK: - Fetching

    /// A commit touched the region: fetch now, or after the fetch in
    /// flight, or once the rate limit's interval has passed.
    mutating func commitDidTouchRegion(rateLimit: RateLimitReading?) -> Action {
        statistics.changesNotified += 1
        var action = Action()
        switch phase {
        case .stopped, .closed:
            break
        case .fetching(var fetch):
            fetch.missedChange = true
            phase = .fetching(fetch)
        case .waiting(var waiting):
            waiting.current = nil
            phase = .waiting(waiting)
        case .idle:
            if let until = heldBackUntil(rateLimit) {
                action.startTimer = wait(until: until)
            } else {
                phase = .fetching(Fetch())
                action.fetch = true
            }
        }
        return action
    }

    /// The rate limit's timer (see ``Action/startTimer``) was created:
    /// returns it to cancel when its wait is over already.
    mutating func timerStarted(_ timer: Timer, token: UInt32) -> Timer? {
        guard case .waiting(var waiting) = phase, waiting.token == token else { return timer }
        waiting.timer = timer
        phase = .waiting(waiting)
        return nil
    }

    /// The rate limit's interval has passed: fetch for everyone.
    mutating func timerFired(_ token: UInt32) -> Action {
        guard case .waiting(let waiting) = phase, waiting.token == token else { return Action() }
        phase = .fetching(Fetch())
        return Action(fetch: true)
    }

    /// A queued fetch starts running; `false` when nobody wants it any more.
    mutating func fetchWillRun(_ cancellation: AccessCancellation) -> Bool {
        switch phase {
        case .stopped, .closed:
            return false
        case .fetching(var fetch):
            fetch.running = cancellation
            phase = .fetching(fetch)
            return true
        case .idle, .waiting:
            return true
        }
    }

    /// A fetch at `position` ended with `result`; `missedCommit`: a commit
    /// since its snapshot touched the region it read. Hands the result to
    /// the subscribers that do not have it (all of them, or, while the rate
    /// limit holds a change back, the newcomers only), tells those that
    /// have it and ask (``DriverSubscriber/reportsUnchanged``) that it is
    /// still current at `position`, and says what runs next.
    mutating func fetchDidFinish(
        _ result: Element, at position: UInt64, missedCommit: Bool, isSlow: Bool, rateLimit: RateLimitReading?,
        isSame: Comparison
    ) -> Action {
        statistics.fetches += 1
        slowFetchStreak = isSlow ? min(slowFetchStreak + 1, 2) : 0
        var action = Action()
        let fetch: Fetch
        switch phase {
        case .closed, .stopped:
            // After the database closed, subscribers only get its error.
            return action
        case .fetching(let current):
            fetch = current
        case .idle, .waiting:
            fetch = Fetch()
        }
        let missed = fetch.missedChange || missedCommit
        if fetch.forNewcomers, let until = heldBackUntil(rateLimit) {
            for subscriber in subscribers where !subscriber.hasReceived {
                primed[ObjectIdentifier(subscriber)] = result
                if let wakeup = subscriber.offerWakingLater(result, at: position) { action.wakeups.append(wakeup) }
            }
            action.startTimer = wait(until: until, current: missed ? nil : (result, position))
            return action
        }
        let changed = !isSame(result, lastResult)
        for subscriber in subscribers {
            let isNew =
                if let got = primed.isEmpty ? nil : primed[ObjectIdentifier(subscriber)] {
                    !isSame(result, got)
                } else {
                    changed || !subscriber.hasReceived
                }
            let wakeup =
                isNew
                ? subscriber.offerWakingLater(result, at: position)
                : subscriber.reportsUnchanged ? subscriber.noteUnchangedWakingLater(at: position) : nil
            if let wakeup { action.wakeups.append(wakeup) }
        }
        lastPosition = position
        if !primed.isEmpty { primed = [:] }
        if changed {
            action.replaced = .some(lastResult)
            lastResult = result
            statistics.valuesDelivered += 1
            if let rateLimit { nextFetchAllowedAt = rateLimit.now + rateLimit.interval }
        }
        if !missed {
            phase = .idle
        } else if let until = heldBackUntil(rateLimit) {
            action.startTimer = wait(until: until)
        } else {
            phase = .fetching(Fetch())
            action.fetch = true
        }
        return action
    }

    /// When the rate limit lets the next fetch for everyone start, if that
    /// is later than now.
    private func heldBackUntil(_ rateLimit: RateLimitReading?) -> Duration? {
        guard let rateLimit, rateLimit.now < nextFetchAllowedAt else { return nil }
        return nextFetchAllowedAt
    }

    /// Enters the rate limit's wait; returns the timer to start.
    private mutating func wait(
        until offset: Duration, current: (result: Element, position: UInt64)? = nil
    ) -> (token: UInt32, until: Duration) {
        lastTimerToken &+= 1
        phase = .waiting(Waiting(timer: nil, token: lastTimerToken, current: current))
        return (lastTimerToken, offset)
    }
}
