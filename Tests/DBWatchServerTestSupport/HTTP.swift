import AsyncHTTPClient
import Foundation
import NIOCore

/// The JSON body of an error event or answer.
public struct ErrorJSON: Decodable, Equatable, Sendable {
    public var message: String
    public var code: Int32?

    public init(message: String, code: Int32? = nil) {
        self.message = message
        self.code = code
    }
}

/// Fetches `url` with `method` (and `body`, `headers`); returns the
/// status, headers and body.
public func fetch(
    _ url: String, method: String = "GET", body: String? = nil, headers: [(String, String)] = []
) async throws -> (status: Int, headers: [String: String], body: String) {
    var request = HTTPClientRequest(url: url)
    request.method = .init(rawValue: method)
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let body {
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
    }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
    var headers: [String: String] = [:]
    for header in response.headers { headers[header.name.lowercased()] = header.value }
    let body = try await response.body.collect(upTo: 1 << 24)
    return (Int(response.status.code), headers, String(buffer: body))
}
