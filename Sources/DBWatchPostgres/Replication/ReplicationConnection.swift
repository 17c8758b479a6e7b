import Crypto
import DBWatch
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// A replication connection to PostgreSQL (`replication=database`) on
/// SwiftNIO: TLS, startup and authentication (trust, MD5, SCRAM-SHA-256),
/// simple queries, and the copy in both directions of `START_REPLICATION`.
///
/// One task uses it (``withConnection(to:settings:applicationName:logger:_:)`` scopes it);
/// ``channel`` may be used from others, to write or to close. A connection
/// PostgreSQL closed, an `ErrorResponse` or a message that cannot be read
/// ends what waits on it at once with a ``ReplicaError``.
///
/// Data path: ``MessageFramer`` cuts the bytes into messages,
/// ``BackendMessage`` reads them, ``StreamingMessage`` reads the copy's.
final class ReplicationConnection {
    /// The NIO channel: writes and `close()` are safe from any task.
    let channel: any Channel
    private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private var framer = MessageFramer()
    private let logger: Logger
    /// When the last bytes came, for ``Watchdog``.
    let activity: Locked<ContinuousClock.Instant>

    private init(
        channel: any Channel, inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator, logger: Logger
    ) {
        self.channel = channel
        self.inbound = inbound
        self.logger = logger
        self.activity = Locked(.now)
    }

    /// Connects, authenticates, and runs `body` with the connection; closes
    /// it after, also when `body` throws. `settings` are session settings
    /// given in the startup packet (`-c name=value`), which also apply to
    /// the values `pgoutput` writes.
    static func withConnection<T>(
        to server: PostgresReplica.Server, settings: [(String, String)], applicationName: String, logger: Logger,
        _ body: (ReplicationConnection) async throws -> T
    ) async throws -> T {
        let asyncChannel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            asyncChannel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(TimeAmount(server.connectTimeout))
                .channelOption(.socketOption(.so_keepalive), value: 1)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connect(host: server.host, port: server.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw ReplicaError(
                .sourceUnreachable, "cannot connect to PostgreSQL at \(server.host):\(server.port): \(error)")
        }
        let channel = asyncChannel.channel
        // Connecting and authenticating have a deadline: a server that
        // accepted the connection and says nothing is closed.
        let deadline = channel.eventLoop.scheduleTask(in: TimeAmount(server.connectTimeout)) {
            channel.close(promise: nil)
        }
        do {
            return try await asyncChannel.executeThenClose { inbound, _ in
                let connection = ReplicationConnection(
                    channel: channel, inbound: inbound.makeAsyncIterator(), logger: logger)
                do {
                    try await connection.negotiateTLS(server)
                    try await connection.startUp(server, settings: settings, applicationName: applicationName)
                } catch {
                    deadline.cancel()
                    throw error
                }
                deadline.cancel()
                let value = try await body(connection)
                try? await connection.send(FrontendMessage.terminate)
                return value
            }
        } catch let error where isConnectionError(error) {
            throw Self.classify(error)
        }
        // Anything else (the body's own errors, SQLite's) goes on as is.
    }

    /// Whether `error` comes from the connection (NIO, TLS), not from the
    /// body of ``withConnection(to:settings:applicationName:logger:_:)``.
    private static func isConnectionError(_ error: any Error) -> Bool {
        error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError || error is ChannelError
            || error is IOError
    }

    /// The replica's view of an error of the connection itself: a TLS
    /// handshake that failed (a certificate not trusted, or not of the
    /// server's name or address) is
    /// fatal ``ReplicaError/Code/sourceNotReady``; anything else (a closed
    /// or reset connection, a TLS connection cut short) is retried
    /// ``ReplicaError/Code/sourceUnreachable``.
    static func classify(_ error: any Error) -> ReplicaError {
        if let error = error as? ReplicaError { return error }
        if let error = error as? NIOSSLError, case .handshakeFailed = error {
            return ReplicaError(.sourceNotReady, "TLS with PostgreSQL failed: \(error)")
        }
        if error is BoringSSLError || error is NIOSSLExtraError {
            return ReplicaError(.sourceNotReady, "TLS with PostgreSQL failed: \(error)")
        }
        return ReplicaError(.sourceUnreachable, "PostgreSQL connection: \(error)")
    }

    // MARK: - Bytes

    /// Sends `bytes`, flushed.
    func send(_ bytes: [UInt8]) async throws {
        do {
            try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
        } catch {
            // A write fails once the channel closed; what closed it (a TLS
            // handshake that failed, PostgreSQL's last message) is on the
            // inbound side, read to its end.
            while true {
                if case .error(let error) = try await receive() { throw ReplicaError(classifying: error) }
            }
        }
    }

    /// Sends `bytes` on `channel`, flushed, from any task.
    static func send(_ bytes: [UInt8], on channel: any Channel) async throws {
        do {
            try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
        } catch {
            throw classify(error)
        }
    }

    /// Reads the next bytes into the framer; throws when the connection
    /// ended. Cancelling the task closes the connection.
    private func readMore() async throws {
        let channel = channel
        let chunk = try await withTaskCancellationHandler {
            do {
                return try await inbound.next()
            } catch {
                throw Self.classify(error)
            }
        } onCancel: {
            channel.close(promise: nil)
        }
        try Task.checkCancellation()
        guard let chunk else {
            throw ReplicaError(.sourceUnreachable, "PostgreSQL closed the connection")
        }
        activity.withLock { $0 = .now }
        framer.append(chunk.readableBytesView)
    }

    /// The next message, waiting for it.
    func receive() async throws -> BackendMessage {
        while true {
            if let message = try nextBuffered() { return message }
            try await readMore()
        }
    }

    /// The next message already read, if any.
    private func nextBuffered() throws(ReplicaError) -> BackendMessage? {
        do {
            guard let frame = try framer.next() else { return nil }
            return try BackendMessage(type: frame.type, body: frame.body)
        } catch {
            throw ReplicaError(.unreadableChange, "PostgreSQL sent a message the replica cannot read: \(error)")
        }
    }

    /// Every message already read, waiting for bytes only when none is:
    /// a batch as large as what the connection delivered at once.
    func receiveAvailable() async throws -> [BackendMessage] {
        var messages: [BackendMessage] = []
        while messages.isEmpty {
            while let message = try nextBuffered() { messages.append(message) }
            if messages.isEmpty { try await readMore() }
        }
        return messages
    }

    // MARK: - Startup

    private func negotiateTLS(_ server: PostgresReplica.Server) async throws {
        let configuration: TLSConfiguration
        let required: Bool
        switch server.tls.mode {
        case .disable: return
        case .prefer(let tls): (configuration, required) = (tls, false)
        case .require(let tls): (configuration, required) = (tls, true)
        }
        try await send(FrontendMessage.sslRequest)
        // The answer is one byte, before any message.
        while !framer.hasPartialMessage { try await readMore() }
        let answer = framer.takeByte() ?? 0
        guard answer == UInt8(ascii: "S") else {
            guard answer == UInt8(ascii: "N") else {
                throw ReplicaError(.unreadableChange, "PostgreSQL answered the TLS request with byte \(answer)")
            }
            if required { throw ReplicaError(.sourceNotReady, "PostgreSQL does not accept TLS connections") }
            return
        }
        guard !framer.hasPartialMessage else {
            throw ReplicaError(.unreadableChange, "PostgreSQL sent bytes before the TLS handshake")
        }
        let context = try NIOSSLContext(configuration: configuration)
        let name = server.tlsServerName ?? server.host
        // SNI takes a host name, not an address.
        let isAddress = name.allSatisfy { $0.isHexDigit || $0 == "." || $0 == ":" }
        let channel = channel
        try await channel.eventLoop.submit {
            let handler = try NIOSSLClientHandler(context: context, serverHostname: isAddress ? nil : name)
            try channel.pipeline.syncOperations.addHandler(handler, position: .first)
        }.get()
        isEncrypted = true
    }

    /// Whether TLS protects the connection.
    private(set) var isEncrypted = false

    private func startUp(_ server: PostgresReplica.Server, settings: [(String, String)], applicationName: String)
        async throws
    {
        let options = settings.map { "-c \($0.0)=\($0.1)" }.joined(separator: " ")
        try await send(
            FrontendMessage.startup([
                ("user", server.username), ("database", server.database), ("replication", "database"),
                ("options", options), ("client_encoding", "UTF8"), ("application_name", applicationName),
            ]))
        var scram: SCRAMClient?
        while true {
            switch try await receive() {
            case .authentication(let request):
                switch request {
                case .ok: break
                case .cleartextPassword:
                    guard isEncrypted else {
                        throw ReplicaError(
                            .sourceNotReady, "PostgreSQL asks for a clear-text password over a connection without TLS")
                    }
                    try await send(FrontendMessage.password(try password(of: server)))
                case .md5Password(let salt):
                    let inner = Self.md5Hex(Array((try password(of: server) + server.username).utf8))
                    try await send(FrontendMessage.password("md5" + Self.md5Hex(Array(inner.utf8) + salt)))
                case .sasl(let mechanisms):
                    guard mechanisms.contains("SCRAM-SHA-256") else {
                        throw ReplicaError(
                            .sourceNotReady,
                            "PostgreSQL offers SASL mechanisms \(mechanisms) without SCRAM-SHA-256")
                    }
                    var client = SCRAMClient(password: try password(of: server))
                    try await send(
                        FrontendMessage.saslInitialResponse(mechanism: "SCRAM-SHA-256", data: client.firstMessage()))
                    scram = client
                case .saslContinue(let data):
                    guard var client = scram else {
                        throw ReplicaError(.unreadableChange, "PostgreSQL sent a SASL challenge without SASL")
                    }
                    try await send(FrontendMessage.saslResponse(try client.finalMessage(answering: data)))
                    scram = client
                case .saslFinal(let data):
                    guard var client = scram else {
                        throw ReplicaError(.unreadableChange, "PostgreSQL sent a SASL outcome without SASL")
                    }
                    try client.verify(serverFinal: data)
                    scram = client
                case .unsupported(let code):
                    throw ReplicaError(
                        .sourceNotReady, "PostgreSQL asks for an authentication the replica cannot do (code \(code))")
                }
            case .error(let error):
                throw ReplicaError(classifying: error)
            case .readyForQuery:
                if let scram, !scram.isDone {
                    throw ReplicaError(.sourceNotReady, "PostgreSQL skipped the end of SCRAM-SHA-256")
                }
                logger.debug("replication connection ready", metadata: ["dbwatch.tls": "\(isEncrypted)"])
                return
            default:
                continue
            }
        }
    }

    private func password(of server: PostgresReplica.Server) throws(ReplicaError) -> String {
        guard let password = server.password else {
            throw ReplicaError(.sourceNotReady, "PostgreSQL asks for a password, and none was given")
        }
        return password
    }

    private static func md5Hex(_ bytes: [UInt8]) -> String {
        Insecure.MD5.hash(data: bytes).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    // MARK: - Queries

    /// Runs a simple query (one statement) and returns its rows as text.
    func simpleQuery(_ sql: String) async throws -> [[String?]] {
        try await send(FrontendMessage.query(sql))
        var rows: [[String?]] = []
        var failure: ReplicaError?
        while true {
            switch try await receive() {
            case .dataRow(let values): rows.append(values.map { $0.map { String(decoding: $0, as: UTF8.self) } })
            case .error(let error):
                if error.isFatal { throw ReplicaError(classifying: error) }
                failure = ReplicaError(classifying: error)
            case .readyForQuery:
                if let failure { throw failure }
                return rows
            case .copyBothResponse, .copyData:
                throw ReplicaError(.unreadableChange, "PostgreSQL started a copy for \(sql)")
            default: continue
            }
        }
    }

    /// Sends a `START_REPLICATION` command and returns once PostgreSQL
    /// started the copy.
    func startReplication(_ command: String) async throws {
        try await send(FrontendMessage.query(command))
        while true {
            switch try await receive() {
            case .copyBothResponse: return
            case .error(let error): throw ReplicaError(classifying: error)
            case .readyForQuery, .commandComplete:
                throw ReplicaError(.unreadableChange, "PostgreSQL did not start streaming")
            default: continue
            }
        }
    }

    /// The streaming messages already read (at least one, waiting for it),
    /// in order. The end of the stream throws: an `ErrorResponse` as
    /// PostgreSQL classifies it (a shutdown is ``ReplicaError/Code/sourceUnreachable``),
    /// `CopyDone` or the connection's end as `sourceUnreachable`.
    func receiveStreaming() async throws -> [StreamingMessage] {
        while true {
            var messages: [StreamingMessage] = []
            for message in try await receiveAvailable() {
                switch message {
                case .copyData(let bytes):
                    do {
                        messages.append(try StreamingMessage(copyData: bytes))
                    } catch {
                        throw ReplicaError(.unreadableChange, "PostgreSQL sent a streaming message \(error)")
                    }
                case .error(let error):
                    throw ReplicaError(classifying: error)
                case .copyDone, .commandComplete, .readyForQuery:
                    throw ReplicaError(.sourceUnreachable, "PostgreSQL ended the replication stream")
                case .notice(let notice):
                    logger.debug("PostgreSQL notice", metadata: ["dbwatch.notice": "\(notice)"])
                default:
                    continue
                }
            }
            if !messages.isEmpty { return messages }
        }
    }
}
