import NIOCore

/// One sync subscription to post: for a session, a `subscribe` message.
struct SubscribeMessage: Sendable {
    var session: String
    var id: String
    var query: String
    var params: [String: String] = [:]
    var position: String?

    var json: String {
        let parameters = params.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\($0.value)\"" }
        var text =
            #"{"type":"subscribe","id":"\#(id)","query":"\#(query)","params":{\#(parameters.joined(separator: ","))}"#
        if let position { text += #","position":"\#(position)""# }
        return text + "}"
    }
}

/// Posts `messages` (`POST /sync/SESSION`) over `workers` kept-alive
/// connections at once; every answer must be 202.
func postSubscriptions(_ messages: [SubscribeMessage], workers: Int, port: Int, group: any EventLoopGroup)
    async throws
{
    let workers = max(1, min(workers, messages.count))
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        for worker in 0..<workers {
            let share = stride(from: worker, to: messages.count, by: workers).map { messages[$0] }
            tasks.addTask {
                try await HTTPConnection.with(port: port, group: group) { connection in
                    for message in share {
                        let answer = try await connection.request(.POST, "/sync/\(message.session)", json: message.json)
                        guard answer.status == 202 else {
                            throw SyncBenchError(
                                description: "subscribe \(message.id): \(answer.status) \(answer.body)")
                        }
                    }
                }
            }
        }
        try await tasks.waitForAll()
    }
}
