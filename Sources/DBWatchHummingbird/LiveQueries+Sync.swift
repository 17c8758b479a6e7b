import DBWatch
import DBWatchDelivery
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

extension LiveQueries {
    /// Adds the sync protocol's routes over server-sent events (see
    /// "The Sync Protocol" in DBWatchDelivery): `GET /PATH` opens a connection, `POST
    /// /PATH/SESSION` carries its client's `subscribe` and `unsubscribe`
    /// messages, and `GET /PATH/queries/NAME?PARAMS&since=POSITION` is the
    /// catch-up over plain HTTP (see ``syncCatchUp(for:context:shared:resolve:)``).
    /// `resolve` turns each subscription into a `SyncQuery`
    /// (throw `LiveQueriesError.unknownQuery(_:)` for a name you do not
    /// serve); `owner` names who opens a connection (a user id), so that
    /// only the same may post to it. A catch-up with an owner, or with an
    /// `Authorization` or `Cookie` header, is not for shared caches.
    ///
    /// ```swift
    /// live.addSyncRoutes(to: router) { subscription, request, context in
    ///     guard subscription.query == "leaderboard" else { throw LiveQueriesError.unknownQuery(subscription.query) }
    ///     return .identifiable(TopPlayers(limit: Int(subscription.params["n"] ?? "") ?? 10))
    /// }
    /// ```
    ///
    /// The JavaScript client (`LiveQueries.javaScriptClient`, served with
    /// ``addJavaScriptClientRoute(to:path:)``) speaks it from a page.
    public func addSyncRoutes<Context: RequestContext>(
        to router: Router<Context>, path: String = "sync",
        owner: @escaping @Sendable (Request, Context) -> (any Hashable & Sendable)? = { _, _ in nil },
        resolve: @escaping @Sendable (SyncSubscription, Request, Context) async throws -> SyncQuery
    ) {
        router.get(RouterPath(path)) { [self] request, context in
            syncEvents(for: request, context: context, owner: owner(request, context)) {
                try await resolve($0, request, context)
            }
        }
        router.post(RouterPath(path + "/:session")) { [self] request, context in
            await syncMessage(request, context: context, owner: owner(request, context))
        }
        router.get(RouterPath(path + "/queries/:name")) { [self] request, context in
            let shared = Self.catchUpIsShared(owner: owner(request, context)) { name in
                HTTPField.Name(name).flatMap { request.headers[$0] }
            }
            return await syncCatchUp(for: request, context: context, shared: shared) {
                try await resolve($0, request, context)
            }
        }
    }

    /// The answer to `GET /PATH/queries/:name?PARAMS&since=POSITION`, the
    /// sync protocol's catch-up over plain HTTP (see "Catching up over plain
    /// HTTP" in DBWatchDelivery), for a server that adds its own routes: the
    /// keyed changes of the query named by the path's `name` with the query
    /// string's parameters (all but `since`), from `since` on, in steps.
    ///
    /// ```swift
    /// router.get("sync/queries/:name") { request, context in
    ///     await live.syncCatchUp(for: request, context: context, shared: true) { subscription in
    ///         .identifiable(TopPlayers(limit: Int(subscription.params["n"] ?? "") ?? 10))
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - request: The request; its path's `name` parameter names the query.
    ///   - context: Its context (logger, path parameters).
    ///   - shared: Whether the answer is the same whoever asks (no
    ///     credentials decide what the query returns): a complete answer is
    ///     then `Cache-Control: public`, else `private`.
    ///   - resolve: Turns the subscription into a `SyncQuery`, as for
    ///     ``addSyncRoutes(to:path:owner:resolve:)``.
    public func syncCatchUp(
        for request: Request, context: some RequestContext, shared: Bool,
        resolve: @escaping @Sendable (SyncSubscription) async throws -> SyncQuery
    ) async -> Response {
        let (subscription, since) = Self.catchUpRequest(
            name: context.parameters.get("name") ?? "",
            query: request.uri.queryParameters.map { (name: String($0.key), value: String($0.value)) })
        return Response(
            await syncCatchUp(subscription, since: since, shared: shared, logger: context.logger, resolve: resolve))
    }

    /// The answer to `POST /PATH/:session` (see ``addSyncRoutes(to:path:owner:resolve:)``),
    /// for a server that adds its own routes: `202`, or the refusal.
    ///
    /// ```swift
    /// router.post("sync/:session") { request, context in await live.syncMessage(request, context: context, owner: nil) }
    /// ```
    public func syncMessage(
        _ request: Request, context: some RequestContext, owner: (any Hashable & Sendable)?
    ) async -> Response {
        guard let session = context.parameters.get("session") else { return Response(syncRefusal(.unknownSession)) }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maximumSyncMessageBytes)
        } catch {
            return Response(syncMessageTooLong())
        }
        do throws(LiveQueriesError) {
            try await receiveSyncMessage(Data(body.readableBytesView), session: session, owner: SyncOwner(owner))
            return Response(Self.syncAccepted)
        } catch {
            return Response(syncRefusal(error))
        }
    }

    /// Serves `LiveQueries.javaScriptClient` (`dbwatch.js`) at `GET /PATH`.
    ///
    /// ```swift
    /// live.addJavaScriptClientRoute(to: router)   // <script type="module"> import { connect } from "/dbwatch.js"
    /// ```
    public func addJavaScriptClientRoute<Context: RequestContext>(
        to router: Router<Context>, path: String = "dbwatch.js"
    ) {
        router.get(RouterPath(path)) { _, _ in Response(LiveQueries.javaScriptClientAnswer) }
    }

    /// The answer to `GET /PATH` (see ``addSyncRoutes(to:path:owner:resolve:)``),
    /// for a server that adds its own routes: a sync connection over
    /// server-sent events (`hello`, then batches), or the refusal.
    ///
    /// ```swift
    /// router.get("sync") { request, context in
    ///     live.syncEvents(for: request, context: context, owner: nil) { .identifiable(TopPlayers(limit: 10)) }
    /// }
    /// ```
    public func syncEvents(
        for request: Request, context: some RequestContext, owner: (any Hashable & Sendable)?,
        resolve: @escaping @Sendable (SyncSubscription) async throws -> SyncQuery
    ) -> Response {
        let session: SyncSession
        switch syncSession(
            transport: .serverSentEvents, owner: SyncOwner(owner), logger: context.logger, resolve: resolve)
        {
        case .failure(let refusal): return Response(syncRefusal(refusal))
        case .success(let accepted): session = accepted
        }
        watchServerShutdown()
        return Response(
            status: .ok, headers: HTTPFields(SyncSession.eventStreamHeaders),
            body: ResponseBody { writer in
                try await request.body.consumeWithInboundCloseHandler { _ in
                    try await session.run { frame in try await writer.write(frame.byteBuffer(.serverSentEvents)) }
                } onInboundClosed: {
                    session.clientLeft()
                }
                try await writer.finish(nil)
            })
    }

    /// A sync connection over a WebSocket: the client's messages are text
    /// messages, and so are the server's (see "The Sync Protocol" in DBWatchDelivery).
    ///
    /// A client's message may take 64 KiB; Hummingbird's server bounds
    /// each frame to `WebSocketServerConfiguration.maxFrameSize`, 16 KiB
    /// by default, and closes the connection of a client that sends a
    /// larger one: raise it to 64 KiB, as below.
    ///
    /// ```swift
    /// router.ws("sync/socket") { inbound, outbound, context in
    ///     try await live.syncWebSocket(inbound: inbound, outbound: outbound, context: context) { subscription in
    ///         .identifiable(TopPlayers(limit: Int(subscription.params["n"] ?? "") ?? 10))
    ///     }
    /// }
    /// let app = Application(
    ///     router: router,
    ///     server: .http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(maxFrameSize: 1 << 16)),
    ///     services: [live])
    /// ```
    public func syncWebSocket(
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, context: some WebSocketContext,
        resolve: @escaping @Sendable (SyncSubscription) async throws -> SyncQuery
    ) async throws {
        let session: SyncSession
        switch syncSession(transport: .webSocket, owner: SyncOwner(nil), logger: context.logger, resolve: resolve) {
        case .failure(let refusal):
            try await outbound.write(.text(String(decoding: syncRefusal(refusal).body, as: UTF8.self)))
            return
        case .success(let accepted): session = accepted
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { session.clientLeft() }
                for try await message in inbound.messages(maxSize: Self.maximumSyncMessageBytes) {
                    switch message {
                    case .text(let text): try? await session.receive(Data(text.utf8))
                    case .binary(let buffer): try? await session.receive(Data(buffer.readableBytesView))
                    }
                }
            }
            watchServerShutdown()
            try await session.run { frame in
                try await outbound.withTextMessageWriter { write in try await write(frame.byteBuffer(.webSocket)) }
            }
            group.cancelAll()
        }
    }
}
