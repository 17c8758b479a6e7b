/// Moves a non-Sendable value to another thread that becomes its only user.
struct UnsafeTransfer<Value>: @unchecked Sendable {  // the sender never touches the value again
    let value: Value
}
