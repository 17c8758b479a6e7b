@testable import DBWatchPostgres
import Foundation
import Testing

/// ``PostgresReplica/Status``'s lag and readiness, from status values alone.
@Suite struct ReplicaReadinessTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// A replica streaming from a connected PostgreSQL, caught up at ``start``.
    var streaming: PostgresReplica.Status {
        var status = PostgresReplica.Status()
        status.phase = .streaming
        status.isConnected = true
        status.caughtUpAt = start
        status.caughtUpSinceConnecting = true
        return status
    }

    @Test func aConnectedReplicaIsAsFarBehindAsItsLastTransaction() {
        var status = streaming
        #expect(status.lag(at: start + 60) == 0)
        #expect(status.unreadiness(maxLag: 1, at: start + 60) == nil)
        status.lagSeconds = 3
        #expect(status.lag(at: start + 60) == 3)
        #expect(status.unreadiness(maxLag: 1, at: start + 60)?.contains("3.0 s behind") == true)
        #expect(status.unreadiness(maxLag: 5, at: start + 60) == nil)
    }

    @Test func theLagGrowsWhilePostgresIsLostAndUntilTheReplicaCaughtUpAgain() {
        var status = streaming
        status.isConnected = false
        status.caughtUpSinceConnecting = false
        #expect(status.lag(at: start + 2) == 2)
        #expect(status.lag(at: start + 7) == 7)
        #expect(status.unreadiness(maxLag: 10, at: start + 2) == "the replica lost PostgreSQL")
        // Connected again, not caught up yet: still behind, still unready.
        status.isConnected = true
        #expect(status.lag(at: start + 9) == 9)
        #expect(status.unreadiness(maxLag: 10, at: start + 9) == "the replica has not caught up with PostgreSQL yet")
        status.caughtUpSinceConnecting = true
        status.caughtUpAt = start + 9
        #expect(status.lag(at: start + 9.5) == 0)
        #expect(status.unreadiness(maxLag: 10, at: start + 9.5) == nil)
    }

    @Test func aReplicaThatIsNotStreamingIsNotReady() {
        for phase in [PostgresReplica.Status.Phase.idle, .starting, .copying, .stopped, .failed] {
            var status = streaming
            status.phase = phase
            #expect(status.unreadiness(maxLag: 10, at: start) == "the replica is \(phase.rawValue), not streaming")
        }
    }
}
