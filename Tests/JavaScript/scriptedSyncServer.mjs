// A fake server of the sync protocol for the JavaScript client's unit tests:
// it speaks the reference's server-sent events transport (`GET /sync`, then
// `POST /sync/SESSION` answered 202) but computes nothing; each test scripts
// what it sends and awaits what the client does. The real server's
// end-to-end tests are elsewhere.
import { createServer } from "node:http";

/** Values pushed by one side and awaited, in order, by the other. */
export class Queue {
  #items = [];
  #waiting = [];

  push(item) {
    const waiter = this.#waiting.shift();
    if (waiter) waiter(item);
    else this.#items.push(item);
  }

  /** The next item, at once if one was pushed already. */
  next() {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift());
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** The items pushed and not taken yet. */
  get pending() {
    return this.#items.length;
  }
}

/** One `GET /sync` stream, as the test drives it. */
export class ScriptedStream {
  /** The request's headers. */
  headers;
  /** The session id its `hello` names. */
  session;
  /** Resolves when the client or the server closed it. */
  closed;
  #response;

  constructor(request, response, session) {
    this.headers = request.headers;
    this.session = session;
    this.#response = response;
    this.closed = new Promise((resolve) => response.on("close", resolve));
  }

  /** Writes text as it is (to test the parser with odd framing). */
  write(text) {
    return new Promise((resolve) => this.#response.write(text, resolve));
  }

  /** Sends one message as one event, `event:` its type. */
  send(message) {
    return this.write(`event: ${message.type}\ndata: ${JSON.stringify(message)}\n\n`);
  }

  hello(position, fields = {}) {
    return this.send({ type: "hello", protocol: 1, session: this.session, position, ...fields });
  }

  batch(position, changes) {
    return this.send({ type: "batch", position, changes });
  }

  /** Ends the stream as a server that goes away does. */
  end() {
    this.#response.end();
    return this.closed;
  }
}

/**
 * Starts the fake server on a free port of 127.0.0.1.
 *
 * - `url`: its base URL, `http://127.0.0.1:PORT/`.
 * - `streams`: a `Queue` of `ScriptedStream`s, one per `GET /sync`.
 * - `posts`: a `Queue` of `{session, headers, body}`, one per `POST
 *   /sync/SESSION` of a session whose stream is open (answered 202); others
 *   are answered 404 `unknownSession`.
 * - `refusePost(status, body, matches)`: the next `POST` of an open session
 *   whose parsed body `matches` (any, by default) is answered with that
 *   error (and queued in `posts` with its `status`).
 * - `refuse(status, body)`: the next `GET /sync` is answered with that error;
 *   `refused`: a `Queue` of the times (`performance.now()`) of those answers.
 * - `close()`: closes every connection and the server.
 */
export async function startScriptedSyncServer() {
  const streams = new Queue();
  const posts = new Queue();
  const open = new Map();
  const refusals = [];
  const postRefusals = [];
  const refused = new Queue();
  let sessions = 0;
  const server = createServer((request, response) => {
    const path = new URL(request.url, "http://server").pathname;
    if (request.method === "GET" && path === "/sync") {
      const refusal = refusals.shift();
      if (refusal) {
        response.writeHead(refusal.status, { "Content-Type": "application/json" });
        response.end(JSON.stringify(refusal.body));
        refused.push(performance.now());
        return;
      }
      response.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-store" });
      response.flushHeaders();
      request.socket.setNoDelay(true);
      const stream = new ScriptedStream(request, response, `session-${++sessions}`);
      open.set(stream.session, stream);
      response.on("close", () => open.delete(stream.session));
      streams.push(stream);
      return;
    }
    const match = /^\/sync\/([^/]+)$/.exec(path);
    if (request.method === "POST" && match) {
      const chunks = [];
      request.on("data", (chunk) => chunks.push(chunk));
      request.on("end", () => {
        const session = decodeURIComponent(match[1]);
        if (!open.has(session)) {
          response.writeHead(404, { "Content-Type": "application/json" });
          // The server's one error shape: the protocol's name in `reason`.
          response.end(JSON.stringify({ message: "no such sync session: it ended, or never existed", reason: "unknownSession" }));
          return;
        }
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        const index = postRefusals.findIndex((refusal) => refusal.matches(body));
        const refusal = index < 0 ? undefined : postRefusals.splice(index, 1)[0];
        if (refusal) {
          response.writeHead(refusal.status, { "Content-Type": "application/json" });
          response.end(JSON.stringify(refusal.body));
          posts.push({ session, headers: request.headers, body, status: refusal.status });
          return;
        }
        response.writeHead(202);
        response.end();
        posts.push({ session, headers: request.headers, body, status: 202 });
      });
      return;
    }
    response.writeHead(404);
    response.end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    streams,
    posts,
    refused,
    refuse(status, body) {
      refusals.push({ status, body });
    },
    refusePost(status, body, matches = () => true) {
      postRefusals.push({ status, body, matches });
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
