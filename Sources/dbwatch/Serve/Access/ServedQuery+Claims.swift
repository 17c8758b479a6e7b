import DBWatch
import DBWatchHummingbird

extension ServedQuery {
    /// The prefix of the parameters a JWT's claims fill: `:auth_sub` takes
    /// the claim `sub`. A query string can never set them.
    static let claimPrefix = "auth_"

    /// The claims the query's `:auth_CLAIM` parameters take, without the prefix.
    var claimNames: [String] {
        parameters.map(Self.bareName).filter { $0.hasPrefix(Self.claimPrefix) }.map {
            String($0.dropFirst(Self.claimPrefix.count))
        }
    }

    /// The parameters a query string gives (all but the claims').
    var queryStringParameters: [String] {
        parameters.map(Self.bareName).filter { !$0.hasPrefix(Self.claimPrefix) }
    }

    /// The observed request for a query string and the requester's
    /// identity: the `:auth_CLAIM` parameters bound to the JWT's claims,
    /// the others typed from the query string as ``request(queryString:limits:bound:)``
    /// types them. Equal claims and equal parameters make equal requests,
    /// which share one observation.
    ///
    /// A query string that names an `auth_` parameter is a
    /// ``LiveQueriesError/badRequest(_:)`` (400); a requester without a claim
    /// the query needs, or whose claim is an object or an array, is an
    /// ``AccessRefusal`` (403).
    func request(
        queryString: [(key: Substring, value: Substring)], identity: ServeAccess.Identity, limits: QueryLimits
    ) throws -> WatchedQuery {
        if let key = queryString.first(where: { $0.key.hasPrefix(Self.claimPrefix) })?.key {
            throw LiveQueriesError.badRequest(
                "parameter \(CellText.sanitized(String(key))): the auth_ parameters come from the token's claims, "
                    + "never from the query string")
        }
        let claims = claimNames
        guard !claims.isEmpty else { return try request(queryString: queryString, limits: limits) }
        var bound: [String: DatabaseValue] = [:]
        for claim in claims {
            guard let value = identity.claims?.value(of: claim) else {
                throw AccessRefusal(
                    identity.claims == nil
                        ? "query \(name) binds the JWT claim \(claim): authenticate with a JWT"
                        : "query \(name) needs the claim \(claim), which this JWT does not have")
            }
            guard let databaseValue = value.databaseValue else {
                throw AccessRefusal("query \(name) needs the claim \(claim) as a string or a number")
            }
            bound[Self.claimPrefix + claim] = databaseValue
        }
        return try request(queryString: queryString, limits: limits, bound: bound)
    }
}

/// An authenticated requester who may not read a query: 403.
struct AccessRefusal: Error, CustomStringConvertible, Sendable {
    /// Why, in words.
    let description: String

    init(_ description: String) { self.description = description }
}
