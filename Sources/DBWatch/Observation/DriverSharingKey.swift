/// The key under which the center shares one ``ObservationDriver`` between
/// the observations of equal requests with equal options (the request's
/// type and value, and the rate limit: its interval and clock), so that
/// they run one fetch per change.
struct DriverSharingKey: Hashable, @unchecked Sendable {  // built only from Queryable values, which are Sendable
    /// The request, or the request and its rate limit: one existential, so
    /// that the key of an observation without a rate limit (most of them,
    /// each stored in the center's registry) is no larger than the request's.
    private let value: AnyHashable

    private struct RateLimited: Hashable {
        let request: AnyHashable
        let rateLimit: ObservationOptions.RateLimit.Key
    }

    init<R: Queryable>(_ request: R, options: ObservationOptions = ObservationOptions()) {
        if let rateLimit = options.rateLimit {
            value = AnyHashable(RateLimited(request: AnyHashable(request), rateLimit: rateLimit.key))
        } else {
            value = AnyHashable(request)
        }
    }
}
