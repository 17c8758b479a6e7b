extension Frame {
    /// A message of the sync protocol, for one transport only (its batches
    /// are composed per connection): a server-sent event whose `event:` is
    /// the message's `type` and whose `data:` is `json`, or `json` as a
    /// WebSocket text message. `committedAt`: when the commit the message
    /// is the earliest news of was published (a batch of changes).
    static func sync(
        _ type: String, json: [UInt8], for transport: Transport, committedAt: ContinuousClock.Instant? = nil
    ) -> Frame {
        switch transport {
        case .serverSentEvents:
            var event: [UInt8] = []
            event.reserveCapacity(json.count + type.utf8.count + 16)
            event += "event: \(type)\ndata: ".utf8
            event += json
            event += "\n\n".utf8
            return Frame(
                kind: .value, digest: 0, serverSentEvent: event, webSocketMessage: [], committedAt: committedAt)
        case .webSocket:
            return Frame(kind: .value, digest: 0, serverSentEvent: [], webSocketMessage: json, committedAt: committedAt)
        }
    }

    /// What a sync session offers its client's mailbox when one of its
    /// feeds moved: never written, it makes the write loop compose the
    /// next batch (``SyncSession``), at the latest consistent position,
    /// when the client can take it. Offers replace each other: a client
    /// that reads slowly gets one batch for many commits.
    static let syncWake = Frame(kind: .value, digest: 0, serverSentEvent: [], webSocketMessage: [])
}
