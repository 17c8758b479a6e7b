import DBWatch

extension DatabaseWriter {
    /// The blocking `close()`, from `async` test code, where `close()`
    /// means `close() async`.
    func closeBlocking() { close() }
}
