import Testing

extension Trait where Self == TimeLimitTrait {
    /// The backstop of a test that could hang (a child process, a server):
    /// `minutes` on a quiet machine, stretched by the factor of
    /// ``defaultTestTimeout`` against its plain value (three under the
    /// thread sanitizer) and three times more for a machine busy with
    /// other work. A hung test still fails; a slow one does not.
    ///
    /// ```swift
    /// @Test(.hangLimit(minutes: 1)) func servesTheQuery() async throws { … }
    /// ```
    public static func hangLimit(minutes: Int) -> Self {
        .timeLimit(.minutes(minutes * (isThreadSanitized ? 9 : 3)))
    }
}
