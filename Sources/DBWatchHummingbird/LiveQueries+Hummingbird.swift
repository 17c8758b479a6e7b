@_exported import DBWatchDelivery
@_exported import DBWatchMetrics
@_exported import DBWatchServiceLifecycle
import DBWatch
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

extension LiveQueries {
    /// The current value of `request` as a JSON answer, or an error answer
    /// in the one JSON shape with its status (see `HTTPAnswer`'s table in
    /// the DBWatchDelivery documentation): 400 for bad parameters, 503 (with
    /// `Retry-After`) when the database is busy or locked, 409 for a
    /// constraint, 507 for a full disk, 503 when the database is closed, its
    /// file was replaced or the server shuts down.
    ///
    /// ```swift
    /// router.get("leaderboard") { _, context in await live.current(TopPlayers(), context: context) }
    /// ```
    public func current<R: Queryable>(_ request: R, context: some RequestContext) async -> Response
    where R.Value: Encodable {
        Response(await currentAnswer(request, logger: context.logger, encode: Self.encodeJSON))
    }

    /// The current value of `request` as a JSON answer, the value writing
    /// its own JSON (see `JSONEncodedValue`); statuses as for an
    /// `Encodable` value.
    ///
    /// ```swift
    /// router.get("rows") { _, context in await live.current(RowsQuery(), context: context) }
    /// ```
    public func current<R: Queryable>(_ request: R, context: some RequestContext) async -> Response
    where R.Value: JSONEncodedValue {
        Response(await currentAnswer(request, logger: context.logger, encode: Self.encodeOwnJSON))
    }

    /// An error answer in the one JSON shape, `{"message": …, "code": …}`,
    /// with the status of `error` (a `LiveQueriesError`, a SQLite error, a
    /// decoding error, or Hummingbird's `HTTPError` and any other
    /// `HTTPResponseError` with its own status).
    ///
    /// ```swift
    /// router.get("player/:id") { request, context in
    ///     do { … } catch { return live.errorResponse(error, logger: context.logger) }
    /// }
    /// ```
    public func errorResponse(_ error: any Error, logger: Logger) -> Response {
        if !(error is LiveQueriesError), let error = error as? any HTTPResponseError {
            var response = Response(.error(status: error.status.code, message: Self.message(of: error)))
            // Its own fields (`Allow`, `WWW-Authenticate`), but not its body's.
            if let error = error as? HTTPError {
                for field in error.headers where field.name != .contentType && field.name != .contentLength {
                    response.headers.append(field)
                }
            }
            return response
        }
        return Response(errorAnswer(error, logger: logger))
    }

    /// What a client is told of an `HTTPResponseError`: `HTTPError`'s
    /// message, or the status's reason.
    static func message(of error: any HTTPResponseError) -> String {
        if let error = error as? HTTPError { return error.body ?? error.status.reasonPhrase }
        return error.status.reasonPhrase
    }
}

extension Response {
    /// The engine's answer as a Hummingbird response.
    package init(_ answer: HTTPAnswer) {
        self.init(
            status: HTTPResponse.Status(code: answer.status), headers: HTTPFields(answer.headers),
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}

extension HTTPFields {
    /// The engine's header fields.
    package init(_ fields: [(name: String, value: String)]) {
        self.init()
        for (name, value) in fields {
            if let name = HTTPField.Name(name) { append(HTTPField(name: name, value: value)) }
        }
    }
}

extension Frame {
    /// The frame's bytes for `transport` as one `ByteBuffer` shared by every client.
    func byteBuffer(_ transport: Transport) -> ByteBuffer {
        wire(transport) { ByteBuffer(bytes: $0) }
    }
}
