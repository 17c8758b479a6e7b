import BenchProcess
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The floor of the fan-out benchmarks (issue 25): what a Swift server can
/// do at best on this machine, on plain SwiftNIO (no framework, no DBWatch).
///
///     dbwatch-bench-floor --mode floor --db PATH [--rows N] [--port P]
///
/// Prints `port=P` once it accepts connections on 127.0.0.1; SIGTERM or
/// SIGINT end it (the default action).
///
/// - `GET /board/events`: server-sent events of the board of
///   `dbwatch-bench-server` (a round number and the ten best players), the
///   current frame first.
/// - `POST /board/write/:round`: one SQLite transaction (the same two
///   `UPDATE`s as `dbwatch-bench-server --mode dbwatch`, `CLOCK_MONOTONIC`
///   taken just before `COMMIT`), then the board fetched once, encoded once
///   into one `ByteBuffer` (the event with its HTTP chunk header), and that
///   same buffer written to every client's channel: one task per event loop,
///   one `writeAndFlush` per client. Answers `round commit-nanoseconds`.
/// - `GET /stats`: `rss=… cpu=… clients=… fetches=… sent=…`, as the other
///   servers.
///
/// The write and the fetch run on the event loop that received the `POST`
/// (no thread hop); the SSE response is written as raw bytes, with the same
/// framing on the wire as Hummingbird's (HTTP/1.1, chunked).
@main
struct FloorServer {
    static func main() throws {
        let arguments = try FloorArguments(CommandLine.arguments.dropFirst())
        let files = raiseFileLimit()
        FileHandle.standardError.write(Data("dbwatch-bench-floor: open files limit \(files)\n".utf8))
        let database = try BoardDatabase(path: arguments.database)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        let hub = Hub(group: group, first: try database.fetchFrame())
        let server = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
                    try channel.pipeline.syncOperations.addHandler(FloorHandler(hub: hub, database: database))
                }
            }
            .bind(host: "127.0.0.1", port: arguments.port)
            .wait()
        print("port=\(server.localAddress?.port ?? 0)")
        fflush(nil)
        try server.closeFuture.wait()
    }
}

struct FloorArguments {
    var database = ""
    var port = 0

    init(_ arguments: ArraySlice<String>) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard let value = iterator.next() else { throw FloorError(description: "\(argument) needs a value") }
            switch argument {
            case "--mode":
                guard value == "floor" else { throw FloorError(description: "--mode is floor") }
            case "--db": database = value
            case "--rows": break
            case "--port": port = Int(value) ?? 0
            default: throw FloorError(description: "unknown option \(argument)")
            }
        }
        if database.isEmpty { throw FloorError(description: "--db PATH is required") }
    }
}

struct FloorError: Error, CustomStringConvertible {
    let description: String
}
