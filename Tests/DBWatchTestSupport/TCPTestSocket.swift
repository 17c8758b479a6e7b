#if canImport(Glibc)
    import Glibc
#endif

/// A raw TCP client on 127.0.0.1 for tests of what a server does to a bad
/// client: one that sends its request a byte at a time, or reads nothing.
/// Every wait is bounded; the descriptor closes with the object.
///
/// ```swift
/// let socket = try TCPTestSocket(port: port)
/// try socket.send("GET / HTTP/1.1\r\n")
/// let closed = try await socket.waitForClose(seconds: 5)   // true once the server closed it
/// ```
public final class TCPTestSocket: Sendable {
    /// The socket's descriptor.
    public let descriptor: Int32

    /// Connects to 127.0.0.1:`port`; with `receiveBuffer`, a small receive
    /// buffer (set before connecting, so the window stays small).
    public init(port: Int, receiveBuffer: Int32? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
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
}

/// A socket call that failed.
public struct TCPTestSocketError: Error, CustomStringConvertible {
    /// The call.
    public let what: String
    /// Its `errno`.
    public let code: Int32

    public var description: String { "\(what) failed: errno \(code)" }
}
