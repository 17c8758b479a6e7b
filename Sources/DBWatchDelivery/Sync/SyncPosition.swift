/// A position of the sync protocol, `EPOCH/SEQUENCE`: one history of the
/// database (the epoch) and a sequence that grows with every commit of it.
///
/// ```swift
/// let position = SyncPosition(parsing: "k7Qx2/1042")   // epoch "k7Qx2", sequence 1042
/// position?.description                               // "k7Qx2/1042"
/// ```
package struct SyncPosition: Sendable, Hashable, CustomStringConvertible {
    /// The history: chosen at random when a server starts.
    package var epoch: String
    /// The serial of the last commit the position holds.
    package var sequence: UInt64

    package init(epoch: String, sequence: UInt64) {
        self.epoch = epoch
        self.sequence = sequence
    }

    /// Parses `EPOCH/SEQUENCE`: an epoch of 1 to 64 letters, digits, `-`
    /// or `_`, and a decimal sequence below 2⁶⁴. `nil` for anything else.
    package init?(parsing text: String) {
        guard text.utf8.count <= 90, let slash = text.lastIndex(of: "/") else { return nil }
        let epoch = text[..<slash]
        let digits = text[text.index(after: slash)...]
        guard (1...64).contains(epoch.utf8.count), epoch.utf8.allSatisfy(Self.isEpochByte),
            !digits.isEmpty, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let sequence = UInt64(digits)
        else { return nil }
        self.init(epoch: String(epoch), sequence: sequence)
    }

    private static func isEpochByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    package var description: String { "\(epoch)/\(sequence)" }

    /// A new random epoch: 16 letters and digits.
    package static func randomEpoch() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        return String(decoding: (0..<16).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
    }
}
