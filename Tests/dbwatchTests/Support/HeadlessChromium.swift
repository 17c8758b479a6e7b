import AsyncHTTPClient
import DBWatchTestSupport
import Foundation

/// Debian's `chromium`, headless, driven through the DevTools protocol: a
/// test opens a page and polls what its DOM shows. (The same driver as the
/// example package's page tests.)
///
/// ```swift
/// try await HeadlessChromium.withPage { page in
///     try await page.navigate(to: served.url)
///     try await page.waitUntil("document.title", equals: "game.sqlite · dbwatch")
/// }
/// ```
///
/// Each call starts its own browser (`--remote-debugging-port=0`, a new
/// profile in a temporary directory), reads the port from the profile's
/// `DevToolsActivePort`, finds the page's debugger WebSocket in
/// `/json/list` and connects to it. The browser is terminated by its PID
/// and the profile removed when the body returns or throws.
enum HeadlessChromium {
    /// `chromium` is not installed.
    struct NotInstalled: Error, CustomStringConvertible {
        var description: String {
            "Debian's `chromium` is not installed (no `chromium` in PATH): install it with `apt-get install -y chromium`"
                + " (CI's .ci/run installs it when missing); the page tests need a headless browser"
        }
    }

    /// The browser did not start or answered something unexpected.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// How long the browser may take to start and open its debugging port.
    static let startTimeout: Duration = .seconds(60)

    /// Starts a headless browser, runs `body` with its page, then
    /// terminates the browser (also when `body` throws).
    static func withPage<T: Sendable>(_ body: @escaping @Sendable (ChromiumPage) async throws -> T) async throws -> T {
        let executable = try executablePath()
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        defer { removeProfile(profile) }
        let process = try ChildProcess.start([
            executable,
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-sync", "--mute-audio",
            // WSClient sends an Origin header, which DevTools refuses unless allowed.
            "--remote-debugging-port=0", "--remote-allow-origins=*",
            "--user-data-dir=\(profile.path)", "about:blank",
        ])
        defer { terminate(process) }

        let logTail: @Sendable () -> String = {
            let snapshot = process.snapshot
            return String((snapshot.stdout + snapshot.stderr).suffix(2_000))
        }
        let port = try await debuggingPort(profile: profile, process: process, logTail: logTail)
        let socketURL = try await pageSocketURL(port: port)

        let outcome = Protected<Result<T, any Error>?>(nil)
        try await TestWebSocket.connect(socketURL, maxMessageSize: 1 << 24) { socket in
            let page = ChromiumPage(socket: socket)
            let result: Result<T, any Error>
            do {
                result = .success(try await body(page))
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
        }
        guard let result = outcome.withLock({ $0 }) else {
            throw Failure(description: "the DevTools connection closed early; chromium said:\n\(logTail())")
        }
        return try result.get()
    }

    /// The `chromium` executable in PATH.
    static func executablePath() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/chromium"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw NotInstalled()
    }

    /// Waits for the browser to write its debugging port into the profile.
    private static func debuggingPort(
        profile: URL, process: ChildProcess, logTail: @Sendable () -> String
    ) async throws -> Int {
        let file = profile.appendingPathComponent("DevToolsActivePort")
        let deadline = ContinuousClock.now + startTimeout
        while ContinuousClock.now < deadline {
            // The file holds the port, a newline and the browser's WebSocket path.
            if let text = try? String(contentsOf: file, encoding: .utf8), text.contains("\n"),
                let port = Int(text.prefix { $0 != "\n" }), port > 0
            {
                return port
            }
            guard process.isRunning else {
                throw Failure(
                    description:
                        "chromium exited with status \(process.snapshot.exitStatus ?? -1) before listening:\n\(logTail())"
                )
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Failure(description: "chromium did not open its debugging port in \(startTimeout):\n\(logTail())")
    }

    /// The debugger WebSocket of the browser's page (opened on `about:blank`).
    private static func pageSocketURL(port: Int) async throws -> String {
        struct Target: Decodable {
            var type: String
            var webSocketDebuggerUrl: String?
        }
        let deadline = ContinuousClock.now + startTimeout
        while true {
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/json/list"), timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 20)
            let targets = try JSONDecoder().decode([Target].self, from: Data(body.readableBytesView))
            if let url = targets.first(where: { $0.type == "page" })?.webSocketDebuggerUrl {
                // Listed as ws://localhost:PORT/…; the browser listens on 127.0.0.1.
                return url.replacingOccurrences(of: "ws://localhost:", with: "ws://127.0.0.1:")
            }
            guard ContinuousClock.now < deadline else {
                throw Failure(
                    description: "chromium lists no page: \(String(decoding: body.readableBytesView, as: UTF8.self))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Removes the browser's profile, retrying for up to 10 s: a helper
    /// process (the network service) may still write a file into it for a
    /// moment after the browser exited, which makes a removal fail midway.
    private static func removeProfile(_ profile: URL) {
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: profile.path) {
            if (try? FileManager.default.removeItem(at: profile)) != nil || Date() > deadline { return }
            usleep(50_000)
        }
    }

    /// Terminates the browser by its PID: SIGTERM, then SIGKILL if it has
    /// not exited after 5 s. Its helper processes exit with it.
    private static func terminate(_ process: ChildProcess) {
        guard process.isRunning else { return }
        process.send(SIGTERM)
        if !process.blockingWaitForExit(seconds: 5) { process.kill() }
        process.blockingWaitForExit(seconds: 60)
    }
}

/// A page of ``HeadlessChromium``: DevTools commands, one at a time.
final class ChromiumPage {
    /// A command the browser answered with an error.
    struct CommandError: Error, CustomStringConvertible {
        var description: String
    }

    private let socket: TestWebSocket
    private var nextID = 1

    init(socket: TestWebSocket) {
        self.socket = socket
    }

    /// Opens `url` (returns once the navigation is committed, before the
    /// page has loaded: poll with ``waitUntil(_:equals:timeout:)``).
    func navigate(to url: String) async throws {
        let result = try await send("Page.navigate", ["url": url])
        if let error = result["errorText"] as? String { throw CommandError(description: "\(url): \(error)") }
    }

    /// The value of a JavaScript expression in the page, as JSON text
    /// (`"\"a,b\""` for a string, `"null"` for undefined).
    func evaluate(_ expression: String) async throws -> String {
        let result = try await send("Runtime.evaluate", ["expression": expression, "returnByValue": true])
        if let details = result["exceptionDetails"] as? [String: Any] {
            let exception = (details["exception"] as? [String: Any])?["description"] ?? details["text"] ?? "?"
            throw CommandError(description: "\(expression) threw \(exception)")
        }
        let value = (result["result"] as? [String: Any])?["value"] ?? NSNull()
        let data = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])
        return String(decoding: data, as: UTF8.self)
    }

    /// Polls `expression` (a JavaScript expression giving a string) every
    /// 50 ms until it gives `expected`; throws with the last value seen
    /// after `timeout`. Errors while the page loads count as "not yet".
    func waitUntil(_ expression: String, equals expected: String, timeout: Duration = .seconds(30)) async throws {
        let wanted = String(
            decoding: try JSONSerialization.data(withJSONObject: expected, options: [.fragmentsAllowed]), as: UTF8.self)
        let deadline = ContinuousClock.now + timeout
        var last = "nothing"
        while true {
            do {
                last = try await evaluate(expression)
                if last == wanted { return }
            } catch let error as CommandError {
                last = "\(error)"
            }
            guard ContinuousClock.now < deadline else {
                throw CommandError(description: "after \(timeout), \(expression) gives \(last), not \(wanted)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Sends a DevTools command and returns its result, skipping the events
    /// that arrive in between.
    private func send(_ method: String, _ parameters: [String: Any]) async throws -> [String: Any] {
        let id = nextID
        nextID += 1
        let command = try JSONSerialization.data(withJSONObject: ["id": id, "method": method, "params": parameters])
        try await socket.send(String(decoding: command, as: UTF8.self))
        while let text = try await socket.nextText() {
            guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                object["id"] as? Int == id
            else { continue }
            if let error = object["error"] as? [String: Any] {
                throw CommandError(description: "\(method): \(error["message"] ?? error)")
            }
            return object["result"] as? [String: Any] ?? [:]
        }
        throw CommandError(description: "\(method): the DevTools connection closed")
    }
}
