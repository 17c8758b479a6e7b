import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starts child processes with `posix_spawn`, their standard output and
/// error (and input, when asked) on pipes that no other child inherits:
/// the engine under ``ChildProcess``.
///
/// Tests run in parallel: a pipe created while another thread spawns a
/// child would leak into that child and keep its reader from seeing the
/// end. The pipes are made close-on-exec and spawned under one lock, and
/// the child closes every descriptor but its standard three (a test's
/// socket inherited by another test's child stayed open after the test
/// closed it, and its server never saw the client leave).
enum Spawner {
    /// A plain lock: no Swift state is held across `posix_spawn`, whose
    /// vfork-style child the thread sanitizer cannot follow.
    private static let lock = NSLock()

    /// Spawns `command` (`command[0]` is the program's path) with standard
    /// input from `input`. Returns the pid, the read ends of the output and
    /// error pipes and the write end of the input pipe (with
    /// ``ChildProcess/Input/pipe``); the caller reads them and reaps the
    /// child.
    static func spawn(_ command: [String], environment: [String: String], input: ChildProcess.Input) throws -> (
        pid: pid_t, output: Int32, error: Int32, input: Int32?
    ) {
        lock.lock()
        defer { lock.unlock() }
        var output: [Int32] = [0, 0]
        var error: [Int32] = [0, 0]
        var inputPipe: [Int32] = [0, 0]
        guard pipe(&output) == 0 else { throw ChildProcess.Failure("pipe failed: errno \(errno)") }
        guard pipe(&error) == 0 else {
            closeAll(output)
            throw ChildProcess.Failure("pipe failed: errno \(errno)")
        }
        var pipes = output + error
        if case .pipe = input {
            guard pipe(&inputPipe) == 0 else {
                closeAll(pipes)
                throw ChildProcess.Failure("pipe failed: errno \(errno)")
            }
            pipes += inputPipe
        }
        for descriptor in pipes { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        switch input {
        case .none: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .file(let path): posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
        case .pipe: posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
        }
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, error[1], 2)
        // Nothing else of this process reaches the child: a socket that a
        // test holds open (or closes to make a server see its client leave)
        // must not stay open in another test's child.
        _ = closeFrom?(&actions, 3)
        // Children start like from a shell: no blocked signal (a Dispatch
        // worker thread blocks most of them, and a child inherits the mask)
        // and the default action for the ones the tests send.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, &attributes, argv, envp)
        close(output[1])
        close(error[1])
        if case .pipe = input { close(inputPipe[0]) }
        guard spawned == 0 else {
            close(output[0])
            close(error[0])
            if case .pipe = input { close(inputPipe[1]) }
            throw ChildProcess.Failure("cannot start \(command[0]): error \(spawned)")
        }
        let inputEnd: Int32? = if case .pipe = input { inputPipe[1] } else { nil }
        return (pid, output[0], error[0], inputEnd)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later),
    /// which Swift's Glibc module does not import; nil where it is missing.
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    private static let closeFrom: CloseFrom? = {
        let name = "posix_spawn_file_actions_addclosefrom_np"
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: CloseFrom.self)
    }()

    private static func closeAll(_ descriptors: [Int32]) {
        for descriptor in descriptors { close(descriptor) }
    }

    /// Waits for `pid` to end and returns its exit code, or 128 + the signal
    /// that ended it. Blocks the calling thread.
    static func waitForExit(of pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}
