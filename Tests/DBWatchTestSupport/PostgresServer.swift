import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL server of its own for a test: a data directory in a
/// temporary directory, listening on 127.0.0.1 and a free port, with
/// `wal_level = logical` (for replication slots), trusting every local
/// connection as the user `postgres`. Start one with
/// ``withPostgresServer(settings:tls:_:)``, which stops it and removes its directory
/// afterwards, also when the test throws.
///
/// ```swift
/// try await withPostgresServer { server in
///     _ = try await server.psql("CREATE TABLE player (id int PRIMARY KEY, name text)")
///     // connect to server.host, server.port as server.username, or to server.connectionURL
///     try await server.restart()
///     #expect(try await server.psql("SELECT count(*) FROM player") == "0")
/// }
/// ```
///
/// The server programs come from Debian's `postgresql` package (see
/// ``programsFolder``); a test that starts a server carries
/// `RequiredProgram.postgresql.trait`, which skips it where they are
/// missing.
/// PostgreSQL refuses to run as root: when the tests run as root, the
/// server runs as the user `postgres` (`runuser -u postgres --`), in a
/// directory it owns. The cluster is made by `initdb` once per test process,
/// into a template that each server copies (`cp -a`, 0.1 s instead of 1 s)
/// and that is removed when the process exits. The server runs with
/// `fsync = off`: a test's data need not survive a crash of the machine.
public final class PostgresServer: Sendable {
    /// A server that could not be found, started, stopped or queried.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String

        /// A failure described by `description`.
        public init(_ description: String) { self.description = description }
    }

    /// The address the server listens on: `127.0.0.1`.
    public let host = "127.0.0.1"
    /// The user tests connect as: `postgres`, a superuser, without password.
    public let username = "postgres"
    /// The database that exists from the start: `postgres`.
    public let database = "postgres"
    /// The temporary directory holding the data directory (`data`), the
    /// server's log (`server.log`) and its Unix socket.
    public let directory: TemporaryDirectory

    /// Settings given to the server after the defaults (`-c name=value`).
    public let settings: [String: String]

    private let programs: Programs

    private struct State {
        /// The port, fixed by the first successful start; 0 before.
        var port = 0
        /// The postmaster's pid while it runs.
        var pid: pid_t?
        /// The number of the next database ``createDatabase()`` makes.
        var nextDatabase = 1
        /// The number of the next script file ``psql(_:database:)`` writes.
        var nextScript = 1
    }

    private let state = Protected(State())

    private init(directory: TemporaryDirectory, programs: Programs, settings: [String: String]) {
        self.directory = directory
        self.programs = programs
        self.settings = settings
    }

    /// Makes a server in a new temporary directory, not started yet (see
    /// ``start()``); ``remove()`` stops it and removes the directory.
    /// ``withPostgresServer(settings:tls:_:)`` does both.
    ///
    /// - Parameter settings: server settings that replace or add to the
    ///   defaults, such as `["max_wal_senders": "4"]` for a test that
    ///   streams with `pg_recvlogical`.
    /// - Parameter tls: whether the server accepts TLS, with a certificate
    ///   signed by ``certificateAuthorityFile`` (see
    ///   ``makeCertificates(in:programs:)``).
    public static func make(settings: [String: String] = [:], tls: Bool = false) async throws -> PostgresServer {
        let programs = try await Programs.find()
        let template = try await PostgresTemplate.shared.dataDirectory(programs: programs)
        let directory = try TemporaryDirectory()
        var settings = settings
        do {
            // Whose server this is, for the clean-up after a killed test process.
            try Data("\(getpid())".utf8).write(to: URL(fileURLWithPath: directory.file(ownerFile)))
            try programs.giveToServerUser(directory.path)
            let copy = try await ChildProcess.run(["/bin/cp", "-a", template, directory.file("data")])
            guard copy.exitStatus == 0 else { throw Failure("copying the template cluster failed\n\(copy)") }
            let hba = directory.file("data/pg_hba.conf")
            try Data(hostBasedAuthentication.utf8).write(to: URL(fileURLWithPath: hba))
            try programs.giveToServerUser(hba)
            if tls {
                settings.merge(try await makeCertificates(in: directory.file("tls"), programs: programs)) { $1 }
            }
        } catch {
            directory.remove()
            throw error
        }
        return PostgresServer(directory: directory, programs: programs, settings: settings)
    }

    /// The path of one of PostgreSQL's programs (`pg_recvlogical`,
    /// `pg_dump`…), from the folder of the server's.
    public func program(_ name: String) -> String { programs.path(name) }

    /// The file of a server's directory that holds the pid of the test
    /// process that made it.
    public static let ownerFile = "owner.pid"

    /// Ends the servers and removes the directories that test processes
    /// killed before they could (their `owner.pid` names a process that is
    /// gone): a postmaster outlives the process that started it. The first
    /// server of a test process does it.
    public static func removeAbandonedServers() async throws {
        await removeAbandonedServers(programs: try await Programs.find())
    }

    static func removeAbandonedServers(programs: Programs) async {
        let base = FileManager.default.temporaryDirectory.path
        for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        where name.hasPrefix("dbwatch-tests-") {
            let directory = base + "/" + name
            guard let owner = try? String(contentsOfFile: directory + "/" + ownerFile, encoding: .utf8),
                let pid = pid_t(owner), pid != getpid(), !FileManager.default.fileExists(atPath: "/proc/\(pid)")
            else { continue }
            let data = directory + "/data"
            if let postmaster = postmasterPID(dataDirectory: data), isAlive(postmaster) {
                try? await end(pid: postmaster, programs: programs, dataDirectory: data)
            }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// The data directory.
    public var dataDirectory: String { directory.file("data") }

    /// The server's log file.
    public var logFile: String { directory.file("server.log") }

    /// The port the server listens on (the same after ``restart()``); 0
    /// before the first ``start()``.
    public var port: Int { state.withLock { $0.port } }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    public var connectionURL: String { connectionURL(database: database) }

    /// `postgres://postgres@127.0.0.1:PORT/<database>`.
    public func connectionURL(database: String) -> String {
        "postgres://\(username)@\(host):\(port)/\(database)"
    }

    /// The postmaster's pid while the server runs (as started by
    /// ``start()``); `nil` once ``stop()`` ended it.
    public var pid: pid_t? { state.withLock { $0.pid } }

    /// Whether the postmaster started by ``start()`` still runs.
    public var isRunning: Bool { pid.map(Self.isAlive) ?? false }

    /// Starts the server (`pg_ctl start -w -t 30`) and returns once it
    /// accepts connections. The first start picks a free port (another one
    /// if a test running in parallel took it meanwhile); later ones reuse
    /// it, so a test can restart a server its clients know.
    public func start() async throws {
        guard !isRunning else { throw Failure("the server already runs (pid \(pid ?? 0))") }
        let fixedPort = port
        var lastLog = ""
        for attempt in 1...30 {
            let port = fixedPort != 0 ? fixedPort : try Self.freePort()
            let logStart = Self.fileSize(logFile)
            let options =
                ([
                    "-c wal_level=logical", "-c max_replication_slots=20", "-c max_wal_senders=20",
                    "-c fsync=off", "-c synchronous_commit=on", "-c listen_addresses=\(host)", "-p \(port)",
                    "-c unix_socket_directories='\(directory.path)'",
                ] + settings.sorted { $0.key < $1.key }.map { "-c \($0.key)='\($0.value)'" }).joined(separator: " ")
            let result = try await programs.runAsServerUser(
                ["pg_ctl", "start", "-D", dataDirectory, "-l", logFile, "-w", "-t", "30", "-o", options],
                in: directory.path, timeout: 45)
            let pid = Self.postmasterPID(dataDirectory: dataDirectory)
            if result.exitStatus == 0, let pid, Self.isAlive(pid) {
                state.withLock { ($0.port, $0.pid) = (port, pid) }
                return
            }
            // pg_ctl gave up (its 30 s passed) with a postmaster still running.
            if let pid, Self.isAlive(pid) { try await Self.end(pid: pid, programs: programs, dataDirectory: nil) }
            lastLog = Self.text(of: logFile, from: logStart)
            guard lastLog.contains("Address already in use") else {
                throw Failure("pg_ctl start failed\n\(result)\n--- server.log:\n\(lastLog)")
            }
            // The port was taken between our probe and the server's bind;
            // a fixed port may be freed soon.
            // About 25 s in all, so a loaded machine's scheduling does not
            // use the attempts up before the holder lets go.
            if fixedPort != 0 { try await Task.sleep(for: .milliseconds(min(100 * attempt, 1000))) }
        }
        throw Failure("no free port after 30 attempts\n--- server.log:\n\(lastLog)")
    }

    /// Stops the server: `pg_ctl stop -m fast` (active connections are
    /// closed), then, if the postmaster still runs, `-m immediate`, then
    /// `SIGKILL` of its pid; returns once that pid has ended, or throws
    /// after about a minute. Nothing happens when it is not running.
    public func stop() async throws {
        try await stop(modes: ["fast", "immediate"])
    }

    /// Stops the server with `pg_ctl stop -m <mode>` for each of `modes` in
    /// turn until it ended (`immediate` ends it as a crash would: the next
    /// start recovers), then `SIGKILL`.
    public func stop(modes: [String]) async throws {
        guard let pid else { return }
        try await Self.end(pid: pid, programs: programs, dataDirectory: dataDirectory, modes: modes)
        state.withLock { $0.pid = nil }
    }

    /// Stops and starts the server on the same data and port.
    public func restart() async throws {
        try await stop()
        try await start()
    }

    /// Stops the server (see ``stop()``) and removes its directory, even
    /// when stopping failed.
    public func remove() async throws {
        defer { directory.remove() }
        try await stop()
    }

    /// Runs `sql` with `psql -X -q -At -v ON_ERROR_STOP=1` in `database`
    /// (``database`` by default) and returns what it printed, without the
    /// final newline: one line per row, columns separated by `|`. The
    /// statements run one after the other, each in its own transaction
    /// unless `sql` says `BEGIN`; the first error stops them and throws.
    @discardableResult
    public func psql(_ sql: String, database: String? = nil) async throws -> String {
        let number = state.withLock { state in
            defer { state.nextScript += 1 }
            return state.nextScript
        }
        let script = directory.file("script-\(number).sql")
        try Data(sql.utf8).write(to: URL(fileURLWithPath: script))
        defer { try? FileManager.default.removeItem(atPath: script) }
        let command = [
            programs.path("psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", String(port),
            "-U", username, "-d", database ?? self.database, "-f", script,
        ]
        var environment = Programs.environment
        environment["PGCONNECT_TIMEOUT"] = "10"
        let result = try await ChildProcess.run(command, environment: environment)
        guard result.exitStatus == 0 else {
            throw Failure("psql failed\n\(result)\n--- SQL:\n\(sql)")
        }
        var output = result.stdout
        if output.hasSuffix("\n") { output.removeLast() }
        return output
    }

    /// Creates a new, empty database (`test_1`, `test_2`, …) and returns its
    /// name, for tests that share one server.
    public func createDatabase() async throws -> String {
        let name = state.withLock { state in
            defer { state.nextDatabase += 1 }
            return "test_\(state.nextDatabase)"
        }
        try await psql("CREATE DATABASE \(name)")
        return name
    }

    // MARK: - Processes

    /// Ends the postmaster `pid`: `pg_ctl stop -m fast`, then `-m
    /// immediate`, then `SIGKILL`, each waited for a bounded time.
    private static func end(
        pid: pid_t, programs: Programs, dataDirectory: String?, modes: [String] = ["fast", "immediate"]
    ) async throws {
        if let dataDirectory {
            for mode in modes {
                _ = try? await programs.runAsServerUser(
                    ["pg_ctl", "stop", "-D", dataDirectory, "-m", mode, "-w", "-t", "30"],
                    in: (dataDirectory as NSString).deletingLastPathComponent, timeout: 45)
                if try await waitForEnd(of: pid, seconds: 5) { return }
            }
        }
        Glibc.kill(pid, SIGKILL)
        guard try await waitForEnd(of: pid, seconds: 10) else {
            throw Failure("the postmaster \(pid) still runs after SIGKILL")
        }
    }

    /// Waits until `pid` has ended, at most `seconds`; returns whether it did.
    private static func waitForEnd(of pid: pid_t, seconds: Double) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while isAlive(pid) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// Whether the process `pid` runs: it exists and is no zombie (a
    /// postmaster is not the tests' child: once it ended, it waits for
    /// init to reap it).
    public static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: end)...].split(separator: " ").first
        return state != "Z" && state != "X"
    }

    /// The pid on the first line of `postmaster.pid`, if any.
    private static func postmasterPID(dataDirectory: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8) else {
            return nil
        }
        return text.split(separator: "\n").first.flatMap { pid_t($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// A TCP port on 127.0.0.1 that nothing listens on now: the kernel's
    /// choice for a socket bound to port 0.
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("socket failed: errno \(errno)") }
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
        guard bound else { throw Failure("binding a probe socket failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    /// The text of `path` from byte `offset`.
    private static func text(of path: String, from offset: Int) -> String {
        guard let data = FileManager.default.contents(atPath: path), data.count >= offset else { return "" }
        return String(decoding: data.dropFirst(offset), as: UTF8.self)
    }
}

/// Runs `body` with a started ``PostgresServer``, then stops it and removes
/// its directory, also when `body` throws.
///
/// - Parameters:
///   - settings: server settings that replace or add to the defaults (see
///     ``PostgresServer/make(settings:tls:)``).
///   - tls: whether the server accepts TLS.
///
/// ```swift
/// try await withPostgresServer { server in
///     #expect(try await server.psql("SHOW wal_level") == "logical")
/// }
/// ```
public func withPostgresServer<T>(
    settings: [String: String] = [:], tls: Bool = false, _ body: (PostgresServer) async throws -> T
) async throws -> T {
    try await PostgresServerSlots.shared.withSlot {
        let server = try await PostgresServer.make(settings: settings, tls: tls)
        let result: T
        do {
            try await server.start()
            result = try await body(server)
        } catch {
            try? await server.remove()
            throw error
        }
        try await server.remove()
        return result
    }
}

/// At most a few servers of one test process at once: the tests run in
/// parallel, and dozens of PostgreSQL servers starting together (each a
/// handful of processes) loaded the machine enough to make the timing tests
/// of other suites miss their bounds.
actor PostgresServerSlots {
    /// The slots of this test process.
    static let shared = PostgresServerSlots(count: 4)

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { free = count }

    /// Runs `body` once a slot is free, and frees it after.
    nonisolated func withSlot<T>(_ body: () async throws -> T) async throws -> T {
        // A test queued behind others is slow, not hung: its timeout starts with its slot.
        await TestDeadline.excludingWait { await take() }
        do {
            let value = try await body()
            await give()
            return value
        } catch {
            await give()
            throw error
        }
    }

    private func take() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func give() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

// MARK: - Programs

/// PostgreSQL's programs and how to run the server ones: as the user
/// `postgres` when this process is root.
struct Programs: Sendable {
    /// The folder of `initdb`, `pg_ctl`, `postgres` and `psql`.
    let directory: String
    /// `runuser -u postgres --` when root, else nothing.
    let prefix: [String]
    /// The server user's uid and gid when root.
    let owner: (uid: uid_t, gid: gid_t)?

    func path(_ program: String) -> String { directory + "/" + program }

    /// This process's environment without the `PG…` variables that would
    /// redirect PostgreSQL's programs (`PGDATA`, `PGHOST`, …).
    static var environment: [String: String] {
        ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
    }

    /// Runs `program` of the server's folder as the server's user, in
    /// `directory` (the user `postgres` may not enter the tests' current
    /// folder), killed after `timeout` seconds.
    func runAsServerUser(_ command: [String], in directory: String, timeout: Double) async throws
        -> ChildProcess.Snapshot
    {
        try await ChildProcess.run(
            prefix + ["/usr/bin/env", "-C", directory, path(command[0])] + command.dropFirst(),
            environment: Self.environment, timeout: timeout)
    }

    /// Makes `path` the server user's (when root).
    func giveToServerUser(_ path: String) throws {
        guard let owner else { return }
        guard chown(path, owner.uid, owner.gid) == 0 else {
            throw PostgresServer.Failure("chown postgres \(path) failed: errno \(errno)")
        }
    }

    static func find() async throws -> Programs {
        let directory = try await serverDirectory()
        guard geteuid() == 0 else { return Programs(directory: directory, prefix: [], owner: nil) }
        guard let user = getpwnam("postgres") else {
            throw PostgresServer.Failure(
                "PostgreSQL refuses to run as root and there is no user `postgres` to run it as: "
                    + "apt-get install postgresql")
        }
        guard let runuser = ["/usr/sbin/runuser", "/sbin/runuser"].first(where: FileManager.default.isExecutableFile)
        else { throw PostgresServer.Failure("runuser (util-linux) is missing: apt-get install util-linux") }
        return Programs(
            directory: directory, prefix: [runuser, "-u", "postgres", "--"],
            owner: (user.pointee.pw_uid, user.pointee.pw_gid))
    }

    /// ``PostgresServer/programsFolder``, or a failure that says how to
    /// install PostgreSQL.
    private static func serverDirectory() async throws -> String {
        guard let folder = PostgresServer.programsFolder else {
            throw PostgresServer.Failure(
                "PostgreSQL's server programs (initdb, pg_ctl, postgres, psql) were not found "
                    + "(\(PostgresServer.programsFolderLookup)): apt-get install postgresql")
        }
        return folder
    }
}

extension PostgresServer {
    /// The environment variable that names the folder of PostgreSQL's
    /// server programs, for a PostgreSQL installed elsewhere; pointed at an
    /// empty folder, the tests see a machine without PostgreSQL.
    public static let programsFolderVariable = "DBWATCH_TESTS_POSTGRESQL_BIN"

    /// The folder of PostgreSQL's server programs (`initdb`, `pg_ctl`,
    /// `postgres`, `psql`), or nil when they are not installed: the folder
    /// `DBWATCH_TESTS_POSTGRESQL_BIN` names when it is set (and no other),
    /// else the first folder of `PATH` that holds them all, else the newest
    /// `/usr/lib/postgresql/<version>/bin` that does (Debian's
    /// `postgresql`, whose `/usr/bin` holds `psql` only).
    public static var programsFolder: String? {
        let hasServer = { (folder: String) in
            ["initdb", "pg_ctl", "postgres", "psql"].allSatisfy {
                FileManager.default.isExecutableFile(atPath: folder + "/" + $0)
            }
        }
        let environment = ProcessInfo.processInfo.environment
        if let folder = environment[programsFolderVariable] { return hasServer(folder) ? folder : nil }
        let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        if let folder = path.first(where: hasServer) { return folder }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.lazy.map { "/usr/lib/postgresql/\($0)/bin" }
            .first(where: hasServer)
    }

    /// Where ``programsFolder`` looked, for a message.
    static var programsFolderLookup: String {
        if let folder = ProcessInfo.processInfo.environment[programsFolderVariable] {
            return "in \(folder), which \(programsFolderVariable) names"
        }
        return "in PATH nor in /usr/lib/postgresql/*/bin; \(programsFolderVariable) may name their folder"
    }
}

// MARK: - Template

/// The cluster that `initdb` makes once per test process and each server
/// copies: `initdb` takes about 1 s, `cp -a` of its 40 MB about 0.1 s.
final class PostgresTemplate: Sendable {
    /// The one template of this process.
    static let shared = PostgresTemplate()

    /// The making of the template, shared by the servers that start while
    /// it runs.
    private let making = Protected<Task<String, any Error>?>(nil)

    /// `…/dbwatch-postgres-template-<pid>`: one per test process, removed
    /// when it exits, or by the next process if it was killed.
    private static var folder: String { folder(of: getpid()) }

    private static func folder(of pid: pid_t) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("dbwatch-postgres-template-\(pid)").path
    }

    /// The template's data directory, made on the first call.
    func dataDirectory(programs: Programs) async throws -> String {
        let task = making.withLock { making in
            if let making { return making }
            let task = Task { try await Self.make(programs: programs) }
            making = task
            return task
        }
        return try await task.value
    }

    private static func make(programs: Programs) async throws -> String {
        removeAbandonedTemplates()
        await PostgresServer.removeAbandonedServers(programs: programs)
        let folder = Self.folder
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: PostgresTemplate.folder) }
        try programs.giveToServerUser(folder)
        let data = folder + "/data"
        let result = try await programs.runAsServerUser(
            [
                "initdb", "-A", "trust", "-U", "postgres", "--encoding=UTF8", "--locale=C", "--no-sync",
                "-D", data,
            ], in: folder, timeout: defaultTestTimeout)
        guard result.exitStatus == 0 else { throw PostgresServer.Failure("initdb failed\n\(result)") }
        return data
    }

    /// Removes the templates of test processes that were killed.
    private static func removeAbandonedTemplates() {
        let base = FileManager.default.temporaryDirectory.path
        let prefix = "dbwatch-postgres-template-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != getpid(),
                !FileManager.default.fileExists(atPath: "/proc/\(pid)")
            else { continue }
            try? FileManager.default.removeItem(atPath: base + "/" + name)
        }
    }
}
