import Crypto
import Foundation

/// The client side of SCRAM-SHA-256 (RFC 5802, RFC 7677), as PostgreSQL
/// asks for it: no channel binding, the user named by the startup message.
/// A state machine: each server message moves it on and gives the answer
/// to send, and a server that does not prove it knows the password fails it.
///
/// The password is used as its UTF-8 bytes, without SASLprep: the same for
/// ASCII passwords and most others (PostgreSQL also falls back to the raw
/// bytes for a password SASLprep refuses).
struct SCRAMClient {
    /// Where the exchange is.
    private enum State {
        case initial
        case sentFirst(clientFirstBare: String)
        case sentFinal(serverSignature: [UInt8])
        case done
    }

    private var state = State.initial
    private let password: String
    private let nonce: String
    private let username: String

    /// A client for `password`, with a random nonce (or `nonce`).
    /// PostgreSQL takes the user from the startup message and ignores
    /// `username`, left empty.
    init(password: String, username: String = "", nonce: String? = nil) {
        self.password = password
        self.username = username
        self.nonce = nonce ?? Data((0..<18).map { _ in UInt8.random(in: 0 ... .max) }).base64EncodedString()
    }

    /// The client's first message: `n,,n=<username>,r=<nonce>`.
    mutating func firstMessage() -> [UInt8] {
        let bare = "n=\(username),r=\(nonce)"
        state = .sentFirst(clientFirstBare: bare)
        return Array(("n,," + bare).utf8)
    }

    /// The answer to the server's first message (`r=…,s=…,i=…`): the
    /// client's final message with its proof.
    mutating func finalMessage(answering serverFirst: [UInt8]) throws(ReplicaError) -> [UInt8] {
        guard case .sentFirst(let clientFirstBare) = state else { throw Self.failure("a challenge out of turn") }
        guard let text = String(validating: serverFirst, as: UTF8.self) else {
            throw Self.failure("a challenge that is not UTF-8")
        }
        let fields = Self.fields(text)
        guard let serverNonce = fields["r"], serverNonce.hasPrefix(nonce), serverNonce.count > nonce.count,
            let saltText = fields["s"], let salt = Data(base64Encoded: saltText),
            let iterationText = fields["i"], let iterations = Int(iterationText), (1...10_000_000).contains(iterations)
        else { throw Self.failure("a challenge it cannot read") }
        let saltedPassword = Self.hi(Array(password.utf8), salt: Array(salt), iterations: iterations)
        let clientKey = Self.hmac(saltedPassword, "Client Key")
        let storedKey = Array(SHA256.hash(data: clientKey))
        let withoutProof = "c=biws,r=\(serverNonce)"
        let authMessage = Array("\(clientFirstBare),\(text),\(withoutProof)".utf8)
        let clientSignature = Self.hmac(storedKey, authMessage)
        let proof = zip(clientKey, clientSignature).map { $0 ^ $1 }
        let serverKey = Self.hmac(saltedPassword, "Server Key")
        state = .sentFinal(serverSignature: Self.hmac(serverKey, authMessage))
        return Array("\(withoutProof),p=\(Data(proof).base64EncodedString())".utf8)
    }

    /// Checks the server's final message (`v=<signature>`).
    mutating func verify(serverFinal: [UInt8]) throws(ReplicaError) {
        guard case .sentFinal(let expected) = state else { throw Self.failure("an outcome out of turn") }
        let text = String(decoding: serverFinal, as: UTF8.self)
        let fields = Self.fields(text)
        if let error = fields["e"] { throw Self.failure("the server refused: \(error)") }
        guard let signature = fields["v"].flatMap({ Data(base64Encoded: $0) }), Array(signature) == expected else {
            throw Self.failure("the server did not prove it knows the password")
        }
        state = .done
    }

    /// Whether the server proved itself.
    var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    private static func failure(_ reason: String) -> ReplicaError {
        ReplicaError(.sourceNotReady, "SCRAM-SHA-256 authentication failed: \(reason)")
    }

    /// `a=x,b=y` as a dictionary of one-letter keys.
    private static func fields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for part in text.split(separator: ",") {
            guard let equals = part.firstIndex(of: "="), part.distance(from: part.startIndex, to: equals) == 1 else {
                continue
            }
            fields[String(part[..<equals])] = String(part[part.index(after: equals)...])
        }
        return fields
    }

    private static func hmac(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    private static func hmac(_ key: [UInt8], _ text: String) -> [UInt8] { hmac(key, Array(text.utf8)) }

    /// `Hi(password, salt, i)`: PBKDF2 with HMAC-SHA-256, one block.
    private static func hi(_ password: [UInt8], salt: [UInt8], iterations: Int) -> [UInt8] {
        let key = SymmetricKey(data: password)
        var block = Array(HMAC<SHA256>.authenticationCode(for: salt + [0, 0, 0, 1], using: key))
        var result = block
        for _ in 1..<iterations {
            block = Array(HMAC<SHA256>.authenticationCode(for: block, using: key))
            for index in result.indices { result[index] ^= block[index] }
        }
        return result
    }
}
