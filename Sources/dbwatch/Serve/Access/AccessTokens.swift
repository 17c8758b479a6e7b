import Crypto
import Foundation

/// The bearer tokens of `serve --auth-token-file`: one a line, kept only as
/// SHA-256 digests, compared in constant time.
///
/// A presented token is hashed, then compared with every digest, each
/// comparison looking at all 32 bytes: the time taken says neither which
/// byte differs nor how long a token is. The page's cookie holds a digest
/// of the token under another label (``cookieValue(for:)``), not the token
/// itself: a copied cookie opens this server's routes, but it is not the
/// token an operator hands out, and it stops working when the token leaves
/// the file.
///
/// ```swift
/// let tokens = try AccessTokens(contentsOf: "tokens.txt")
/// tokens.accepts("s3cret")   // true if a line of the file is s3cret
/// ```
struct AccessTokens: Sendable {
    /// SHA-256 of each token.
    private let digests: [[UInt8]]
    /// SHA-256 of each token's cookie label.
    private let cookieDigests: [[UInt8]]

    /// The number of tokens.
    var count: Int { digests.count }

    /// Tokens from text: one a line, surrounding spaces ignored; empty
    /// lines and lines that start with `#` are not tokens.
    init(text: String) {
        let tokens = text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        digests = tokens.map { Self.digest($0) }
        cookieDigests = tokens.map { Self.digest(Self.cookieValue(for: $0)) }
    }

    /// Reads the tokens of `path`. A file that cannot be read throws an
    /// ``AccessFileError``, and so does one without a token.
    init(contentsOf path: String) throws(AccessFileError) {
        self.init(text: try AccessFileError.read(path, what: "token file"))
        if digests.isEmpty {
            throw AccessFileError(
                path: path, isUnreadable: false, reason: "it holds no token (one a line; # starts a comment)")
        }
    }

    /// Whether `token` is one of the file's.
    func accepts(_ token: some StringProtocol) -> Bool {
        Self.contains(Self.digest(token), in: digests)
    }

    /// Whether `value` is the cookie of one of the file's tokens.
    func acceptsCookie(_ value: some StringProtocol) -> Bool {
        Self.contains(Self.digest(value), in: cookieDigests)
    }

    /// The value of the page's cookie for `token`: `t.` and the hex SHA-256
    /// of a label and the token.
    static func cookieValue(for token: some StringProtocol) -> String {
        "t." + digest("dbwatch serve cookie\u{0}" + token).map { String(format: "%02x", $0) }.joined()
    }

    private static func digest(_ text: some StringProtocol) -> [UInt8] {
        Array(SHA256.hash(data: Array(text.utf8)))
    }

    /// Compares `digest` with every entry of `digests`, all bytes of each,
    /// without a branch on their values.
    private static func contains(_ digest: [UInt8], in digests: [[UInt8]]) -> Bool {
        var found: UInt8 = 0
        for candidate in digests {
            var difference: UInt8 = 0
            for index in 0..<digest.count { difference |= digest[index] ^ candidate[index] }
            // 1 when equal, 0 otherwise, without a comparison.
            found |= UInt8(truncatingIfNeeded: (Int(difference) - 1) >> 8) & 1
        }
        return found != 0
    }
}

/// A token or key file of `serve` that cannot be used: unreadable (exit
/// 66 at start) or without what it should hold (exit 64).
struct AccessFileError: Error, CustomStringConvertible, Sendable {
    /// The file.
    let path: String
    /// Whether the file could not be read at all (missing, no permission).
    let isUnreadable: Bool
    /// Why, in words.
    let reason: String

    var description: String { "\(CellText.sanitized(path)): \(reason)" }

    /// The text of `path`, or an error that says why it cannot be read.
    static func read(_ path: String, what: String) throws(AccessFileError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw AccessFileError(
                path: path, isUnreadable: true,
                reason: exists ? "the \(what) cannot be read (permissions?)" : "no such \(what)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw AccessFileError(path: path, isUnreadable: false, reason: "the \(what) is not UTF-8 text")
        }
        return text
    }

    /// The command's failure at start: 66 when unreadable, 64 otherwise.
    var commandFailure: CommandFailure {
        CommandFailure(isUnreadable ? .unavailable : .usage, description)
    }
}
