import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP answer read off a socket as bytes: what a client that writes
/// its own requests (no `Host`, a foreign `Host`, two of them) receives.
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
}

/// Sends `request` as it is (`\r\n` line ends included) to 127.0.0.1:`port`
/// and reads the answer, on a thread of its own so that the blocking socket
/// holds no thread of the cooperative pool. Each read waits at most
/// `seconds`; a server that answers nothing is a thrown error, not a hang.
///
/// ```swift
/// let answer = try await rawHTTPExchange(port: port, "GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
/// #expect(answer.status == 403)
/// ```
public func rawHTTPExchange(port: Int, _ request: String, seconds: Int = 20) async throws -> RawHTTPResponse {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try blockingExchange(port: port, request, seconds: seconds) })
        }
        thread.start()
    }
}

/// Why a raw exchange failed.
public struct RawHTTPError: Error, CustomStringConvertible {
    /// What happened.
    public let description: String
}

private func blockingExchange(port: Int, _ request: String, seconds: Int) throws -> RawHTTPResponse {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw RawHTTPError(description: "socket: errno \(errno)") }
    defer { close(descriptor) }
    var timeout = timeval(tv_sec: seconds, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { throw RawHTTPError(description: "connect: errno \(errno)") }
    let bytes = Array(request.utf8)
    var sent = 0
    while sent < bytes.count {
        let count = bytes[sent...].withUnsafeBufferPointer {
            send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
        }
        guard count > 0 else { throw RawHTTPError(description: "send: errno \(errno)") }
        sent += count
    }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var headEnd: Int?
    var expected: Int?
    while true {
        if let headEnd, let expected, received.count >= headEnd + expected { break }
        if let headEnd, expected == nil, received.count >= headEnd,
            let status = parseStatus(received), status == 101 || status == 304 || status == 204
        {
            break
        }
        let count = buffer.withUnsafeMutableBufferPointer { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count == 0 { break }
        if count < 0 {
            if received.isEmpty { throw RawHTTPError(description: "no answer within \(seconds) s (errno \(errno))") }
            break
        }
        received += buffer[0..<count]
        if headEnd == nil, let end = findHeadEnd(received) {
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
    guard let headEnd = headEnd ?? findHeadEnd(received), let status = parseStatus(received) else {
        throw RawHTTPError(description: "not an HTTP answer: \(String(decoding: received.prefix(200), as: UTF8.self))")
    }
    let headLines = String(decoding: received[0..<headEnd], as: UTF8.self).split(separator: "\r\n").dropFirst()
    let headers = headLines.compactMap { line -> (name: String, value: String)? in
        let parts = line.split(separator: ":", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        return (parts[0].lowercased(), parts[1].trimmingCharacters(in: .whitespaces))
    }
    let body = String(decoding: received[min(headEnd, received.count)...], as: UTF8.self)
    return RawHTTPResponse(status: status, headers: headers, body: body)
}

/// The index just past the blank line that ends the head, if it came.
private func findHeadEnd(_ bytes: [UInt8]) -> Int? {
    let marker: [UInt8] = [13, 10, 13, 10]
    guard bytes.count >= 4 else { return nil }
    for index in 0...(bytes.count - 4) where bytes[index..<(index + 4)].elementsEqual(marker) {
        return index + 4
    }
    return nil
}

private func parseStatus(_ bytes: [UInt8]) -> Int? {
    let line = String(decoding: bytes.prefix(64), as: UTF8.self)
    let parts = line.split(separator: " ", maxSplits: 2)
    guard parts.count >= 2, parts[0].hasPrefix("HTTP/") else { return nil }
    return Int(parts[1])
}
