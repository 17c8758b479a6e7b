/// An error of the live queries that a client sees with its HTTP status:
/// throw ``badRequest(_:)`` or ``forbidden(_:)`` from a route, a request's
/// initializer or a WebSocket's request hook to answer 400 or 403 with a
/// JSON body (on a WebSocket, an error message with the same text). Both
/// adapters (Hummingbird, Vapor) answer it with ``httpStatus`` and the one
/// JSON error shape, `{"message": …}` (see <doc:ErrorAnswers>).
///
/// ```swift
/// guard let limit = request.uri.queryParameters.get("limit", as: Int.self), limit > 0 else {
///     throw LiveQueriesError.badRequest("limit must be a positive integer")
/// }
/// ```
public struct LiveQueriesError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case badRequest
        case forbidden
        case shuttingDown
        case databaseClosed
        case databaseReplaced
        case tooManyObservations
        case unknownQuery
        case unknownSession
        case duplicateSubscription
        case tooManySubscriptions
        case positionTooOld
    }

    private let code: Code
    /// What a client is told.
    ///
    /// ```swift
    /// LiveQueriesError.badRequest("limit must be positive").message   // "limit must be positive"
    /// ```
    public let message: String

    private init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// The request cannot be served (bad parameters): 400.
    ///
    /// ```swift
    /// throw LiveQueriesError.badRequest("unknown sort order")
    /// ```
    public static func badRequest(_ message: String) -> LiveQueriesError {
        LiveQueriesError(code: .badRequest, message: message)
    }

    /// The client may not read what it asked for (another user's rows): 403.
    ///
    /// ```swift
    /// guard filter.owner == user.id else { throw LiveQueriesError.forbidden("these are not your todos") }
    /// ```
    public static func forbidden(_ message: String) -> LiveQueriesError {
        LiveQueriesError(code: .forbidden, message: message)
    }

    /// A sync subscription names a query the server does not serve: 404.
    ///
    /// ```swift
    /// default: throw LiveQueriesError.unknownQuery(subscription.query)
    /// ```
    public static func unknownQuery(_ name: String) -> LiveQueriesError {
        LiveQueriesError(code: .unknownQuery, message: "no query named \"\(name.prefix(100))\"")
    }

    /// A sync message names a session that does not exist (or ended): 404.
    package static let unknownSession = LiveQueriesError(
        code: .unknownSession, message: "no such sync session: it ended, or never existed")

    /// A sync subscription's id is already used on its connection: 409.
    package static func duplicateSubscription(_ id: String) -> LiveQueriesError {
        LiveQueriesError(code: .duplicateSubscription, message: "subscription id \"\(id)\" is already used")
    }

    /// A sync connection asked for more subscriptions than allowed: 429.
    package static func tooManySubscriptions(_ limit: Int) -> LiveQueriesError {
        LiveQueriesError(
            code: .tooManySubscriptions, message: "a connection may hold at most \(limit) subscriptions")
    }

    /// A catch-up asked from a position the history no longer holds: 410.
    package static let positionTooOld = LiveQueriesError(
        code: .positionTooOld, message: "the history no longer holds this position: fetch the whole value")

    /// A catch-up asked from a position the server cannot bring forward (of
    /// another epoch, later than the server's, or whose value it does not
    /// know): 410, reason `positionTooOld`, with `message` saying which.
    package static func positionUnknown(_ message: String) -> LiveQueriesError {
        LiveQueriesError(code: .positionTooOld, message: message)
    }

    /// The server is shutting down: 503.
    ///
    /// ```swift
    /// catch let error as LiveQueriesError where error == .shuttingDown { … }
    /// ```
    public static let shuttingDown = LiveQueriesError(code: .shuttingDown, message: "the server is shutting down")

    /// The database is closed: 503.
    ///
    /// ```swift
    /// catch let error as LiveQueriesError where error == .databaseClosed { … }
    /// ```
    public static let databaseClosed = LiveQueriesError(code: .databaseClosed, message: "the database is closed")

    /// The database file was replaced or deleted while served: 503. The
    /// server reads a file that no path names any more; restart it (or
    /// reopen the database) to serve the new file.
    ///
    /// ```swift
    /// catch let error as LiveQueriesError where error == .databaseReplaced { … }
    /// ```
    public static let databaseReplaced = LiveQueriesError(
        code: .databaseReplaced, message: "the database file was replaced or deleted")

    /// The server already runs ``LiveQueriesConfiguration/maxObservations``
    /// shared observations and this request would start one more: 503 with
    /// `Retry-After`. Streams already open go on; a request equal to one
    /// already observed (in the same scope) still joins it.
    ///
    /// ```swift
    /// catch let error as LiveQueriesError where error == .tooManyObservations { … }
    /// ```
    public static let tooManyObservations = LiveQueriesError(
        code: .tooManyObservations,
        message: "too many distinct live queries at once: retry later, or ask for one that is already observed")

    /// The message.
    ///
    /// ```swift
    /// "\(LiveQueriesError.shuttingDown)"   // "the server is shutting down"
    /// ```
    public var description: String { message }

    /// The HTTP status a client receives: 400, 403, 404, 409, 410, 429 or 503.
    ///
    /// ```swift
    /// LiveQueriesError.forbidden("not yours").httpStatus   // 403
    /// ```
    public var httpStatus: Int {
        switch code {
        case .badRequest: 400
        case .forbidden: 403
        case .unknownQuery, .unknownSession: 404
        case .duplicateSubscription: 409
        case .positionTooOld: 410
        case .tooManySubscriptions: 429
        case .shuttingDown, .databaseClosed, .databaseReplaced, .tooManyObservations: 503
        }
    }

    /// The error's name in the sync protocol's error messages (`"reason"`).
    package var reason: String {
        switch code {
        case .badRequest: "badRequest"
        case .forbidden: "forbidden"
        case .shuttingDown: "shuttingDown"
        case .databaseClosed: "databaseClosed"
        case .databaseReplaced: "databaseReplaced"
        case .tooManyObservations: "tooManyObservations"
        case .unknownQuery: "unknownQuery"
        case .unknownSession: "unknownSession"
        case .duplicateSubscription: "duplicateSubscription"
        case .tooManySubscriptions: "tooManySubscriptions"
        case .positionTooOld: "positionTooOld"
        }
    }

    /// Whether the client may retry the same request later (a 503 with `Retry-After`).
    package var isRetryable: Bool { code == .tooManyObservations }
}
