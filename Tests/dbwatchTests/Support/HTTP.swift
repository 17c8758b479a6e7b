import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A failed expectation about an answer.
struct HTTPTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Fetches `url`; returns the status, the content type and the body.
func fetch(_ url: String, method: HTTPMethod = .GET, headers: [(String, String)] = []) async throws -> (
    status: Int, contentType: String?, body: String
) {
    var request = HTTPClientRequest(url: url)
    request.method = method
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
    let body = try await response.body.collect(upTo: 1 << 24)
    return (Int(response.status.code), response.headers.first(name: "content-type"), String(buffer: body))
}

/// A JSON body as an object.
func jsonObject(_ body: String) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else {
        throw HTTPTestError("not a JSON object: \(body)")
    }
    return object
}
