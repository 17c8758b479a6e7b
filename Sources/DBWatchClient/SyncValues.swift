import Foundation

/// The values of a served query, decoded as the server's `Value` type:
/// the current value at once, then a new one after every commit that
/// changes it (made by ``SyncClient/values(of:params:as:)``).
///
/// ```swift
/// for try await players in client.values(of: "leaderboard", as: [Player].self) { render(players) }
/// ```
///
/// Each iteration subscribes; its end (the consuming task cancelled, the
/// iterator dropped, an error thrown) unsubscribes. Buffering: the newest
/// value only; a consumer slower than the commits skips values.
public struct SyncValues<Value: Decodable & Sendable>: AsyncSequence, Sendable {
    /// A value of the query.
    public typealias Element = Value
    /// The first error: ``SyncClientError`` (the query failed or was
    /// refused), or the decoder's `DecodingError`.
    public typealias Failure = any Error

    let connection: SyncConnection
    let query: String
    let params: [String: String]

    /// The same values with errors delivered as `.failure` elements
    /// instead of ending the sequence: after a failed fetch on the server
    /// the subscription stays, and a later commit that fixes it brings a
    /// `.success` again. It ends when the consumer stops, the client
    /// closes, or after a final error (a refusal).
    ///
    /// ```swift
    /// for await result in client.values(of: "leaderboard", as: [Player].self).results {
    ///     switch result {
    ///     case .success(let players): render(players)
    ///     case .failure(let error): show(error)
    ///     }
    /// }
    /// ```
    public var results: SyncResults<Value> { SyncResults(values: self) }

    /// Subscribes, on the client's connection (opened if needed).
    ///
    /// ```swift
    /// var iterator = client.values(of: "leaderboard", as: [Player].self).makeAsyncIterator()
    /// let players = try await iterator.next()   // the current value
    /// ```
    public func makeAsyncIterator() -> Iterator {
        Iterator(subscription: SyncSubscription(connection: connection, query: query, params: params, newestOnly: true))
    }

    /// Iterates the values; throws the first error.
    public struct Iterator: AsyncIteratorProtocol {
        let subscription: SyncSubscription
        private var isDone = false

        init(subscription: SyncSubscription) {
            self.subscription = subscription
        }

        /// The next value; `nil` once cancelled or closed. Throws the first
        /// error, then ends.
        public mutating func next() async throws -> Value? {
            guard !isDone, let event = await subscription.next() else {
                isDone = true
                return nil
            }
            do {
                switch event {
                case .update(let update):
                    return try update.decode(Value.self, using: subscription.connection.configuration.decoder)
                case .failure(let error, _):
                    throw error
                }
            } catch {
                isDone = true
                subscription.end()
                throw error
            }
        }
    }
}

/// The `Result` form of ``SyncValues``: see ``SyncValues/results``.
///
/// ```swift
/// for await result in client.values(of: "leaderboard", as: [Player].self).results { … }
/// ```
public struct SyncResults<Value: Decodable & Sendable>: AsyncSequence, Sendable {
    /// A value, or an error of the query (a failed fetch on the server, a
    /// refusal, a value that does not decode).
    public typealias Element = Result<Value, any Error>
    /// Never fails: errors are elements.
    public typealias Failure = Never

    let values: SyncValues<Value>

    /// Subscribes, on the client's connection (opened if needed).
    ///
    /// ```swift
    /// var iterator = client.values(of: "leaderboard", as: [Player].self).results.makeAsyncIterator()
    /// let first = await iterator.next()   // .success(players) or .failure(error)
    /// ```
    public func makeAsyncIterator() -> Iterator {
        Iterator(
            subscription: SyncSubscription(
                connection: values.connection, query: values.query, params: values.params, newestOnly: true))
    }

    /// Iterates results until cancelled, closed, or after a final error.
    public struct Iterator: AsyncIteratorProtocol {
        let subscription: SyncSubscription

        /// The next result; `nil` once cancelled, closed, or after a final
        /// error.
        public mutating func next() async -> Result<Value, any Error>? {
            switch await subscription.next() {
            case .update(let update)?:
                return Result { try update.decode(Value.self, using: subscription.connection.configuration.decoder) }
            case .failure(let error, _)?:
                return .failure(error)
            case nil:
                return nil
            }
        }
    }
}

/// The updates of a served query, one per batch that changes it (made by
/// ``SyncClient/changes(of:params:)``): keyed changes and the rows they
/// give, for a consumer that renders changes rather than whole values.
///
/// ```swift
/// for try await update in client.changes(of: "leaderboard") { apply(update.changes, rows: update.rows) }
/// ```
///
/// Buffering: every update is kept until consumed. Throws the first error
/// of the query (``SyncClientError``).
public struct SyncChanges: AsyncSequence, Sendable {
    /// An update of the query.
    public typealias Element = SyncUpdate
    /// The query's first error.
    public typealias Failure = any Error

    let connection: SyncConnection
    let query: String
    let params: [String: String]

    /// Subscribes, on the client's connection (opened if needed).
    ///
    /// ```swift
    /// var iterator = client.changes(of: "leaderboard").makeAsyncIterator()
    /// let snapshot = try await iterator.next()   // kind .snapshot, reason "subscribed"
    /// ```
    public func makeAsyncIterator() -> Iterator {
        Iterator(
            subscription: SyncSubscription(connection: connection, query: query, params: params, newestOnly: false))
    }

    /// Iterates the updates; throws the first error.
    public struct Iterator: AsyncIteratorProtocol {
        let subscription: SyncSubscription
        private var isDone = false

        init(subscription: SyncSubscription) {
            self.subscription = subscription
        }

        /// The next update; `nil` once cancelled or closed. Throws the
        /// first error, then ends.
        public mutating func next() async throws -> SyncUpdate? {
            guard !isDone, let event = await subscription.next() else {
                isDone = true
                return nil
            }
            switch event {
            case .update(let update):
                return update
            case .failure(let error, _):
                isDone = true
                subscription.end()
                throw error
            }
        }
    }
}

/// Owns one subscription of a sequence's iterator: dropping it
/// unsubscribes.
final class SyncSubscription {
    let connection: SyncConnection
    private let handle: Int
    private var events: AsyncStream<SyncConnection.Event>.Iterator

    init(connection: SyncConnection, query: String, params: [String: String], newestOnly: Bool) {
        self.connection = connection
        let (handle, events) = connection.subscribe(
            query, params: params, buffering: newestOnly ? .bufferingNewest(1) : .unbounded)
        self.handle = handle
        self.events = events.makeAsyncIterator()
    }

    /// The next event; `nil` once the subscription ended.
    func next() async -> SyncConnection.Event? {
        await events.next(isolation: #isolation)
    }

    /// Unsubscribes now.
    func end() {
        connection.unsubscribe(handle)
    }

    deinit {
        connection.unsubscribe(handle)
    }
}

@available(*, unavailable, message: "an iterator belongs to one consuming task")
extension SyncValues.Iterator: Sendable {}

@available(*, unavailable, message: "an iterator belongs to one consuming task")
extension SyncResults.Iterator: Sendable {}

@available(*, unavailable, message: "an iterator belongs to one consuming task")
extension SyncChanges.Iterator: Sendable {}
