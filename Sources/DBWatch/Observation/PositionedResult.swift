/// A fetched result with its **position**: the serial of the last commit
/// the snapshot it was read from holds (see ``FetchBatch``). Without a
/// result, the news that the last result delivered is still the current
/// one at that position: a fetch found it unchanged.
///
/// Positions grow with every commit this process publishes: its own
/// writer's, numbered exactly, and other processes' commits, numbered when
/// this process detects them. They are what the sync protocol's batches
/// are marked with (`DBWatchDelivery`); ``QueryObservation`` hides them.
package struct PositionedResult<Value> {
    /// The result, or `nil`: unchanged since the last one delivered.
    package var result: Result<Value, any Error>?
    /// The serial of the last commit the fetch's snapshot holds.
    package var position: UInt64

    package init(_ result: Result<Value, any Error>?, at position: UInt64) {
        self.result = result
        self.position = position
    }
}

extension PositionedResult: Sendable where Value: Sendable {}
