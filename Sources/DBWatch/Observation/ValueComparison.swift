/// `==` when `Value` is `Equatable` (known at run time), otherwise a
/// comparison that never finds two values equal.
func valueComparison<Value>(for type: Value.Type) -> @Sendable (Value, Value) -> Bool {
    if Value.self is any Equatable.Type {
        return { lhs, rhs in valuesAreEqual(lhs, rhs) }
    }
    return { _, _ in false }
}

/// Compares two values of a type known at run time to be `Equatable`
/// (`false` otherwise).
func valuesAreEqual<Value>(_ lhs: Value, _ rhs: Value) -> Bool {
    guard let lhs = lhs as? any Equatable else { return false }
    return lhs.isEqual(to: rhs)
}

extension Equatable {
    fileprivate func isEqual(to other: Any) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}
