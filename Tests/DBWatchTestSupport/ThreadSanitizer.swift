import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Whether the thread sanitizer's runtime is loaded (`swift test
/// --sanitize=thread`). It slows the process five- to a thousandfold, so
/// tests that measure time or memory, not races, loosen or skip with it;
/// and a `dbwatch` built alongside runs under it too.
public let isThreadSanitized = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil
