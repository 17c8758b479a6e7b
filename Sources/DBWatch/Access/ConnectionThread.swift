/// A dedicated thread that owns one connection and runs the jobs of a
/// ``JobQueue``. Waits for locks and disk syncs happen here; only an idle
/// writer's connection is lent to a caller's thread for one write (see
/// ``JobQueue/perform(claimingIdleConnection:_:)``).
enum ConnectionThread {
    /// Starts a thread named `name` (see ``startNamedThread(_:_:)``)
    /// serving `queue`. `open` runs on the new thread at the
    /// first job (or receives a connection opened by the caller), with that
    /// job's cancellation flag, so that cancelling the job ends the open's
    /// wait for a lock; an open failure fails that job (with
    /// `CancellationError` when cancelling ended it), and the next job retries.
    static func start(
        name: String, queue: JobQueue, connection: UnsafeTransfer<Database>? = nil,
        open: @escaping @Sendable (CancellationFlag?) throws -> Database
    ) {
        queue.workerWillStart()
        startNamedThread(name) {
            queue.workerDidStart()
            var database = connection?.value
            if let database { queue.connectionDidOpen(database) }
            while let job = queue.pop(offering: database) {
                if database == nil || database!.isClosed {
                    if database != nil { queue.connectionWillClose() }
                    do {
                        database = try open(job.cancellation)
                        queue.connectionDidOpen(database!)
                    } catch {
                        job.fail(with: error.reportingCancellation(job.cancellation?.isSet == true))
                        continue
                    }
                }
                job.run(on: database!)
            }
            if let open = database {
                queue.connectionWillClose()
                open.close()
            }
            database = nil
            queue.workerDidExit()
        }
    }
}
