import ArgumentParser
import DBWatchPostgres
import Foundation
import Logging
import PostgresNIO

/// A PostgreSQL connection URL as `replicate` and `slots` take it:
/// `postgres://user:password@host:port/database?sslmode=prefer`
/// (`postgresql://` too), parsed into a `PostgresClient`'s configuration.
///
/// ```swift
/// let url = try PostgresURL.parse("postgres://app:secret@db.example.com/shop?sslmode=require")
/// let client = PostgresClient(configuration: url.clientConfiguration)
/// ```
struct PostgresURL: Sendable, Equatable {
    /// Whether the connection uses TLS, as libpq's `sslmode` says it.
    enum SSLMode: String, Sendable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS if the server offers it, plain TCP otherwise (libpq's default).
        case prefer
        /// TLS or no connection; the server's certificate is verified
        /// against the system's trust roots and its name.
        case require
    }

    /// The server's host name or address (an IPv6 address without brackets).
    var host: String
    /// The server's port: 5432 unless given.
    var port: Int
    /// The user to connect as.
    var username: String
    /// The user's password, if any.
    var password: String?
    /// The database: the user's name unless given, as libpq does.
    var database: String
    /// TLS: `prefer` unless given.
    var sslMode: SSLMode

    /// Parses `text`; a URL that is not one PostgreSQL's clients accept, or
    /// that asks for something not supported, throws a `ValidationError`
    /// (a usage error, exit 64) that says why (without the password).
    static func parse(_ text: String) throws -> PostgresURL {
        let example = "postgres://user:password@host:5432/database"
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw ValidationError("\(shown(text)) is not a URL; give one like \(example)")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw ValidationError(
                "\(shown(text)) is not a PostgreSQL URL: it must start with postgres:// or postgresql://")
        }
        var host = components.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else {
            throw ValidationError("\(shown(text)) names no host; give one like \(example)")
        }
        guard let username = components.user, !username.isEmpty else {
            throw ValidationError("\(shown(text)) names no user; give one like \(example)")
        }
        let port = components.port ?? 5432
        guard (1...65_535).contains(port) else {
            throw ValidationError("\(shown(text)): the port must be between 1 and 65535")
        }
        var path = components.path
        if path.hasPrefix("/") { path.removeFirst() }
        guard !path.contains("/") else {
            throw ValidationError("\(shown(text)): the path must be one database name, like /database")
        }
        var sslMode = SSLMode.prefer
        for item in components.queryItems ?? [] {
            guard item.name == "sslmode" else {
                throw ValidationError(
                    "\(shown(text)): unknown parameter \(item.name); the only one supported is sslmode")
            }
            // verify-full is what `require` does: NIOSSL verifies the certificate and the name.
            guard let value = item.value, let mode = SSLMode(rawValue: value == "verify-full" ? "require" : value)
            else {
                throw ValidationError(
                    "\(shown(text)): sslmode must be disable, prefer, require or verify-full, not \(item.value ?? "empty")"
                )
            }
            sslMode = mode
        }
        return PostgresURL(
            host: host, port: port, username: username, password: components.password,
            database: path.isEmpty ? username : path, sslMode: sslMode)
    }

    /// `text` without its password, for messages.
    private static func shown(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? text
    }

    /// The URL without its password: `postgres://user@host:port/database`.
    var redacted: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(username)@\(shownHost):\(port)/\(database)"
    }

    /// The client's configuration: this server, user, password and
    /// database, TLS as ``sslMode`` says (NIOSSL's default client
    /// configuration).
    var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(.makeClientConfiguration())
        case .require: tls = .require(.makeClientConfiguration())
        }
        return PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
    }

    /// The replica's replication connection: the same server, user,
    /// password, database and TLS as ``clientConfiguration``.
    var replicaServer: PostgresReplica.Server {
        let tls: PostgresReplica.Server.TLS
        switch sslMode {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(.makeClientConfiguration())
        case .require: tls = .require(.makeClientConfiguration())
        }
        return PostgresReplica.Server(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
    }

    /// Connects once and disconnects, to say at once why PostgreSQL cannot
    /// be reached (a client's pool retries a refused connection without
    /// end, and says nothing of it): throws a ``CommandFailure`` with
    /// ``ExitStatus/postgres`` that gives the reason.
    func checkConnection(logger: Logger) async throws {
        do {
            let tls: PostgresConnection.Configuration.TLS
            switch sslMode {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
            let configuration = PostgresConnection.Configuration(
                host: host, port: port, username: username, password: password, database: database, tls: tls)
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close()
        } catch {
            throw CommandFailure(.postgres, "cannot connect to \(redacted): \(Self.describe(error))")
        }
    }

    /// A PostgreSQL error in words: the server's message and SQLSTATE, or
    /// the connection's error (a `PSQLError`'s own description hides both).
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let info = error.serverInfo, let message = info[.message] {
            return message + (info[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        return error.underlying.map { "\($0)" } ?? "\(error.code)"
    }

    /// Runs `body` with a running client of this URL's database, then shuts
    /// the client down.
    func withClient<T: Sendable>(
        logger: Logger, _ body: @escaping @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}
