import BenchProcess
import Foundation
import NIOPosix

/// The sync protocol's benchmarks (issue 26): server CPU per commit against
/// whole values, latency against the number of live queries, resume after
/// an absence. Prints Markdown tables; every ratio is taken within one run.
@main
struct SyncBenchMain {
    static func main() async {
        do {
            let options = try SyncBenchOptions(arguments: Array(CommandLine.arguments.dropFirst()))
            let files = raiseFileLimit()
            print("load average at the start: \(SyncServerProcess.loadAverage); open files limit \(files)")
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
            if options.only.contains("cpu") { try await ServerCPUReport(options: options, group: group).run() }
            if options.only.contains("latency") { try await LatencyReport(options: options, group: group).run() }
            if options.only.contains("resume") { try await ResumeReport(options: options, group: group).run() }
            if options.only.contains("storm") { try await StormReport(options: options, group: group).run() }
            print("load average at the end: \(SyncServerProcess.loadAverage)")
            try await group.shutdownGracefully()
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(1)
        }
    }
}
