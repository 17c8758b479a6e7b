import CSQLite

/// Collects what write transactions change on one connection. (Filled in by
/// the tracking layer.)
final class ChangeCollector {
    func statementDidFinish(_ statement: Statement, succeeded: Bool, in database: Database) {}
    func uninstall(from handle: OpaquePointer) {}
}
