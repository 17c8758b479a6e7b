import DBWatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The test support's child processes, which end-to-end tests start while
/// other tests hold sockets and files open in parallel.
@Suite("Child processes of the tests")
struct ChildProcessTests {
    /// A descriptor this process holds open without close-on-exec does not
    /// reach a child: a socket that a test closes to make a server see its
    /// client leave must not stay open in another test's child.
    @Test func aChildInheritsOnlyItsStandardDescriptors() async throws {
        let held = open("/dev/null", O_RDONLY)
        #expect(held > 2)
        defer { close(held) }
        let listing = try await ChildProcess.run(["/bin/sh", "-c", "ls /proc/$$/fd"])
        let descriptors = Set(listing.stdout.split(separator: "\n").compactMap { Int32($0) })
        #expect(!descriptors.contains(held), "the child holds \(descriptors.sorted())")
        #expect(descriptors.isSuperset(of: [0, 1, 2]))
    }
}
