import Logging
import NIOSSL
import PostgresNIO

extension PostgresReplica {
    /// Where the replica's replication connection goes: the same server,
    /// user and database as its `PostgresClient`, which PostgreSQL must let
    /// replicate (`REPLICATION` or superuser, `max_wal_senders` above 0).
    ///
    /// ```swift
    /// let server = PostgresReplica.Server(
    ///     host: "db.example.com", username: "app", password: "secret", database: "shop",
    ///     tls: .require(.makeClientConfiguration()))
    /// ```
    public struct Server: Sendable {
        /// Whether the connection uses TLS, as libpq's `sslmode` says it.
        public struct TLS: Sendable {
            enum Mode: Sendable {
                case disable
                case prefer(TLSConfiguration)
                case require(TLSConfiguration)
            }

            let mode: Mode

            /// Plain TCP (`sslmode=disable`).
            public static let disable = TLS(mode: .disable)

            /// TLS if the server offers it, plain TCP otherwise
            /// (`sslmode=prefer`).
            public static func prefer(_ configuration: TLSConfiguration) -> TLS {
                TLS(mode: .prefer(configuration))
            }

            /// TLS or no connection (`sslmode=require` with a configuration
            /// whose `certificateVerification` is `.none`; `verify-full` with
            /// NIOSSL's default one, which verifies the certificate's chain
            /// and that it names ``Server/tlsServerName``, or the host's
            /// name or address).
            public static func require(_ configuration: TLSConfiguration) -> TLS {
                TLS(mode: .require(configuration))
            }
        }

        /// The server's host name or address.
        public var host: String
        /// Its port. Default: 5432.
        public var port: Int
        /// The user; its password, if the server asks for one (SCRAM-SHA-256,
        /// MD5 or clear text, the latter over TLS only).
        public var username: String
        /// The user's password.
        public var password: String?
        /// The database.
        public var database: String
        /// TLS.
        public var tls: TLS
        /// The name TLS verifies in the server's certificate and sends as
        /// SNI; ``host`` when `nil`.
        public var tlsServerName: String?
        /// How long connecting and authenticating may take. Default: 10 s.
        public var connectTimeout: Duration = .seconds(10)

        /// A server to connect to.
        public init(
            host: String, port: Int = 5432, username: String, password: String? = nil, database: String,
            tls: TLS
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.tls = tls
        }
    }
}

extension PostgresReplica {
    /// Runs `body` with a new postgres-nio connection to ``server`` (the
    /// catalog, the copy), closed after.
    func withSourceConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let tls: PostgresConnection.Configuration.TLS
        switch server.tls.mode {
        case .disable: tls = .disable
        case .prefer(let configuration): tls = .prefer(try NIOSSLContext(configuration: configuration))
        case .require(let configuration): tls = .require(try NIOSSLContext(configuration: configuration))
        }
        var configuration = PostgresConnection.Configuration(
            host: server.host, port: server.port, username: server.username, password: server.password,
            database: server.database, tls: tls)
        configuration.options.connectTimeout = TimeAmount(server.connectTimeout)
        configuration.options.tlsServerName = server.tlsServerName
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        do {
            let value = try await body(connection)
            try? await connection.close()
            return value
        } catch {
            try? await connection.close()
            throw error
        }
    }
}
