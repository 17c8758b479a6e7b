/// The key under which the center shares one ``ObservationDriver`` between
/// the observations of equal requests with equal options (the request's
/// type and value, and the rate limit: its interval and clock), so that
/// they run one fetch per change.
struct DriverSharingKey: Hashable, @unchecked Sendable {  // built only from Queryable values, which are Sendable
    private let request: AnyHashable
    private let rateLimit: ObservationOptions.RateLimit.Key?

    init<R: Queryable>(_ request: R, options: ObservationOptions = ObservationOptions()) {
        self.request = AnyHashable(request)
        self.rateLimit = options.rateLimit?.key
    }
}
