import ArgumentParser

/// Where `replicate --metrics` listens: `[HOST:]PORT`, the host
/// 127.0.0.1 unless given (`[::1]:9090` for an IPv6 address).
///
/// ```swift
/// try OperationsAddress.parse("0.0.0.0:9187")   // host 0.0.0.0, port 9187
/// try OperationsAddress.parse("9187")           // host 127.0.0.1
/// ```
struct OperationsAddress: Sendable, Equatable {
    /// The address to listen on.
    var host: String
    /// The port (0: any free port).
    var port: Int

    /// Reads `[HOST:]PORT`.
    static func parse(_ text: String) throws -> OperationsAddress {
        var host = "127.0.0.1"
        var portText = Substring(text)
        if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        }
        guard !host.isEmpty, let port = Int(portText), (0...65_535).contains(port) else {
            throw ValidationError(
                "--metrics \(CellText.sanitized(text)): give [host:]port, the port between 0 and 65535.")
        }
        return OperationsAddress(host: host, port: port)
    }
}
