import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL 15 of the benchmark's own: `initdb` into a temporary
/// directory owned by the user `postgres` (PostgreSQL refuses root), started
/// with `pg_ctl` on 127.0.0.1 and a free port, with `wal_level = logical`,
/// `fsync = off` and `synchronous_commit = on`. ``stop()`` ends the
/// postmaster by its pid and removes the directory.
final class BenchPostgres: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let programs = "/usr/lib/postgresql/15/bin"
    let directory: String
    let port: Int
    /// The first postmaster's pid (``currentPID`` after a restart).
    let pid: pid_t
    /// `runuser -u postgres --` when root.
    let asServer: [String]

    var dataDirectory: String { directory + "/data" }

    private init(directory: String, port: Int, pid: pid_t, asServer: [String]) {
        self.directory = directory
        self.port = port
        self.pid = pid
        self.asServer = asServer
    }

    /// The server's log.
    var logFile: String { directory + "/server.log" }

    /// The running postmaster's pid, from `postmaster.pid`.
    var currentPID: pid_t? {
        let text = (try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").first.flatMap { pid_t($0) }.flatMap { Self.isAlive($0) ? $0 : nil }
    }

    /// Runs `pg_ctl` with `arguments` as the server's user; throws unless
    /// it succeeds.
    func pgctl(_ arguments: [String]) throws {
        let result = try Self.run(
            asServer + ["/usr/bin/env", "-C", directory, Self.programs + "/pg_ctl", "-D", dataDirectory] + arguments
                + ["-w", "-t", "60"], timeout: 90)
        guard result.status == 0 else { throw Failure(description: "pg_ctl \(arguments) failed: \(result.output)") }
    }

    /// The options the server starts with (also after a restart).
    var startOptions: String {
        [
            "-c wal_level=logical", "-c max_replication_slots=20", "-c max_wal_senders=20", "-c fsync=off",
            "-c synchronous_commit=on", "-c listen_addresses=127.0.0.1", "-p \(port)",
            "-c unix_socket_directories='\(directory)'",
        ].joined(separator: " ")
    }

    /// Starts the stopped server again.
    func start() throws { try pgctl(["start", "-l", logFile, "-o", startOptions]) }

    /// The server options, as the results state them.
    static let settings = "wal_level=logical fsync=off synchronous_commit=on"

    static func start() throws -> BenchPostgres {
        var template = Array("/tmp/dbwatch-bench-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Failure(description: "mkdtemp failed: errno \(errno)") }
        let directory = String(cString: made)
        do {
            let asServer: [String]
            if geteuid() == 0 {
                guard let user = getpwnam("postgres") else { throw Failure(description: "no user postgres") }
                guard chown(directory, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                    throw Failure(description: "chown failed: errno \(errno)")
                }
                asServer = ["/usr/sbin/runuser", "-u", "postgres", "--"]
            } else {
                asServer = []
            }
            let initdb = try run(
                asServer + [
                    "/usr/bin/env", "-C", directory, programs + "/initdb", "-A", "trust", "-U", "postgres",
                    "--encoding=UTF8", "--locale=C", "--no-sync", "-D", directory + "/data",
                ], timeout: 120)
            guard initdb.status == 0 else { throw Failure(description: "initdb failed: \(initdb.output)") }
            let port = try freePort()
            let options = [
                "-c wal_level=logical", "-c max_replication_slots=20", "-c max_wal_senders=20", "-c fsync=off",
                "-c synchronous_commit=on", "-c listen_addresses=127.0.0.1", "-p \(port)",
                "-c unix_socket_directories='\(directory)'",
            ].joined(separator: " ")
            let start = try run(
                asServer + [
                    "/usr/bin/env", "-C", directory, programs + "/pg_ctl", "start", "-D", directory + "/data", "-l",
                    directory + "/server.log", "-w", "-t", "30", "-o", options,
                ], timeout: 60)
            let pidText = (try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)) ?? ""
            guard let pid = pidText.split(separator: "\n").first.flatMap({ pid_t($0) }) else {
                throw Failure(description: "pg_ctl start failed: \(start.output)")
            }
            guard start.status == 0 else {
                kill(pid, SIGKILL)
                throw Failure(description: "pg_ctl start failed: \(start.output)")
            }
            return BenchPostgres(directory: directory, port: port, pid: pid, asServer: asServer)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// Ends the postmaster (SIGINT: PostgreSQL's fast shutdown; SIGKILL
    /// after 20 s) and removes the directory.
    func stop() {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let pid = currentPID else { return }
        kill(pid, SIGINT)
        let deadline = Date().addingTimeInterval(20)
        while Self.isAlive(pid), Date() < deadline { usleep(10_000) }
        if Self.isAlive(pid) {
            kill(pid, SIGKILL)
            let deadline = Date().addingTimeInterval(10)
            while Self.isAlive(pid), Date() < deadline { usleep(10_000) }
        }
    }

    /// Whether `pid` runs and is no zombie (the postmaster is not our child).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: end)...].split(separator: " ").first
        return state != "Z" && state != "X"
    }

    /// Runs a command (`posix_spawn`, its output to a file), killed after
    /// `timeout` seconds; its exit status and its output.
    static func run(_ command: [String], timeout: Double) throws -> (status: Int32, output: String) {
        let outputPath = "/tmp/dbwatch-bench-pg-\(getpid())-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
            .map { "\($0.key)=\($0.value)" }
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, nil, &argv, &envp)
        guard spawned == 0 else { throw Failure(description: "posix_spawn \(command[0]) failed: \(spawned)") }
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while true {
            let waited = waitpid(pid, &status, WNOHANG)
            if waited == pid { break }
            if waited < 0 { throw Failure(description: "waitpid failed: errno \(errno)") }
            if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                break
            }
            usleep(10_000)
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : -1, output)
    }

    /// A TCP port on 127.0.0.1 that nothing listens on now.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
