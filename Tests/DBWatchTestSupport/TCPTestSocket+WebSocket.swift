import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension TCPTestSocket {
    /// Opens a WebSocket on `path` (reads the server's `101` head, as a
    /// client must before it sends a frame) and sends `message` as one
    /// masked text frame, then reads nothing: a stuck client. The blocking
    /// read of the head runs on a thread of its own, so it holds no thread
    /// of the cooperative pool (the server may need one to answer), and
    /// waits at most `seconds`.
    public func openWebSocket(_ path: String, sending message: String, seconds: Int = 20) async throws {
        let head =
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        let payload = Array(message.utf8)
        precondition(payload.count < 126, "a short message only")
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        var frame: [UInt8] = [0x81, 0x80 | UInt8(payload.count)] + mask
        for (index, byte) in payload.enumerated() { frame.append(byte ^ mask[index % 4]) }
        try send(Array(head.utf8))
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread { [self] in
                continuation.resume(with: Result { try readHead(seconds: seconds) })
            }.start()
        }
        try send(frame)
    }

    /// Reads up to the end of a response head, a byte at a time, each read
    /// waiting at most `seconds`.
    private func readHead(seconds: Int) throws {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while !received.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
            guard recv(descriptor, &byte, 1, 0) == 1 else { throw WebSocketOpeningError() }
            received.append(byte)
        }
        guard received.starts(with: Array("HTTP/1.1 101".utf8)) else { throw WebSocketOpeningError() }
    }

    private func send(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBufferPointer { buffer in
            Glibc.send(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        }
        guard sent == bytes.count else { throw WebSocketOpeningError() }
    }
}

/// The raw WebSocket client's connection failed or was refused.
public struct WebSocketOpeningError: Error {}
