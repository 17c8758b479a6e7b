import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// What one HTTP connection may hold: how long its request head may take,
/// and how many bytes its socket may keep unsent, for how long.
///
/// `LiveQueries` does not own the server's connections; these limits
/// apply where they are made, in the server builder:
///
/// ```swift
/// var limits = ConnectionLimits()
/// limits.unsentDataTimeout = live.configuration.stalledClientTimeout
/// let app = Application(
///     router: router,
///     server: .http1(limits: limits),
///     configuration: .init(availableConnectionsDelegate: MaximumAvailableConnections(10_000, logger: logger)),
///     services: [live])
/// ```
///
/// - A client must send a whole request head within ``requestHeadTimeout``
///   of connecting or of its previous answer's end: a client that sends one
///   byte a second, or connects and sends nothing, is disconnected. An open
///   stream is not: once a request is read, its answer takes as long as it
///   takes.
/// - A streaming connection's socket keeps at most about twice
///   ``sendBufferSize`` unsent or unacknowledged (the kernel doubles the
///   value for its bookkeeping), so 10,000 clients that read nothing hold at
///   most about 330 MB of kernel memory with the default 16 KiB.
/// - Bytes that cannot leave the socket for ``unsentDataTimeout`` (the
///   client's receive window stays closed: it reads nothing) make the kernel
///   drop the connection (`TCP_USER_TIMEOUT`), whatever the size of the
///   events: a small event stuck behind a full window counts from the first
///   byte that cannot be sent, not from a full send buffer.
///
/// The number of open connections is the application's: Hummingbird's
/// `availableConnectionsDelegate` (`MaximumAvailableConnections(n, logger:)`) stops accepting
/// past `n`; the kernel queues the next ones (the listen backlog) until a
/// connection closes.
public struct ConnectionLimits: Sendable {
    /// How long a client may take to send a request head, from the moment it
    /// connects or its previous answer ended; `nil` for no limit. 10 s by
    /// default. (Hummingbird's HTTP/1 `idleTimeout`: it never cuts a
    /// request whose head was read, so open streams are not affected, but it
    /// also closes a kept-alive connection idle that long between requests.)
    ///
    /// ```swift
    /// limits.requestHeadTimeout = .seconds(5)
    /// ```
    public var requestHeadTimeout: Duration? = .seconds(10)

    /// The socket send buffer of each connection (`SO_SNDBUF`), in bytes;
    /// `nil` keeps the system's, which grows to megabytes per connection.
    /// 16 KiB by default: the kernel doubles it, so one connection holds at
    /// most about 32 KiB unsent. Larger values speed up large values to
    /// distant clients (at most one buffer per round trip) and cost that
    /// much kernel memory per client that reads nothing.
    ///
    /// ```swift
    /// limits.sendBufferSize = 64 * 1024
    /// ```
    public var sendBufferSize: Int? = 16 * 1024

    /// How long bytes may wait in a connection's socket, unsent or
    /// unacknowledged, before the kernel drops the connection
    /// (`TCP_USER_TIMEOUT`); `nil` keeps the system's (about 15 minutes of
    /// retransmissions, and no limit while the client's window is closed).
    /// 30 s by default: set it to `LiveQueriesConfiguration.stalledClientTimeout`.
    /// The kernel checks at its zero-window probes, so the drop comes up to
    /// a probe interval (at most this timeout again) later.
    ///
    /// ```swift
    /// limits.unsentDataTimeout = live.configuration.stalledClientTimeout
    /// ```
    public var unsentDataTimeout: Duration? = .seconds(30)

    /// The default limits: a 10 s request head, a 16 KiB send buffer, 30 s
    /// for bytes that cannot be sent.
    ///
    /// ```swift
    /// let limits = ConnectionLimits()
    /// ```
    public init() {}
}

/// A server child channel that applies ``ConnectionLimits``'s socket
/// options to each connection before `Base` sets it up. For servers the
/// `HTTPServerBuilder.http1(configuration:limits:)` builder
/// does not make, such as a WebSocket upgrade channel:
///
/// ```swift
/// let server = HTTPServerBuilder { responder in
///     LimitedServerChildChannel(
///         HTTP1WebSocketUpgradeChannel(responder: responder, configuration: .init(http1: .init(idleTimeout: .seconds(10)), ws: .init())) { … },
///         limits: limits)
/// }
/// ```
///
/// (`Base`'s own configuration sets the request head timeout: `idleTimeout`.)
public struct LimitedServerChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    /// What `Base` makes of a connection.
    public typealias Value = Base.Value

    /// The channel that handles each connection.
    ///
    /// ```swift
    /// channel.base.configuration.idleTimeout
    /// ```
    public let base: Base
    /// The limits applied to each connection's socket.
    ///
    /// ```swift
    /// channel.limits.sendBufferSize   // 16384
    /// ```
    public let limits: ConnectionLimits

    /// `base`, each connection's socket limited by `limits`.
    ///
    /// ```swift
    /// LimitedServerChildChannel(HTTP1Channel(responder: responder), limits: ConnectionLimits())
    /// ```
    ///
    /// - Parameters:
    ///   - base: the channel that handles each connection.
    ///   - limits: its send buffer and the time bytes may wait in it.
    public init(_ base: Base, limits: ConnectionLimits) {
        self.base = base
        self.limits = limits
    }

    /// Sets the socket options, then `base`'s pipeline.
    ///
    /// - Parameters:
    ///   - channel: the new connection.
    ///   - logger: the server's logger.
    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let limits = limits
        return channel.eventLoop.makeCompletedFuture {
            guard let options = channel.syncOptions else { return }
            if let size = limits.sendBufferSize {
                try options.setOption(
                    ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(clamping: size))
            }
            if let timeout = limits.unsentDataTimeout {
                let milliseconds =
                    timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
                try options.setOption(
                    ChannelOptions.Types.SocketOption(
                        level: NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_TCP)),
                        name: NIOBSDSocket.Option(rawValue: CInt(TCP_USER_TIMEOUT))),
                    value: SocketOptionValue(clamping: max(milliseconds, 1)))
            }
        }.flatMap { [base] in base.setup(channel: channel, logger: logger) }
    }

    /// Handles the connection as `base` does.
    ///
    /// - Parameters:
    ///   - value: what ``setup(channel:logger:)`` made.
    ///   - logger: the server's logger.
    public func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// An HTTP/1 server whose connections keep ``ConnectionLimits``: a
    /// request head timeout (the configuration's `idleTimeout`, unless the
    /// limits say none), a small send buffer, and a time limit for bytes that
    /// cannot be sent.
    ///
    /// ```swift
    /// let app = Application(router: router, server: .http1(limits: ConnectionLimits()), services: [live])
    /// ```
    ///
    /// - Parameters:
    ///   - configuration: the HTTP/1 channel's configuration.
    ///   - limits: the limits of each connection.
    public static func http1(
        configuration: HTTP1Channel.Configuration = .init(), limits: ConnectionLimits
    ) -> HTTPServerBuilder {
        var configuration = configuration
        if let timeout = limits.requestHeadTimeout { configuration.idleTimeout = TimeAmount(timeout) }
        return HTTPServerBuilder { [configuration] responder in
            LimitedServerChildChannel(HTTP1Channel(responder: responder, configuration: configuration), limits: limits)
        }
    }
}
