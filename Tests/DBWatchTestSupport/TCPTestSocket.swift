import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The tests' raw TCP client on 127.0.0.1: for what a server does to a bad
/// client (one that sends its request a byte at a time, or reads nothing),
/// and for requests no HTTP client library sends (no `Host`, a foreign
/// one, two of them), whose answer ``readResponse(seconds:)`` reads as
/// bytes. Every wait is bounded; the descriptor closes with the object.
///
/// ```swift
/// let socket = try TCPTestSocket(port: port)
/// try socket.send("GET / HTTP/1.1\r\n")
/// let closed = try await socket.waitForClose(seconds: 5)   // true once the server closed it
///
/// let stuck = try TCPTestSocket(port: port, receiveBuffer: 4096)
/// try stuck.sendGET("/top/events")                         // and never read: a stuck browser
/// ```
public final class TCPTestSocket: Sendable {
    /// The socket's descriptor.
    public let descriptor: Int32

    /// Connects to 127.0.0.1:`port`; with `receiveBuffer`, a small receive
    /// buffer (set before connecting, so the window stays small).
    public init(port: Int, receiveBuffer: Int32? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TCPTestSocketError(what: "socket", code: errno) }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(descriptor)
            throw TCPTestSocketError(what: "connect", code: code)
        }
    }

    /// Sends all of `text`; throws if the connection is closed.
    public func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { buffer in
                Glibc.send(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw TCPTestSocketError(what: "send", code: errno) }
            offset += sent
        }
    }

    /// Sends `GET path` with `Host: 127.0.0.1` and `Accept: accept`, and
    /// keeps the connection open.
    public func sendGET(_ path: String, accept: String = "text/event-stream") throws {
        try send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: \(accept)\r\n\r\n")
    }

    /// Reads one HTTP answer: its head, then the body up to its
    /// `Content-Length`, else until the connection closes (none after a
    /// 101, 204 or 304). The blocking reads run on a thread of their own,
    /// so they hold no thread of the cooperative pool; each waits at most
    /// `seconds`, and a server that answers nothing is a thrown error.
    public func readResponse(seconds: Int = 20) async throws -> RawHTTPResponse {
        try await withCheckedThrowingContinuation { continuation in
            Thread { [self] in
                continuation.resume(with: Result { try blockingReadResponse(seconds: seconds) })
            }.start()
        }
    }

    /// What has arrived, up to `maximum` bytes, without waiting: empty
    /// when nothing did; nil once the server closed the connection (an end
    /// of file or a reset) and nothing more is to be read.
    public func receiveNow(maximum: Int = 65_536) -> [UInt8]? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: maximum)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, maximum, 0) }
        guard count > 0 else { return nil }
        return Array(buffer[..<count])
    }

    /// What arrives within `seconds` (checked every 10 ms, without blocking
    /// a thread): empty when nothing came; nil once the connection closed.
    public func receive(seconds: Double) async throws -> [UInt8]? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            guard let bytes = receiveNow() else { return nil }
            if !bytes.isEmpty || ContinuousClock.now >= deadline { return bytes }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Reads (and drops) what arrives until the server closes the
    /// connection; returns whether it did within `seconds`.
    public func waitForClose(seconds: Double) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if receiveNow() == nil { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    deinit {
        close(descriptor)
    }

    private func blockingReadResponse(seconds: Int) throws -> RawHTTPResponse {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var headEnd: Int?
        var expected: Int?
        while true {
            if let headEnd, let expected, received.count >= headEnd + expected { break }
            if let headEnd, expected == nil, received.count >= headEnd,
                let status = RawHTTPResponse.status(received), status == 101 || status == 304 || status == 204
            {
                break
            }
            let count = buffer.withUnsafeMutableBufferPointer { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            if count < 0 {
                if received.isEmpty {
                    throw TCPTestSocketError(what: "no answer within \(seconds) s: recv", code: errno)
                }
                break
            }
            received += buffer[0..<count]
            if headEnd == nil, let end = RawHTTPResponse.headEnd(received) {
                headEnd = end
                let head = String(decoding: received[0..<end], as: UTF8.self)
                expected =
                    head.split(separator: "\r\n").lazy.compactMap { line -> Int? in
                        let parts = line.split(separator: ":", maxSplits: 1)
                        guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                        return Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }.first
            }
        }
        return try RawHTTPResponse(received)
    }
}

/// Sends `request` as it is (`\r\n` line ends included) to
/// 127.0.0.1:`port` on a new ``TCPTestSocket`` and reads the answer (see
/// ``TCPTestSocket/readResponse(seconds:)``).
///
/// ```swift
/// let answer = try await rawHTTPExchange(port: port, "GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
/// #expect(answer.status == 403)
/// ```
public func rawHTTPExchange(port: Int, _ request: String, seconds: Int = 20) async throws -> RawHTTPResponse {
    let socket = try TCPTestSocket(port: port)
    try socket.send(request)
    return try await socket.readResponse(seconds: seconds)
}

/// An HTTP answer read off a socket as bytes.
public struct RawHTTPResponse: Sendable {
    /// The status code of the status line.
    public let status: Int
    /// The header fields, names in lower case, in order.
    public let headers: [(name: String, value: String)]
    /// The body read: all of it with `Content-Length`, else what came before
    /// the connection closed or the read timed out.
    public let body: String

    /// The first value of the field `name` (any case).
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name.lowercased() }?.value
    }

    /// The answer in `bytes`, which hold at least its head.
    init(_ bytes: [UInt8]) throws {
        guard let headEnd = Self.headEnd(bytes), let status = Self.status(bytes) else {
            throw TCPTestSocketError(
                what: "not an HTTP answer: \(String(decoding: bytes.prefix(200), as: UTF8.self))", code: 0)
        }
        self.status = status
        let headLines = String(decoding: bytes[0..<headEnd], as: UTF8.self).split(separator: "\r\n").dropFirst()
        headers = headLines.compactMap { line -> (name: String, value: String)? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            return (parts[0].lowercased(), parts[1].trimmingCharacters(in: .whitespaces))
        }
        body = String(decoding: bytes[headEnd...], as: UTF8.self)
    }

    /// The index just past the blank line that ends the head, if it came.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        let marker: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4 else { return nil }
        return (0...(bytes.count - 4)).first { bytes[$0..<($0 + 4)].elementsEqual(marker) }.map { $0 + 4 }
    }

    /// The status code of the status line, if it came.
    static func status(_ bytes: [UInt8]) -> Int? {
        let parts = String(decoding: bytes.prefix(64), as: UTF8.self).split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/") else { return nil }
        return Int(parts[1])
    }
}

/// A socket call that failed.
public struct TCPTestSocketError: Error, CustomStringConvertible {
    /// The call.
    public let what: String
    /// Its `errno`.
    public let code: Int32

    public var description: String { "\(what) failed: errno \(code)" }
}
