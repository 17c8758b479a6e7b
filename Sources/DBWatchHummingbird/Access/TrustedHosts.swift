import NIOCore

/// The names a server answers to, against DNS rebinding: a web page whose
/// name an attacker rebinds to the server's address reaches the server with
/// its own name in `Host`, so a server that answers only the names it
/// knows gives that page nothing.
///
/// Always trusted: `localhost` and every name under `.localhost` (browsers
/// resolve them to this machine themselves), and any IP address (`127.0.0.1`,
/// `[::1]`, `192.168.1.5`: a page can only have an address as its origin if
/// it is served from that address). Any port. Besides these, the names given:
///
/// - `app.example.com`: that name, in any case, with or without a final dot;
/// - `.example.com`: `example.com` and every name under it;
/// - `*`: every name (turns the protection off, for a server behind a proxy
///   that checks names itself).
///
/// ```swift
/// let hosts = TrustedHosts(["dashboard.internal"])
/// hosts.allows(authority: "localhost:8080")           // true
/// hosts.allows(authority: "dashboard.internal")       // true
/// hosts.allows(authority: "evil.example:8080")        // false
/// ```
public struct TrustedHosts: Sendable, Hashable {
    private enum Pattern: Sendable, Hashable {
        case exactly(String)
        case domain(String)
        case any
    }

    private let patterns: [Pattern]

    /// The loopback names and IP addresses, and `names` besides (see the
    /// type's description for their forms).
    ///
    /// ```swift
    /// let hosts = TrustedHosts(["app.example.com", ".internal.example.com"])
    /// ```
    ///
    /// A name that is none of these forms (`http://app.example.com`,
    /// `app.example.com:8080`) is a programming error, stopped at once
    /// rather than never matching; `*.example.com` is read as `.example.com`.
    public init(_ names: [String] = []) {
        patterns = names.map { name in
            var name = Self.normalized(name)
            if name == "*" { return .any }
            if name.hasPrefix("*.") { name.removeFirst() }
            let bare = name.hasPrefix(".") ? String(name.dropFirst()) : name
            precondition(
                Self.isName(bare),
                "TrustedHosts: \(name) is not a host name (give app.example.com, .example.com or *, "
                    + "without scheme, port or path)")
            return name.hasPrefix(".") ? .domain(bare) : .exactly(bare)
        }
    }

    /// Whether `name` is a host name or an IP address: letters, digits, `-`,
    /// `_` and `.`, or an IPv6 address.
    static func isName(_ name: String) -> Bool {
        if isIPv6Address(name) { return true }
        return !name.isEmpty && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII
                    && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "."
                        || scalar == "_")
            }
    }

    /// Whether a request whose `Host` is `authority` (`name`, `name:port`,
    /// `[v6]:port`) is for this server. An authority that is not a host and
    /// an optional port (user information, a path, a bad port) is not.
    ///
    /// ```swift
    /// TrustedHosts().allows(authority: "[::1]:8080")   // true
    /// ```
    public func allows(authority: String) -> Bool {
        guard let host = Self.host(ofAuthority: authority) else { return false }
        return allows(host: host)
    }

    /// Whether `host` (without a port; an IPv6 address in brackets or not)
    /// is one of the trusted names.
    func allows(host: String) -> Bool {
        let host = Self.normalized(host)
        if host.isEmpty { return false }
        if Self.isIPAddress(host) { return true }
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        return patterns.contains { pattern in
            switch pattern {
            case .any: true
            case .exactly(let name): host == name
            case .domain(let domain): host == domain || host.hasSuffix("." + domain)
            }
        }
    }

    /// The host of `host[:port]` (brackets kept off an IPv6 address), or
    /// nil when `authority` is something else.
    static func host(ofAuthority authority: String) -> String? {
        let authority = Substring(authority)
        let host: Substring
        let port: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            if rest.isEmpty {
                port = nil
            } else {
                guard rest.hasPrefix(":") else { return nil }
                port = rest.dropFirst()
            }
            guard isIPv6Address(String(host)) else { return nil }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            port = parts.count > 1 ? parts[1] : nil
            guard isName(String(host)) else { return nil }
        }
        if let port {
            guard port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(port),
                number <= 65_535
            else { return nil }
        }
        return host.isEmpty ? nil : String(host)
    }

    /// Lower case, without a final dot (`LocalHost.` is `localhost`).
    private static func normalized(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasSuffix("."), name.count > 1 { name.removeLast() }
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        return name
    }

    private static func isIPAddress(_ host: String) -> Bool {
        isIPv6Address(host) || ((try? SocketAddress(ipAddress: host, port: 0))?.protocol == .inet)
    }

    private static func isIPv6Address(_ host: String) -> Bool {
        host.contains(":") && (try? SocketAddress(ipAddress: host, port: 0))?.protocol == .inet6
    }
}
