/// A position in PostgreSQL's write-ahead log (an LSN), written by
/// PostgreSQL as two hexadecimal halves: `16/B374D848`.
///
/// A replica's position is the LSN up to which it has applied every
/// transaction of its tables. After an app commits to PostgreSQL, it reads
/// the commit's position (``PostgresReplica/currentPosition(of:)``) and waits
/// until a replica has reached it (``PostgresReplica/waitUntilApplied(_:timeout:)``).
///
/// ```swift
/// let position = LogSequenceNumber("16/B374D848")   // 0x16_B374_D848
/// position?.description                              // "16/B374D848"
/// ```
public struct LogSequenceNumber: RawRepresentable, Hashable, Comparable, Sendable, LosslessStringConvertible {
    /// The position as one 64-bit number, as `pg_lsn - '0/0'` gives it.
    public var rawValue: UInt64

    /// The start of the log.
    public static let zero = LogSequenceNumber(rawValue: 0)

    /// A position from its 64-bit value.
    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// A position from PostgreSQL's text, `X/Y` with X and Y hexadecimal
    /// (at most 8 digits each); `nil` for anything else.
    public init?(_ description: String) {
        let halves = description.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2, (1...8).contains(halves[0].count), (1...8).contains(halves[1].count),
            let high = UInt64(halves[0], radix: 16), let low = UInt64(halves[1], radix: 16)
        else { return nil }
        rawValue = high << 32 | low
    }

    /// PostgreSQL's text: `16/B374D848`.
    public var description: String {
        String(rawValue >> 32, radix: 16, uppercase: true) + "/"
            + String(rawValue & 0xFFFF_FFFF, radix: 16, uppercase: true)
    }

    /// Orders positions as the log does.
    public static func < (lhs: LogSequenceNumber, rhs: LogSequenceNumber) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
