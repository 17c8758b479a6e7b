import DBWatch
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatchHummingbird

@Suite("Connection limits: request heads, unsent bytes, open connections")
struct ConnectionLimitsTests {
    @Test func aClientSendingItsRequestHeadAByteAtATimeIsDisconnected() async throws {
        var limits = ConnectionLimits()
        limits.requestHeadTimeout = .seconds(1)
        try await withTimeout { [limits] in
            try await HummingbirdServer.with(limits: limits) { server in
                let slow = try TCPTestSocket(port: server.port)
                try slow.send("GET /top HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                // One byte every 100 ms, 300 of them: never a whole head, and
                // never 1 s without a byte, so a timeout that each byte
                // restarted would never end the connection. A loaded machine
                // only ends it later, within the 300 bytes.
                var closed = false
                for _ in 0..<300 where !closed {
                    do { try slow.send("a") } catch { closed = true }
                    if try await slow.waitForClose(seconds: 0.1) { closed = true }
                }
                #expect(closed, "a client sending its head a byte at a time was not disconnected")
            }
        }
    }

    @Test func anOpenStreamOutlivesTheRequestHeadTimeout() async throws {
        var limits = ConnectionLimits()
        limits.requestHeadTimeout = .milliseconds(300)
        try await withTimeout { [limits] in
            try await HummingbirdServer.with(limits: limits) { server in
                let stream = try await EventStream.open("\(server.baseURL)/top/events?limit=1")
                _ = try await stream.nextEvent()
                // Five times the timeout without a byte from the client (the
                // time itself is what is tested).
                try await Task.sleep(for: .milliseconds(1_500))
                try await server.database.write { db in
                    try db.execute(sql: "INSERT INTO player (name, score) VALUES ('zoe', 500)")
                }
                #expect(try await stream.nextEvent().data == #"[{"name":"zoe","score":500}]"#)
            }
        }
    }

    @Test func clientsThatReadNothingAreDisconnectedWhateverTheSizeOfEvents() async throws {
        var limits = ConnectionLimits()
        limits.unsentDataTimeout = .seconds(1)
        var configuration = testConfiguration()
        configuration.stalledClientTimeout = .seconds(1)
        try await withTimeout { [configuration, limits] in
            try await HummingbirdServer.with(configuration: configuration, limits: limits) { server in
                let clients = try (0..<20).map { _ in try TCPTestSocket(port: server.port, receiveBuffer: 4096) }
                for client in clients {
                    try client.send("GET /top/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
                }
                try await waitUntil { server.live.statistics.clientsConnected == 20 }
                // Small events (about 300 bytes) at up to 10 a second: the 96
                // KiB a blocked write needs (the socket's 32 KiB and NIO's 64
                // KiB) take more than 320 events; the bytes the client does
                // not take count from the first, so a few dozen events and the
                // 1 s timeout do. Counted in events, not seconds: a loaded
                // machine writes fewer of them in the same time.
                let start = ContinuousClock.now
                var round = 0
                while server.live.statistics.clientsConnected > 0 {
                    round += 1
                    try #require(
                        round < 200,
                        "\(server.live.statistics.clientsConnected) clients still connected after 200 events")
                    try #require(
                        ContinuousClock.now - start < .seconds(isThreadSanitized ? 120 : 60),
                        "\(server.live.statistics.clientsConnected) clients that read nothing still connected")
                    try await server.database.write { [round] db in
                        try db.execute(sql: "UPDATE player SET score = ? WHERE name = 'arthur'", arguments: [round])
                    }
                    try await Task.sleep(for: .milliseconds(100))  // a writer's pace
                }
                try await waitUntil { server.live.statistics.observations == 0 }
                withExtendedLifetime(clients) {}
            }
        }
    }

    @Test func connectionsPastTheCapWaitUntilOneCloses() async throws {
        var limits = ConnectionLimits()
        limits.requestHeadTimeout = .seconds(60)
        try await withTimeout { [limits] in
            try await HummingbirdServer.with(limits: limits, maxConnections: 2) { server in
                // Two kept-alive connections, each answered once: both accepted.
                var held: [TCPTestSocket] = []
                for _ in 0..<2 {
                    let socket = try TCPTestSocket(port: server.port)
                    try socket.send("GET /top?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    let answer = try #require(try await socket.receive(seconds: 10))
                    #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
                    held.append(socket)
                }
                let third = try TCPTestSocket(port: server.port)
                try third.send("GET /top?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                // Not answered while two are open (a window, not an ordering).
                #expect(try await third.receive(seconds: 1) == [])
                held.removeFirst()  // closes it
                let answer = try #require(try await third.receive(seconds: defaultTestTimeout))
                #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
                withExtendedLifetime(held) {}
            }
        }
    }
}
