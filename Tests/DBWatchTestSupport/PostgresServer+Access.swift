import Foundation

/// How clients authenticate to a ``PostgresServer``, and its TLS.
///
/// Every server's `pg_hba.conf` trusts `postgres` (and every user without
/// a line of its own) on 127.0.0.1, asks ``PostgresServer/PasswordUser``s
/// for their password with their method, and accepts
/// ``PostgresServer/PasswordUser/tls`` only over TLS. The users exist once
/// ``PostgresServer/createPasswordUsers()`` made them; TLS is on for a server
/// made with `tls: true`, with a certificate for `localhost` (not for
/// `127.0.0.1`: a test connects to the address to see a name refused) signed by a certificate authority the server's directory
/// holds (``PostgresServer/certificateAuthorityFile``).
extension PostgresServer {
    /// A user that must give a password.
    public struct PasswordUser: Sendable, Hashable {
        /// The user's name.
        public let name: String
        /// Its password.
        public let password: String
        /// The `pg_hba.conf` method.
        public let method: String
        /// `password_encryption` when the password is set (`md5` needs an
        /// MD5 hash stored).
        let encryption: String

        /// Authenticates with SCRAM-SHA-256.
        public static let scram = PasswordUser(
            name: "scram_user", password: "scram secret ✓", method: "scram-sha-256", encryption: "scram-sha-256")
        /// Authenticates with MD5.
        public static let md5 = PasswordUser(
            name: "md5_user", password: "md5 secret", method: "md5", encryption: "md5")
        /// Authenticates with SCRAM-SHA-256, over TLS only (`hostssl`).
        public static let tls = PasswordUser(
            name: "tls_user", password: "tls secret", method: "scram-sha-256", encryption: "scram-sha-256")

        /// Every password user.
        public static let all: [PasswordUser] = [.scram, .md5, .tls]
    }

    /// `pg_hba.conf`: the password users as ``PasswordUser`` says, then
    /// trust for everyone else on the loopback and the Unix socket.
    static var hostBasedAuthentication: String {
        """
        local all all trust
        hostssl all \(PasswordUser.tls.name) 127.0.0.1/32 \(PasswordUser.tls.method)
        host all \(PasswordUser.tls.name) 127.0.0.1/32 reject
        host all \(PasswordUser.scram.name) 127.0.0.1/32 \(PasswordUser.scram.method)
        host all \(PasswordUser.md5.name) 127.0.0.1/32 \(PasswordUser.md5.method)
        host all all 127.0.0.1/32 trust
        host all all ::1/128 trust

        """
    }

    /// Creates the ``PasswordUser``s, superusers with `REPLICATION`, their
    /// passwords stored as their method needs.
    public func createPasswordUsers() async throws {
        var script = ""
        for user in PasswordUser.all {
            script += """
                SET password_encryption = '\(user.encryption)';
                CREATE USER \(user.name) SUPERUSER REPLICATION PASSWORD '\(user.password)';

                """
        }
        try await psql(script)
    }

    /// The certificate authority that signed the server's certificate (PEM),
    /// when the server was made with `tls: true`.
    public var certificateAuthorityFile: String { directory.file("tls/ca.crt") }

    /// Makes a certificate authority and a server certificate for
    /// `localhost` with `openssl` in `folder`, and returns
    /// the server settings that turn TLS on with them.
    static func makeCertificates(in folder: String, programs: Programs) async throws -> [String: String] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        guard let openssl = RequiredProgram.openssl.path else {
            throw Failure("openssl is missing: apt-get install openssl")
        }
        let steps: [[String]] = [
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=dbwatch test CA",
                "-keyout", "ca.key", "-out", "ca.crt",
            ],
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key", "-out",
                "server.csr",
            ],
            [
                "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", "san.cnf", "-out", "server.crt",
            ],
        ]
        try Data("subjectAltName = DNS:localhost\n".utf8)
            .write(to: URL(fileURLWithPath: folder + "/san.cnf"))
        for step in steps {
            let result = try await ChildProcess.run(["/usr/bin/env", "-C", folder, openssl] + step, timeout: 60)
            guard result.exitStatus == 0 else { throw Failure("openssl \(step[0]) failed\n\(result)") }
        }
        // PostgreSQL refuses a key that others may read.
        guard chmod(folder + "/server.key", 0o600) == 0 else { throw Failure("chmod server.key: errno \(errno)") }
        for file in ["", "/server.key", "/server.crt", "/ca.crt"] { try programs.giveToServerUser(folder + file) }
        return ["ssl": "on", "ssl_cert_file": folder + "/server.crt", "ssl_key_file": folder + "/server.key"]
    }
}
