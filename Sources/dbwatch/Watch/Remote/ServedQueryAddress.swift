import Foundation

/// The address of a query served over HTTP, as `watch` takes it:
/// `http://HOST:PORT/queries/NAME?n=10` (`dbwatch serve`'s one-shot URL;
/// its `/events` form is read the same), under any path prefix.
///
/// ```swift
/// let address = try ServedQueryAddress.parse("http://127.0.0.1:8080/queries/top?n=10")
/// address?.eventsURL   // "http://127.0.0.1:8080/queries/top/events?n=10"
/// ```
struct ServedQueryAddress: Sendable, Equatable {
    /// The scheme, host, port and path prefix, without a trailing slash:
    /// `http://127.0.0.1:8080`.
    let base: String
    /// The query's name.
    let name: String
    /// The query string (parameters), percent-encoded as given; `nil`
    /// without one.
    let parameters: String?

    /// The one-shot JSON answer.
    var valueURL: String { "\(base)/queries/\(name)" + (parameters.map { "?\($0)" } ?? "") }
    /// The server-sent events stream.
    var eventsURL: String { "\(base)/queries/\(name)/events" + (parameters.map { "?\($0)" } ?? "") }
    /// The list of served queries, which names each one's key columns.
    var listURL: String { "\(base)/queries" }

    /// Whether `text` is an address rather than a file path: it starts with
    /// `http://` or `https://`.
    static func isAddress(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }

    /// The address `text` names.
    ///
    /// - Throws: ``CommandFailure`` (usage) when it has no host, or its
    ///   path does not end with `/queries/NAME` (or `/queries/NAME/events`).
    static func parse(_ text: String) throws -> ServedQueryAddress {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else {
            throw CommandFailure(.usage, "\(CellText.sanitized(text)) is not an http:// or https:// address.")
        }
        var parts = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false).map(
            String.init)
        if parts.last == "" { parts.removeLast() }
        if parts.last == "events" { parts.removeLast() }
        guard parts.count >= 2, parts[parts.count - 2] == "queries", let name = parts.last, !name.isEmpty else {
            throw CommandFailure(
                .usage,
                "\(CellText.sanitized(text)): the address of a served query ends with /queries/NAME "
                    + "(dbwatch serve lists them at /queries).")
        }
        let prefix = parts.dropLast(2).joined(separator: "/")
        var origin = "\(scheme)://"
        origin += host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        if let port = components.port { origin += ":\(port)" }
        let query = components.percentEncodedQuery.flatMap { $0.isEmpty ? nil : $0 }
        return ServedQueryAddress(base: origin + prefix, name: name, parameters: query)
    }
}
