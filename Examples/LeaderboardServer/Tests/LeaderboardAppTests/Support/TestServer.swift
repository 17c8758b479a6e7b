import AsyncHTTPClient
import Foundation
import Hummingbird
import LeaderboardApp
import Logging
import ServiceLifecycle

/// The leaderboard server running in-process on 127.0.0.1 with a free port
/// and a new database in a temporary directory.
struct TestServer: Sendable {
    let port: Int
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Runs `body` against a new server, then shuts it down gracefully and
    /// removes its database.
    static func with<T: Sendable>(
        tokens: [String: Viewer] = [:], _ body: (TestServer) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("LeaderboardAppTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = LeaderboardConfiguration()
        configuration.port = 0
        configuration.databasePath = directory.appendingPathComponent("leaderboard.sqlite").path
        configuration.logger.logLevel = .error
        configuration.tokens = tokens
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = try await buildApplication(configuration) { port in
            portContinuation.yield(port)
            portContinuation.finish()
        }
        let group = ServiceGroup(
            configuration: .init(services: [app], gracefulShutdownSignals: [], logger: configuration.logger))
        let running = Task {
            defer { portContinuation.finish() }  // a server that failed to start
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await running.value
            throw ServerDidNotStart()
        }
        do {
            let result = try await body(TestServer(port: port))
            await group.triggerGracefulShutdown()
            try await running.value
            return result
        } catch {
            await group.triggerGracefulShutdown()
            try? await running.value
            throw error
        }
    }

    /// `POST path` with `body`, as JSON unless `headers` say otherwise: the
    /// status and the answer's text.
    func post(
        _ path: String, json body: String, headers: [(String, String)] = [("Content-Type", "application/json")]
    ) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let answer = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(decoding: answer.readableBytesView, as: UTF8.self))
    }

    /// `GET path`: the status, the content type and the answer's text.
    func get(_ path: String) async throws -> (status: Int, contentType: String?, body: String) {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: baseURL + path), timeout: .seconds(30))
        let answer = try await response.body.collect(upTo: 1 << 20)
        return (
            Int(response.status.code), response.headers.first(name: "Content-Type"),
            String(decoding: answer.readableBytesView, as: UTF8.self)
        )
    }
}

/// The server stopped before it listened.
struct ServerDidNotStart: Error {}
