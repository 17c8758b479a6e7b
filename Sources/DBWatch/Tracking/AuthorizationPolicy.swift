/// An allow-list consulted for every action the authorizer sees while a
/// statement is prepared: returning `false` makes the prepare fail with
/// ``ResultCode/auth`` ("not authorized").
struct AuthorizationPolicy {
    let allows: (_ action: Int32, _ first: String?, _ second: String?) -> Bool
}
