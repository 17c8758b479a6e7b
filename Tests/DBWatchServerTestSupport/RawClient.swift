#if canImport(Glibc)
    import Glibc
#endif

/// A TCP client that sends a request and reads nothing: a stuck browser.
public final class RawClient: Sendable {
    public let descriptor: Int32

    /// Connects to 127.0.0.1:`port` with a small receive buffer.
    public init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RawClientError() }
        var size: Int32 = 4096
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
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
            close(descriptor)
            throw RawClientError()
        }
    }

    /// Sends a GET of `path`.
    public func get(_ path: String) throws {
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
        let sent = request.utf8CString.withUnsafeBufferPointer { buffer in
            send(descriptor, buffer.baseAddress, buffer.count - 1, Int32(MSG_NOSIGNAL))
        }
        guard sent == request.utf8.count else { throw RawClientError() }
    }

    deinit {
        close(descriptor)
    }
}

public struct RawClientError: Error {
    public init() {}
}
