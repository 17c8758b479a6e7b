import Foundation
import Testing

@testable import DBWatchPostgres

/// The replication connection's reading and writing of PostgreSQL's wire
/// protocol, and its SCRAM-SHA-256, without a server.
@Suite("Replication protocol: messages, framing and SCRAM")
struct ReplicationProtocolTests {
    @Test("The framer cuts messages that arrive in pieces, one byte at a time")
    func framingAcrossPieces() throws {
        let first = Wire.backend("Z", [UInt8(ascii: "I")])
        let second = Wire.backend("d", [1, 2, 3])
        var framer = MessageFramer()
        var messages: [(UInt8, [UInt8])] = []
        for byte in first + second {
            framer.append([byte])
            while let message = try framer.next() { messages.append(message) }
        }
        #expect(messages.map(\.0) == [UInt8(ascii: "Z"), UInt8(ascii: "d")])
        #expect(messages.map(\.1) == [[UInt8(ascii: "I")], [1, 2, 3]])
        #expect(!framer.hasPartialMessage)
    }

    @Test("A length below 4 or above 1 GB is an error, not a wait or an allocation")
    func badLengthsThrow() {
        for length: Int32 in [0, 3, -1, Int32.max] {
            var framer = MessageFramer()
            framer.append([UInt8(ascii: "d")] + Wire.int(length))
            do {
                _ = try framer.next()
                Issue.record("length \(length) was accepted")
            } catch {}
        }
    }

    @Test("Backend messages are read: authentication requests, errors, rows, the copy")
    func backendMessages() throws {
        #expect(try BackendMessage(type: UInt8(ascii: "R"), body: Wire.int(Int32(0))) == .authentication(.ok))
        #expect(
            try BackendMessage(type: UInt8(ascii: "R"), body: Wire.int(Int32(5)) + [1, 2, 3, 4])
                == .authentication(.md5Password(salt: [1, 2, 3, 4])))
        #expect(
            try BackendMessage(
                type: UInt8(ascii: "R"),
                body: Wire.int(Int32(10)) + Wire.string("SCRAM-SHA-256-PLUS") + Wire.string("SCRAM-SHA-256") + [0])
                == .authentication(.sasl(mechanisms: ["SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"])))
        let error = try BackendMessage(
            type: UInt8(ascii: "E"),
            body: [UInt8(ascii: "S")] + Wire.string("FATAL") + [UInt8(ascii: "V")] + Wire.string("FATAL")
                + [UInt8(ascii: "C")] + Wire.string("57P01") + [UInt8(ascii: "M")]
                + Wire.string("terminating connection due to administrator command") + [0])
        guard case .error(let serverError) = error else {
            Issue.record("not an error: \(error)")
            return
        }
        #expect(serverError.isFatal && serverError.sqlState == "57P01")
        #expect(ReplicaError(classifying: serverError).code == .sourceUnreachable)
        #expect(
            try BackendMessage(
                type: UInt8(ascii: "D"),
                body: Wire.int(Int16(2)) + Wire.int(Int32(2)) + Array("ab".utf8) + Wire.int(Int32(-1)))
                == .dataRow([Array("ab".utf8), nil]))
        #expect(try BackendMessage(type: UInt8(ascii: "W"), body: [0, 0, 0]) == .copyBothResponse)
    }

    @Test("Truncated backend messages throw instead of trapping", arguments: ["R", "S", "E", "T", "D", "C"])
    func truncatedBackendMessagesThrow(type: String) {
        let bodies: [String: [UInt8]] = [
            "R": Wire.int(Int32(5)) + [1, 2, 3, 4], "S": Wire.string("a") + Wire.string("b"),
            "E": [UInt8(ascii: "M")] + Wire.string("m") + [0],
            "T": Wire.int(Int16(1)) + Wire.string("c") + [UInt8](repeating: 0, count: 18),
            "D": Wire.int(Int16(1)) + Wire.int(Int32(1)) + [7], "C": Wire.string("SELECT 1"),
        ]
        let body = bodies[type]!
        for length in 0..<body.count {
            #expect(throws: PgOutputParseError.self) {
                try BackendMessage(type: Character(type).asciiValue!, body: Array(body.prefix(length)))
            }
        }
    }

    @Test("Streaming messages are read: XLogData and keepalives")
    func streamingMessages() throws {
        let data = try StreamingMessage(
            copyData: [UInt8(ascii: "w")] + Wire.int(UInt64(0x10)) + Wire.int(UInt64(0x20)) + Wire.int(Int64(0)) + [9])
        #expect(
            data
                == .data(
                    start: LogSequenceNumber(rawValue: 0x10), serverEnd: LogSequenceNumber(rawValue: 0x20), payload: [9]
                ))
        let keepalive = try StreamingMessage(
            copyData: [UInt8(ascii: "k")] + Wire.int(UInt64(0x30)) + Wire.int(Int64(0)) + [1])
        #expect(keepalive == .keepalive(end: LogSequenceNumber(rawValue: 0x30), replyRequested: true))
        #expect(throws: PgOutputParseError.self) { try StreamingMessage(copyData: [UInt8(ascii: "k"), 0, 0]) }
        #expect(throws: PgOutputParseError.self) { try StreamingMessage(copyData: [UInt8(ascii: "x")]) }
    }

    @Test("The startup message carries replication=database and the settings")
    func startupMessage() {
        let bytes = FrontendMessage.startup([("user", "u"), ("replication", "database")])
        #expect(Array(bytes.prefix(8)) == Wire.int(Int32(bytes.count)) + Wire.int(Int32(196_608)))
        #expect(
            Array(bytes.dropFirst(8)) == Wire.string("user") + Wire.string("u") + Wire.string("replication")
                + Wire.string("database") + [0])
    }

    @Test("SCRAM-SHA-256 gives RFC 7677's proof and checks the server's signature")
    func scramFollowsRFC7677() throws {
        var client = SCRAMClient(password: "pencil", username: "user", nonce: "rOprNGfwEbeRWgbNEkqO")
        #expect(String(decoding: client.firstMessage(), as: UTF8.self) == "n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
        let serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        let final = try client.finalMessage(answering: Array(serverFirst.utf8))
        #expect(
            String(decoding: final, as: UTF8.self)
                == "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        )
        var forged = client
        do {
            try forged.verify(serverFinal: Array("v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".utf8))
            Issue.record("a forged server signature was accepted")
        } catch {
            #expect(error.code == .sourceNotReady)
        }
        try client.verify(serverFinal: Array("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".utf8))
        #expect(client.isDone)
    }

    @Test("SCRAM refuses a server nonce that does not extend the client's, and absurd iterations")
    func scramRefusesBadChallenges() {
        for challenge in [
            "r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "r=abcX,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=0", "garbage",
        ] {
            var client = SCRAMClient(password: "p", nonce: "abc")
            _ = client.firstMessage()
            do {
                _ = try client.finalMessage(answering: Array(challenge.utf8))
                Issue.record("\(challenge) was accepted")
            } catch {}
        }
    }
}
