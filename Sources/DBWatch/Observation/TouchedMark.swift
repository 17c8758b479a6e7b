import Synchronization

/// The position of the last commit that touched an observation's region
/// (or that one of its fetches may have missed), as its center records it,
/// readable without the center's lock.
///
/// A sync connection asks, for each of its subscriptions, whether a value
/// is still current whenever it composes a batch: a load, instead of the
/// center's lock once per subscription (see
/// ``ObservationCenter/firstPossibleChange(of:after:)``). The center
/// stores it under the lock that numbers the commit, so a reader that knows
/// a position at least that commit's also sees the mark.
package final class TouchedMark: Sendable {
    private let position = Atomic<UInt64>(0)

    init() {}

    /// The position of the last commit that touched the region; `.max`
    /// once the observation left its center (nothing is known any more).
    package var value: UInt64 { position.load(ordering: .acquiring) }

    /// Records a touch (positions only grow) or the observation's removal (`.max`).
    func set(_ value: UInt64) {
        position.store(value, ordering: .releasing)
    }
}
