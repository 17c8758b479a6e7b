/// Identifies a request for sharing one observation between identical
/// requests (the type and the value).
struct SharingKey: Hashable, @unchecked Sendable {  // built only from Queryable values, which are Sendable
    private let value: AnyHashable

    init<R: Queryable>(_ request: R) {
        value = AnyHashable(request)
    }
}
