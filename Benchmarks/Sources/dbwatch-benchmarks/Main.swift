import CSQLiteRaw
import Foundation

/// Command-line options.
struct Options {
    var quick = false
    var runs = 1
    var grdb = false
    /// Workload names to run (all when empty).
    var only: Set<String> = []

    static let usage = """
        usage: dbwatch-benchmarks [--quick] [--runs N] [--grdb] [--only NAME,...]

          --quick      fewer iterations (a smoke run; ratios are noisier)
          --runs N     run each workload N times; print median [min – max]
          --grdb       also run the workloads on GRDB.swift (when built with the GRDB trait)
          --only L     comma-separated workloads: write, observed, latency, fanout, memory, decode, external,
                       external-writer

        Every line compares with raw SQLite doing the same work in the same run.
        Database files go to $DBWATCH_BENCH_DIR (default: the temporary directory).
        """

    init(arguments: [String]) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--quick": quick = true
            case "--grdb": grdb = true
            case "--runs":
                guard let text = iterator.next(), let value = Int(text), value > 0 else {
                    throw RawError(description: "--runs needs a positive number")
                }
                runs = value
            case "--only":
                guard let text = iterator.next() else { throw RawError(description: "--only needs a list") }
                only = Set(text.split(separator: ",").map(String.init))
            case "-h", "--help":
                print(Options.usage)
                exit(0)
            default:
                throw RawError(description: "unknown option \(argument)\n\(Options.usage)")
            }
        }
    }
}

/// One workload: a name for `--only` and a function returning one run's samples.
struct Workload {
    let name: String
    let run: (Sizes) async throws -> [Sample]
}

@main
struct BenchmarkMain {
    static func main() async {
        // Helper processes that the external-writer workload starts.
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.count == 3, arguments[0] == "--external-writer" {
            KeptWriter.main(path: arguments[1], synchronous: arguments[2])
        }
        if arguments == ["--spin"] { CPULoadProcesses.spin() }
        do {
            let options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
            try await run(options)
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ options: Options) async throws {
        let sizes = options.quick ? Sizes.quick : Sizes.full
        var workloads = [
            Workload(name: "write", run: writeOverhead),
            Workload(name: "observed", run: observedWrites),
            Workload(name: "latency", run: latency),
            Workload(name: "fanout", run: fanOut),
            Workload(name: "memory", run: memory),
            Workload(name: "decode", run: decoding),
            Workload(name: "external", run: externalChanges),
            Workload(name: "external-writer", run: externalKeptWriter),
        ]
        if options.grdb {
            workloads += try grdbWorkloads()
        }
        let unknown = options.only.subtracting(workloads.map(\.name))
        if !unknown.isEmpty { throw RawError(description: "unknown workload(s): \(unknown.sorted())") }
        if !options.only.isEmpty { workloads = workloads.filter { options.only.contains($0.name) } }

        print(
            "DBWatch benchmarks: SQLite \(String(cString: sqlite3_libversion())), \(ProcessInfo.processInfo.activeProcessorCount) cores, "
                + "\(options.quick ? "quick sizes" : "full sizes"), \(options.runs) run\(options.runs == 1 ? "" : "s") per workload"
                + (options.runs > 1 ? " (median [min – max]; each ratio is taken within one run)" : ""))
        fflush(nil)
        let start = nowNanoseconds()
        for workload in workloads {
            var runs: [[Sample]] = []
            for index in 1...options.runs {
                progress("[\(workload.name)] run \(index)/\(options.runs)… (load average \(loadAverage()))")
                var sized = sizes
                sized.run = index - 1
                runs.append(try await workload.run(sized))
            }
            printSummaries(summarize(runs))
        }
        progress(String(format: "done in %.0f s", seconds(since: start)))
    }

    /// Groups the samples of several runs by key, in the order of the first run.
    static func summarize(_ runs: [[Sample]]) -> [Summary] {
        runs[0].map { first in
            let matching = runs.compactMap { run in run.first { $0.key == first.key } }
            return Summary(first: first, values: matching.map(\.value), ratios: matching.compactMap(\.ratio))
        }
    }
}

/// The 1-minute load average, from /proc/loadavg.
func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
}
