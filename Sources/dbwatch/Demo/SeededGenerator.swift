/// A small deterministic random number generator (SplitMix64): the same
/// seed gives the same simulated writes, so `dbwatch demo --seed 7` can be
/// replayed.
///
/// ```swift
/// var generator = SeededGenerator(seed: 7)
/// let roll = Int.random(in: 1...6, using: &generator)
/// ```
struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence depends only on `seed`.
    init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
