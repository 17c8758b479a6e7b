#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Synchronization

/// Wakes a callback when files of one directory change, with Linux inotify.
///
/// A dedicated thread blocks in `poll(2)` on the inotify descriptor and a
/// pipe used to stop it: no CPU is spent while nothing happens.
final class FileWatcher: Sendable {
    private let inotify: Int32
    private let stopPipe: (read: Int32, write: Int32)
    private let stopped = Locked(false)
    private let exited = DispatchSemaphore(value: 0)

    /// Starts watching `directory` for the events of `names` (file name to
    /// inotify mask: writes, creations, deletions, renames), calling
    /// `onChange` on the watcher's thread.
    ///
    /// - Throws: `SQLiteError` (`.cannotOpen`) when inotify is unavailable.
    init(directory: String, names: [String: UInt32], onChange: @escaping @Sendable () -> Void) throws {
        let inotify = inotify_init1(Int32(IN_CLOEXEC))
        guard inotify >= 0 else {
            throw SQLiteError(code: .cannotOpen, message: "inotify_init1 failed: errno \(errno)")
        }
        let mask = UInt32(IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE)
        guard inotify_add_watch(inotify, directory, mask) >= 0 else {
            let error = errno
            close(inotify)
            throw SQLiteError(code: .cannotOpen, message: "cannot watch \(directory): errno \(error)")
        }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            close(inotify)
            throw SQLiteError(code: .cannotOpen, message: "pipe failed: errno \(errno)")
        }
        self.inotify = inotify
        self.stopPipe = (fds[0], fds[1])
        let thread = Thread { [inotify, stopPipe, exited] in
            nameCurrentThread("dbwatch.watcher")
            FileWatcher.run(inotify: inotify, stop: stopPipe.read, names: names, onChange: onChange)
            exited.signal()
        }
        thread.stackSize = 256 * 1024
        thread.start()
    }

    deinit {
        stop()
    }

    /// Stops the thread and waits for it; idempotent.
    func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        exited.wait()
        close(inotify)
        close(stopPipe.read)
        close(stopPipe.write)
    }

    /// Every change to a file.
    static let anyChange = UInt32(IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE)
    /// The file going away.
    static let removal = UInt32(IN_DELETE | IN_MOVED_FROM)

    private static func run(inotify: Int32, stop: Int32, names: [String: UInt32], onChange: @Sendable () -> Void) {
        var descriptors = [
            pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
        ]
        let bufferSize = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        // A WAL commit writes its frames (the event) before it publishes them
        // in the memory-mapped `-shm` index (no event): the monitor, not this
        // thread, checks again while the writer is in between.
        while true {
            descriptors[0].revents = 0
            descriptors[1].revents = 0
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if descriptors[1].revents != 0 { return }
            guard descriptors[0].revents & Int16(POLLIN) != 0 else { continue }
            let count = read(inotify, buffer, bufferSize)
            guard count > 0 else { continue }
            var offset = 0
            var relevant = false
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameLength = Int(event.len)
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    relevant = true
                } else if nameLength > 0 {
                    let namePointer = (buffer + offset + MemoryLayout<inotify_event>.size)
                        .assumingMemoryBound(to: CChar.self)
                    if let mask = names[String(cString: namePointer)], event.mask & mask != 0 { relevant = true }
                }
                offset += MemoryLayout<inotify_event>.size + nameLength
            }
            if relevant { onChange() }
        }
    }
}
