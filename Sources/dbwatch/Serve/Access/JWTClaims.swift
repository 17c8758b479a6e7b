import DBWatch
import Foundation
import JWTKit

/// The claims of a JWT that `serve --auth-jwt-secret-file` accepted: what
/// a query's `:auth_CLAIM` parameters are bound to.
///
/// Verifying also checks time: `exp` must be present and in the future,
/// `nbf`, when present, in the past. A claim binds as SQLite would store
/// the JSON value: a string as TEXT, a whole number as INTEGER, another
/// number as REAL, `true`/`false` as 1/0, `null` as NULL. An object or an
/// array binds to nothing: a query that needs it is refused (403).
///
/// ```swift
/// let claims = try await keys.verify(jwt, as: JWTClaims.self)
/// claims.value(of: "sub")   // .text("alice")
/// ```
struct JWTClaims: JWTPayload, Hashable {
    /// One claim's value, as far as SQL can take it.
    enum Value: Hashable, Sendable, Codable {
        case text(String)
        case integer(Int64)
        case real(Double)
        case null
        /// An object or an array: no SQL value.
        case structured

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let bool = try? container.decode(Bool.self) {
                self = .integer(bool ? 1 : 0)
            } else if let integer = try? container.decode(Int64.self) {
                self = .integer(integer)
            } else if let real = try? container.decode(Double.self) {
                self = .real(real)
            } else if let text = try? container.decode(String.self) {
                self = .text(text)
            } else {
                self = .structured
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .text(let text): try container.encode(text)
            case .integer(let integer): try container.encode(integer)
            case .real(let real): try container.encode(real)
            case .null, .structured: try container.encodeNil()
            }
        }

        /// The value SQL binds, or nil for an object or an array.
        var databaseValue: DatabaseValue? {
            switch self {
            case .text(let text): .text(text)
            case .integer(let integer): .integer(integer)
            case .real(let real): .real(real)
            case .null: .null
            case .structured: nil
            }
        }
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Every claim, by name.
    let values: [String: Value]

    /// Claims by name (tests and signing).
    init(_ values: [String: Value]) {
        self.values = values
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        var values: [String: Value] = [:]
        for key in container.allKeys { values[key.stringValue] = try container.decode(Value.self, forKey: key) }
        self.values = values
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in values { try container.encode(value, forKey: Key(stringValue: name)) }
    }

    /// The claim `name`'s value, if the token has it.
    func value(of name: String) -> Value? { values[name] }

    /// The claims a refreshed token renews: when it was issued, when it
    /// starts and ends, and its id.
    static let lifetimeClaims: Set<String> = ["exp", "iat", "nbf", "jti"]

    /// These claims without ``lifetimeClaims``: what stays the same when
    /// the token is refreshed.
    var withoutLifetime: JWTClaims {
        JWTClaims(values.filter { !Self.lifetimeClaims.contains($0.key) })
    }

    /// Only the claims named in `names` (those the token has).
    func only(_ names: Set<String>) -> JWTClaims {
        JWTClaims(values.filter { names.contains($0.key) })
    }

    /// Refuses a token without `exp`, expired, or whose `nbf` is still to come.
    func verify(using algorithm: some JWTAlgorithm) async throws {
        try verifyTime(now: Date())
    }

    /// The time checks of ``verify(using:)`` at `now`.
    func verifyTime(now: Date) throws(JWTClaimsError) {
        let seconds = now.timeIntervalSince1970
        guard let exp = values["exp"]?.seconds else { throw JWTClaimsError("the JWT has no exp claim (a number)") }
        guard seconds < exp else { throw JWTClaimsError("the JWT expired") }
        if let nbf = values["nbf"] {
            guard let notBefore = nbf.seconds else { throw JWTClaimsError("the JWT's nbf claim is not a number") }
            guard seconds >= notBefore else { throw JWTClaimsError("the JWT is not valid yet (nbf)") }
        }
    }

    /// When the token expires, if it says.
    var expiration: Date? {
        values["exp"]?.seconds.map { Date(timeIntervalSince1970: $0) }
    }
}

extension JWTClaims.Value {
    /// A NumericDate claim's seconds since 1970.
    fileprivate var seconds: Double? {
        switch self {
        case .integer(let integer): Double(integer)
        case .real(let real): real
        default: nil
        }
    }
}

/// Why a JWT's claims were refused, in words.
struct JWTClaimsError: Error, CustomStringConvertible, Sendable {
    /// The reason.
    let description: String

    init(_ description: String) { self.description = description }
}
