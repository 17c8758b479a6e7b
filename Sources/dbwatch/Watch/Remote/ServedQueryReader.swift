import AsyncHTTPClient
import DBWatch
import DBWatchClient
import Foundation
import NIOCore
import NIOHTTP1

/// Reads a query that a DBWatch server serves, for `watch`: its current
/// value (`--once`), or its server-sent events stream, followed across
/// dropped connections.
///
/// ```swift
/// let reader = ServedQueryReader(address: address, authorization: nil, client: client)
/// let keys = await reader.keyNames()
/// try await reader.follow(keyNames: keys, onResult: { print($0) }, onNotice: { print($0) })
/// ```
struct ServedQueryReader: Sendable {
    /// The served query.
    let address: ServedQueryAddress
    /// The `Authorization` field's value (`Bearer …`), if any.
    let authorization: String?
    /// The HTTP client.
    let client: HTTPClient
    /// How long a stream may send nothing, not even a keep-alive comment
    /// (`dbwatch serve` sends one every 15 s), before the connection counts
    /// as lost.
    static let readTimeout: TimeAmount = .seconds(60)
    /// The longest wait between two reconnections.
    static let maximumReconnectDelay: Duration = .seconds(30)

    /// An `event: error` of the stream: the query's fetch failed on the
    /// server (bad SQL, a busy database); the server keeps the stream.
    struct ServedError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }

        /// The error an `event: error`'s data describes: a ``SQLiteError``
        /// when it carries SQLite's result code (so that `watch` reports and
        /// exits as for a local query), this error otherwise.
        static func from(json data: String) -> any Error {
            let json = try? JSON.parse(Array(data.utf8))
            guard case .string(let message)? = json?["message"] else { return ServedError(message: data) }
            if case .number(let text)? = json?["code"], let code = Int32(text) {
                return SQLiteError(code: ResultCode(rawValue: code), message: message)
            }
            return ServedError(message: message)
        }
    }

    /// The key columns `GET /queries` names for the query; `nil` when the
    /// server does not list its queries (a server built on the
    /// integrations) or the query has no key.
    func keyNames() async -> [String]? {
        guard let response = try? await client.execute(request(address.listURL), timeout: .seconds(30)),
            response.status == .ok, let body = try? await response.body.collect(upTo: 16 << 20),
            case .array(let queries)? = try? JSON.parse(Array(body.readableBytesView))
        else { return nil }
        guard let entry = queries.first(where: { $0["name"] == .string(address.name) }),
            case .array(let names)? = entry["key"]
        else { return nil }
        return names.compactMap { name in
            if case .string(let name) = name { return name }
            return nil
        }
    }

    /// The query's current value.
    ///
    /// - Throws: ``CommandFailure`` when the server cannot be reached or
    ///   refuses; the query's own error as ``ServedError/from(json:)`` gives it.
    func current(keyNames: [String]?) async throws -> QueryResult {
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request(address.valueURL), timeout: .seconds(60))
        } catch {
            throw unreachable(error)
        }
        guard response.status == .ok else { throw await failure(of: response) }
        let body = try await response.body.collect(upTo: 1 << 30)
        return try value(Array(body.readableBytesView), keyNames: keyNames)
    }

    /// Follows the query's stream: each value and each error of the query
    /// goes to `onResult`; a lost connection (after a first value) is
    /// reopened after 1, 2, 4 … 30 s with `Last-Event-ID`, each said to
    /// `onNotice`. Returns never; ends by cancellation.
    ///
    /// - Throws: ``CommandFailure`` when the server cannot be reached before
    ///   a first value, refuses the request (4xx), or sends what is not a
    ///   value.
    func follow(
        keyNames: [String]?, onResult: (Result<QueryResult, any Error>) -> Void, onNotice: (String) -> Void
    ) async throws {
        var lastEventID: String?
        var received = false
        var delay: Duration = .seconds(1)
        while true {
            try Task.checkCancellation()
            var reason = "the server closed the stream"
            do {
                var request = request(address.eventsURL)
                request.headers.replaceOrAdd(name: "Accept", value: "text/event-stream")
                if let lastEventID { request.headers.replaceOrAdd(name: "Last-Event-ID", value: lastEventID) }
                let response = try await client.execute(request, timeout: .hours(24 * 366))
                guard response.status == .ok else { throw await failure(of: response) }
                var parser = ServerSentEventParser()
                reading: for try await chunk in response.body {
                    for event in try parser.feed(chunk.readableBytesView) {
                        switch event.type {
                        case nil, "message"?:
                            onResult(.success(try value(Array(event.data.utf8), keyNames: keyNames)))
                            lastEventID = event.id ?? lastEventID
                            received = true
                            delay = .seconds(1)
                        case "error"?:
                            onResult(.failure(ServedError.from(json: event.data)))
                        case "end"?:
                            let json = try? JSON.parse(Array(event.data.utf8))
                            if case .string(let why)? = json?["reason"] {
                                reason = "the server ended the stream (\(why))"
                            }
                            break reading
                        default:
                            continue
                        }
                    }
                }
            } catch let failure as CommandFailure {
                // A refusal is final; a busy server (503) is waited for once values came.
                guard received, failure.status == .locked else { throw failure }
                reason = failure.message
            } catch {
                if Task.isCancelled { throw CancellationError() }
                guard received else { throw unreachable(error) }
                reason = "the connection was lost (\(Self.describe(error)))"
            }
            guard received else {
                throw CommandFailure(.unavailable, "\(address.eventsURL): \(reason) before its first value.")
            }
            onNotice("dbwatch: \(reason); reconnecting in \(delay.components.seconds) s")
            try await Task.sleep(for: delay)
            delay = min(delay * 2, Self.maximumReconnectDelay)
        }
    }

    /// A GET of `url` with the authorization.
    private func request(_ url: String) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        return request
    }

    /// A served value, or a failure saying the server sent something else.
    private func value(_ bytes: [UInt8], keyNames: [String]?) throws -> QueryResult {
        do {
            return try QueryResult(servedJSON: bytes, keyNames: keyNames)
        } catch {
            throw CommandFailure(.failure, "\(address.valueURL): the server sent a value that is not JSON (\(error)).")
        }
    }

    /// The failure an error answer stands for, with the message of its
    /// JSON body (`{"message": …}`).
    private func failure(of response: HTTPClientResponse) async -> CommandFailure {
        let body = try? await response.body.collect(upTo: 64 << 10)
        let json = body.flatMap { try? JSON.parse(Array($0.readableBytesView)) }
        var message = response.status.reasonPhrase
        if case .string(let text)? = json?["message"] { message = CellText.sanitized(String(text.prefix(500))) }
        let status: ExitStatus
        switch response.status.code {
        case 400: status = .usage
        case 401, 403, 421: status = .refused
        case 404, 410: status = .unavailable
        case 429, 503: status = .locked
        default: status = .failure
        }
        return CommandFailure(status, "\(address.base): \(message) (HTTP \(response.status.code)).")
    }

    /// The failure of a request that reached no server.
    private func unreachable(_ error: any Error) -> any Error {
        if error is CommandFailure || error is CancellationError { return error }
        return CommandFailure(.unavailable, "cannot reach \(address.base): \(Self.describe(error)).")
    }

    /// A short description of a connection's error: the system's message
    /// for a failed system call ("Connection refused").
    private static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return CellText.sanitized(String(String(describing: error).prefix(300)))
    }
}
