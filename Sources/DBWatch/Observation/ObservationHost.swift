/// What a database needs to run observations: the center that indexes
/// them and the queue their fetches run on (the pool's readers, or the
/// queue's only connection).
struct ObservationHost: Sendable {
    let center: ObservationCenter
    var fetchQueue: JobQueue { center.fetchQueue }

    func observe<R: Queryable>(_ request: R, options: ObservationOptions) -> QueryObservation<R> {
        QueryObservation(request: request, options: options, center: center)
    }

    func statistics<R: Queryable>(for request: R) -> ObservationStatistics? {
        (center.sharedDriver(for: SharingKey(request)) as? ObservationDriver<R>)?.statistics
    }

    func explain<R: Queryable>(_ request: R) async throws -> QueryExplanation {
        let region = try await fetchQueue.perform { db in
            let (result, region) = db.fetchRecordingRegion { try request.fetch(db) }
            _ = try result.get()
            return region
        }
        return QueryExplanation(region: region, statistics: statistics(for: request))
    }
}
