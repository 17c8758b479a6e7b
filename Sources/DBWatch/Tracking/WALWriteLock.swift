#if canImport(Glibc)
    import Glibc
#endif

/// Whether some connection, in any process, is inside a write transaction
/// of a WAL database, read from the kernel's table of file locks.
///
/// A WAL commit writes its frames to `-wal` (an inotify event), then
/// publishes them in the `-shm` index (a memory mapping: no event), then
/// releases the write lock. Until that release, `PRAGMA data_version` can
/// still show the previous commit. SQLite's unix VFS takes that write lock
/// as a POSIX lock on byte 120 of `-shm` (sqlite.org/walformat.html, "the
/// WAL-index locks"). Opening `-shm` to ask `fcntl(F_GETLK)` is not an
/// option: closing any descriptor of a file drops every POSIX lock this
/// process holds on it, SQLite's included. `/proc/locks` needs no such
/// descriptor and also shows the locks of other connections in this process.
enum WALWriteLock {
    enum State: Equatable {
        /// A connection holds the write lock: a commit may be written and not yet published.
        case held
        /// No connection holds it (or the database has no `-shm`, so is not in shared WAL mode).
        case free
        /// The lock table cannot be read.
        case unknown
    }

    /// The byte of `-shm` that SQLite's unix VFS locks for `WAL_WRITE_LOCK`.
    static let writeLockByte: UInt64 = 120
    /// Linux's table of file locks.
    static let lockTable = "/proc/locks"

    /// The state of the write lock of the WAL database at `databasePath`.
    static func state(databasePath: String, lockTable: String = lockTable) -> State {
        var info = stat()
        guard stat(databasePath + "-shm", &info) == 0 else { return .free }
        guard let table = readAll(lockTable) else { return .unknown }
        return isWriteLocked(inode: UInt64(info.st_ino), in: table) ? .held : .free
    }

    /// Whether `table` (the text of `/proc/locks`) has a granted write lock
    /// covering ``writeLockByte`` of the file with `inode`. Lines look like
    /// `1: POSIX  ADVISORY  WRITE 4207 fe:00:5333868 120 120`; waiting
    /// requests (`1: -> POSIX ...`) hold nothing. Only the inode is compared
    /// (the device is written differently by some file systems): another
    /// file with the same inode costs a needless recheck, nothing more.
    static func isWriteLocked(inode: UInt64, in table: [UInt8]) -> Bool {
        var fields: [ArraySlice<UInt8>] = []
        fields.reserveCapacity(9)
        for line in table.split(separator: UInt8(ascii: "\n")) {
            fields.removeAll(keepingCapacity: true)
            for field in line.split(separator: UInt8(ascii: " ")) {
                fields.append(field)
                if fields.count == 8 { break }
            }
            guard fields.count == 8, !fields[1].elementsEqual("->".utf8), fields[3].elementsEqual("WRITE".utf8),
                let colon = fields[5].lastIndex(of: UInt8(ascii: ":")),
                number(fields[5][(colon + 1)...]) == inode,
                let start = number(fields[6])
            else { continue }
            let end = fields[7].elementsEqual("EOF".utf8) ? UInt64.max : number(fields[7])
            if let end, start <= writeLockByte, writeLockByte <= end { return true }
        }
        return false
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// The whole content of a `/proc` file (whose size `stat` does not tell).
    private static func readAll(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
        }
    }
}
