// dbwatch.js: the JavaScript client of DBWatch's sync protocol, one
// dependency-free ES module (no build step). Its reference is the
// DBWatchDelivery article "The Sync Protocol".
//
// Built: the keyed change rule (`applyChanges`), the result a subscription
// keeps (`KeyedResult`), and the connection over server-sent events read
// with `fetch` (`connect`, `subscribe`): batches applied whole or not at
// all, positions kept per subscription, reconnection with backoff that
// resumes from them. Not built yet: the WebSocket transport and the
// catch-up over plain HTTP.
//
// The path of a server message: `Connection` reads the stream
// (`#openStream`) -> `EventStreamParser` cuts it into events -> `#receive`
// parses the JSON -> a batch is staged for every subscription it lists
// (`stageEntry`), then committed to all of them, then their callbacks run.

/** A change that does not fit the result it is applied to: the client has
 *  lost its state and must subscribe again without a position. */
export class ChangeError extends Error {
  constructor(message) {
    super(message);
    this.name = "ChangeError";
  }
}

/** A key as a string, for maps: keys are JSON values (a string, a number,
 *  or an array of them), compared by their JSON text. */
export function keyText(key) {
  return JSON.stringify(key);
}

/**
 * Applies keyed changes to an ordered result, exactly as the protocol's
 * rule says, and returns the new result (the argument is not modified).
 *
 * @param {{key: any, row: any}[]} rows the previous result, in order
 * @param {{delete?: any[], upsert?: {key: any, index?: number, row?: any}[]}} changes
 * @returns {{key: any, row: any}[]} the new result, in order
 * @throws {ChangeError} when a change does not fit `rows`
 *
 * @example
 * applyChanges([{key: 1, row: "a"}, {key: 2, row: "b"}],
 *              {delete: [], upsert: [{key: 2, index: 0}]})
 * // [{key: 2, row: "b"}, {key: 1, row: "a"}]
 */
export function applyChanges(rows, changes) {
  const deletes = changes.delete ?? [];
  const upserts = changes.upsert ?? [];
  const byKey = new Map();
  for (const entry of rows) byKey.set(keyText(entry.key), entry);

  // 1. Remove the deleted keys and the keys of upserts with an index.
  const mentioned = new Set();
  const mention = (text) => {
    if (mentioned.has(text)) throw new ChangeError(`key mentioned twice: ${text}`);
    mentioned.add(text);
  };
  const removed = new Set();
  for (const key of deletes) {
    const text = keyText(key);
    mention(text);
    if (!byKey.has(text)) throw new ChangeError(`delete of a key the result does not hold: ${text}`);
    removed.add(text);
  }
  const placed = [];
  for (const upsert of upserts) {
    const text = keyText(upsert.key);
    mention(text);
    if (upsert.index === undefined || upsert.index === null) continue;
    if (!Number.isInteger(upsert.index) || upsert.index < 0) {
      throw new ChangeError(`bad index for ${text}: ${upsert.index}`);
    }
    const previous = byKey.get(text);
    if (!("row" in upsert) && previous === undefined) {
      throw new ChangeError(`move of a key the result does not hold: ${text}`);
    }
    removed.add(text);
    placed.push({ index: upsert.index, entry: { key: upsert.key, row: "row" in upsert ? upsert.row : previous.row } });
  }
  const result = rows.filter((entry) => !removed.has(keyText(entry.key)));

  // 2. Insert the placed rows in ascending index order.
  placed.sort((a, b) => a.index - b.index);
  for (let i = 1; i < placed.length; i++) {
    if (placed[i].index === placed[i - 1].index) throw new ChangeError(`two rows placed at index ${placed[i].index}`);
  }
  for (const { index, entry } of placed) {
    if (index > result.length) throw new ChangeError(`index ${index} beyond the end (${result.length} rows)`);
    result.splice(index, 0, entry);
  }

  // 3. Replace the rows of upserts without an index, where they stand.
  const positions = new Map();
  result.forEach((entry, position) => positions.set(keyText(entry.key), position));
  for (const upsert of upserts) {
    if (upsert.index !== undefined && upsert.index !== null) continue;
    const text = keyText(upsert.key);
    const position = positions.get(text);
    if (position === undefined) throw new ChangeError(`update of a key the result does not hold: ${text}`);
    if (!("row" in upsert)) throw new ChangeError(`update without a row: ${text}`);
    result[position] = { key: upsert.key, row: upsert.row };
  }
  // 4. Rows not mentioned kept their relative order (filter and splice keep it).
  return result;
}

/**
 * The result a subscription keeps: its rows in order and a map by key,
 * replaced whole by a snapshot and changed by keyed changes.
 *
 * @example
 * const result = new KeyedResult();
 * result.replace([{key: 1, row: ["arthur", 100]}]);
 * result.apply({delete: [1], upsert: []});
 * result.rows   // []
 */
export class KeyedResult {
  constructor() {
    /** The rows, in order, each `{key, row}`. */
    this.rows = [];
    /** The rows by `keyText(key)`. */
    this.byKey = new Map();
  }

  /** Replaces the result with a snapshot's rows. */
  replace(rows) {
    this.#set(rows.map((entry) => ({ key: entry.key, row: entry.row })));
  }

  /** Applies keyed changes; on a `ChangeError` the result is unchanged. */
  apply(changes) {
    this.#set(applyChanges(this.rows, changes));
  }

  #set(rows) {
    this.rows = rows;
    this.byKey = new Map(rows.map((entry) => [keyText(entry.key), entry]));
  }
}

// MARK: The connection

/**
 * Options of a connection.
 *
 * @typedef {object} ConnectionOptions
 * @property {string | (() => string | Promise<string>)} [token] the bearer
 *   token sent as `Authorization: Bearer TOKEN` with every request, or a
 *   function asked before every request (for tokens that expire)
 * @property {Record<string, string>} [headers] more headers for every request
 * @property {RequestCredentials} [credentials] `fetch`'s credentials (the
 *   cookie of a browser page; `"include"` for another origin)
 * @property {{initial?: number, max?: number}} [retry] the reconnection
 *   delay in milliseconds: `initial` (500) doubling to `max` (30,000), each
 *   delay drawn between half of it and all of it; reset by a `hello`
 * @property {number} [idleTimeout] milliseconds without a byte on the
 *   stream (keep-alives included, every 15 s by default) after which it is
 *   taken as dead and reopened: 45,000 by default, 0 never
 * @property {(error: Error) => void} [onError] problems of the connection:
 *   a stream refused or cut, an error message without `id`, changes that do
 *   not fit (the subscription is then subscribed again); a callback that
 *   throws goes to `reportError` (or `console.error` in node) and the
 *   connection goes on
 * @property {(status: "connecting" | "open" | "waiting" | "closed") => void} [onStatus]
 *   called when `status` changes
 * @property {(batch: {position: string, changes: object}) => void} [onBatch]
 *   called once per batch applied, after the subscriptions' callbacks (to
 *   render a page once per commit)
 * @property {typeof fetch} [fetch] the `fetch` to use (the global one by default)
 */

/**
 * Options of a subscription.
 *
 * @typedef {object} SubscriptionOptions
 * @property {"changes" | "values"} [mode] `"changes"` (the default): a
 *   snapshot, then keyed changes; `"values"`: the whole value after every change
 * @property {string} [position] a position this client applied before for
 *   this query and these parameters (kept in storage, say): the server sends
 *   the changes since, or a snapshot
 * @property {(error: {code: string, message: string, status?: number}, subscription: Subscription) => void} [onError]
 *   the subscription's errors (its fetch failed on the server, its subscribe
 *   request was refused); the subscription stays
 */

/**
 * What `onUpdate` receives with the subscription: the batch's entry for it
 * (`kind` is `"snapshot"`, `"changes"`, `"catchUp"` or `"value"`, with that
 * kind's fields as the protocol says: `delete` and `upsert`, `steps`,
 * `reason`, `columns` and `rows`, `value`) and the batch's `position`.
 *
 * @callback UpdateCallback
 * @param {Subscription} subscription the subscription, already changed
 * @param {{kind: string, position: string} & Record<string, any>} change
 */

/**
 * Opens a connection of the sync protocol: one stream (`GET BASE/sync`,
 * server-sent events read with `fetch`) carrying any number of
 * subscriptions, kept open until `close()`.
 *
 * @param {string | URL} baseURL where the server's `sync` endpoint is:
 *   `"/"` for `/sync` on the page's server, `"https://example.com/api/"`
 *   for `https://example.com/api/sync` (in node, an absolute URL)
 * @param {ConnectionOptions} [options]
 * @returns {Connection}
 *
 * @example
 * const db = connect("/", { token });
 * const top = db.subscribe("leaderboard", { n: "10" }, (top, change) => render(top.rows));
 * // later
 * db.close();
 */
export function connect(baseURL, options = {}) {
  return new Connection(baseURL, options);
}

/**
 * Subscribes to one query on a connection of its own: the simple form.
 * `url` names the query as the server serves it, `BASE/queries/NAME` (or
 * `BASE/NAME`), with parameters in its query string or in `params`; the
 * connection goes to `BASE/sync`. Closing the subscription closes the
 * connection.
 *
 * @param {string | URL} url the query's URL, e.g. `"/queries/leaderboard"`
 * @param {Record<string, string>} [params] the query's parameters
 * @param {UpdateCallback} [onUpdate] called after every batch that changes it
 * @param {ConnectionOptions & SubscriptionOptions} [options] options of both
 * @returns {Subscription}
 *
 * @example
 * const top = subscribe("/queries/leaderboard", { n: "10" }, (top) => render(top.rows));
 * top.get(3)    // carol's row
 * top.close();
 */
export function subscribe(url, params = {}, onUpdate, options = {}) {
  const target = new URL(url, globalThis.location?.href);
  const segments = target.pathname.split("/");
  const query = decodeURIComponent(segments.pop());
  let path = segments.join("/") + "/";
  if (path.endsWith("/queries/")) path = path.slice(0, -"queries/".length);
  const connection = connect(new URL(path, target), options);
  const all = { ...Object.fromEntries(target.searchParams), ...params };
  const subscription = connection.subscribe(query, all, onUpdate, options);
  connection[closesWith] = subscription;
  return subscription;
}

/** The key under which `subscribe`'s connection remembers its subscription. */
const closesWith = Symbol("closesWith");

/**
 * A connection of the sync protocol (made by `connect`). It connects at
 * once, subscribes every subscription after each `hello` (with its
 * position; all of them in one message, so that they enter one batch),
 * and reconnects with backoff when the stream ends, until
 * `close()`.
 */
export class Connection {
  /** The server's position: the `hello`'s, then the last batch's. */
  position = null;

  #base;
  #options;
  #fetch;
  #status = "connecting";
  /** Every subscription's state, by the state. */
  #states = new Set();
  /** The states by the id the server knows them by in this session. */
  #byId = new Map();
  #nextId = 0;
  #session = null;
  #abort = null;
  #posts = Promise.resolve();
  #attempt = 0;
  #timer = null;
  #wake = null;

  /** Use `connect`. */
  constructor(baseURL, options = {}) {
    const base = new URL(baseURL, globalThis.location?.href);
    base.search = "";
    base.hash = "";
    if (!base.pathname.endsWith("/")) base.pathname += "/";
    this.#base = base.href;
    this.#options = options;
    this.#fetch = options.fetch ?? ((...args) => globalThis.fetch(...args));
    this.#run();
  }

  /** `"connecting"`, `"open"` (after a `hello`), `"waiting"` (to reconnect) or `"closed"`. */
  get status() {
    return this.#status;
  }

  /**
   * Subscribes to a query on this connection.
   *
   * @param {string} query the name of a query the server serves
   * @param {Record<string, string>} [params] its parameters (as strings)
   * @param {UpdateCallback} [onUpdate] called after every batch that changes it
   * @param {SubscriptionOptions} [options]
   * @returns {Subscription}
   */
  subscribe(query, params = {}, onUpdate, options = {}) {
    if (this.#status === "closed") throw new Error("the connection is closed");
    const state = {
      query,
      params: Object.fromEntries(Object.entries(params).map(([name, value]) => [name, String(value)])),
      mode: options.mode ?? "changes",
      position: options.position ?? null,
      onUpdate,
      onError: options.onError,
      result: new KeyedResult(),
      value: undefined,
      columns: undefined,
      id: null,
      /** Whether the server sent an entry for `id`: only then do batches that do not list it advance its position. */
      synced: false,
      closed: false,
      connection: this,
      close: () => this.#unsubscribe(state),
    };
    state.subscription = new Subscription(state);
    this.#states.add(state);
    if (this.#session !== null) this.#sendSubscribe(state);
    return state.subscription;
  }

  /** Closes the connection and its subscriptions for good: the stream is
   *  aborted, no reconnection follows, no timer is left running. */
  close() {
    if (this.#status === "closed") return;
    this.#setStatus("closed");
    for (const state of this.#states) state.closed = true;
    this.#states.clear();
    this.#byId.clear();
    this.#session = null;
    this.#abort?.abort();
    clearTimeout(this.#timer);
    this.#wake?.();
  }

  // The stream, reopened until closed.
  async #run() {
    while (this.#status !== "closed") {
      this.#setStatus("connecting");
      try {
        await this.#openStream();
      } catch (error) {
        if (this.#status === "closed") return;
        this.#report(error);
      }
      if (this.#status === "closed") return;
      this.#session = null;
      this.#byId.clear();
      this.#setStatus("waiting");
      await this.#delay();
    }
  }

  async #openStream() {
    // onStatus may have closed the connection.
    if (this.#status === "closed") return;
    const abort = new AbortController();
    this.#abort = abort;
    let idle = null;
    try {
      const response = await this.#fetch(this.#base + "sync", {
        headers: await this.#headers({ Accept: "text/event-stream" }),
        credentials: this.#options.credentials,
        cache: "no-store",
        signal: abort.signal,
      });
      if (!response.ok) throw await answerError(response);
      const type = response.headers.get("content-type") ?? "";
      if (!type.startsWith("text/event-stream")) {
        await response.body?.cancel();
        throw new Error(`GET ${this.#base}sync answered ${type || "no content type"}, not text/event-stream`);
      }
      const parser = new EventStreamParser((event, data) => this.#receive(event, data, abort));
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      const idleTimeout = this.#options.idleTimeout ?? 45000;
      for (;;) {
        // A stream silent for idleTimeout (keep-alives included) is dead: a
        // lost network may never end a TCP connection by itself.
        if (idleTimeout > 0) {
          clearTimeout(idle);
          idle = setTimeout(() => {
            this.#report(new Error(`no keep-alive for ${idleTimeout} ms: reconnecting`));
            abort.abort();
          }, idleTimeout);
        }
        const { done, value } = await reader.read();
        if (done) break;
        parser.push(decoder.decode(value, { stream: true }));
        if (abort.signal.aborted) break;
      }
    } catch (error) {
      // An abort is this client's own decision (close, end, a connection error).
      if (!abort.signal.aborted) throw error;
    } finally {
      clearTimeout(idle);
      abort.abort();
    }
  }

  #receive(event, data, abort) {
    if (abort.signal.aborted) return;
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      this.#report(new Error(`a ${event} event whose data is not JSON: ${data.slice(0, 100)}`));
      return;
    }
    switch (message.type ?? event) {
      case "hello":
        if (message.protocol !== 1) {
          this.#report(new Error(`the server speaks protocol ${message.protocol}, not 1`));
          abort.abort();
          return;
        }
        this.#session = message.session;
        this.#byId.clear();
        this.position = message.position ?? null;
        this.#attempt = 0;
        this.#setStatus("open");
        this.#sendSubscribeAll();
        return;
      case "batch":
        if (this.#session !== null) this.#applyBatch(message);
        return;
      case "error": {
        const state = message.id == null ? undefined : this.#byId.get(message.id);
        if (state !== undefined) {
          // Without a position: a refusal, which the POST's answer may
          // have reported already. With one: a failed fetch.
          if (message.position == null) this.#refusal(state, message.error ?? {});
          else this.#subscriptionError(state, message.error ?? {});
        } else if (message.id == null) {
          // About the connection: the server closes it; reconnect.
          this.#report(serverError(message.error ?? {}));
          abort.abort();
        }
        return;
      }
      case "end":
        abort.abort();
        return;
    }
  }

  // All of a batch or nothing: every entry is staged first, then all are
  // committed, then the callbacks run.
  #applyBatch(batch) {
    const staged = [];
    const misfits = [];
    for (const [id, entry] of Object.entries(batch.changes ?? {})) {
      const state = this.#byId.get(id);
      if (state === undefined) continue;
      try {
        staged.push({ state, entry, next: stageEntry(state, entry) });
      } catch (error) {
        misfits.push({ state, error: error instanceof ChangeError ? error : new ChangeError(String(error?.message ?? error)) });
      }
    }
    if (misfits.length > 0) {
      // The subscriptions the batch lists stay as they were: the misfits have
      // lost their state, the others resume from their own positions.
      for (const { state, error } of misfits) {
        this.#report(error);
        state.position = null;
        this.#resubscribe(state);
      }
      for (const { state } of staged) this.#resubscribe(state);
      return;
    }
    for (const { state, next } of staged) {
      if (next.value !== undefined) {
        state.value = next.value;
        state.result.replace([]);
      } else {
        state.value = undefined;
        state.result.replace(next.rows);
        if (next.columns !== undefined) state.columns = next.columns;
      }
      state.synced = true;
    }
    for (const state of this.#states) {
      if (state.synced) state.position = batch.position;
    }
    this.position = batch.position;
    for (const { state, entry } of staged) {
      if (state.onUpdate) this.#call(() => state.onUpdate(state.subscription, { ...entry, position: batch.position }));
    }
    if (this.#options.onBatch) this.#call(() => this.#options.onBatch(batch));
  }

  #sendSubscribe(state) {
    this.#post(this.#subscribeMessage(state), state);
  }

  // After a hello: every subscription in one array, which the server
  // handles together, so that all of them enter the same first batch. A server takes a body of 64 KiB at most: a longer
  // array goes in parts (each enters a batch of its own), and a message
  // that alone is too long goes by itself (its refusal is its subscription's).
  #sendSubscribeAll() {
    const messages = [...this.#states].map((state) => this.#subscribeMessage(state));
    for (const part of arrayParts(messages, maximumPostBytes)) {
      if (part.length === 1) this.#post(part[0], this.#byId.get(part[0].id));
      else this.#post(part);
    }
  }

  #subscribeMessage(state) {
    state.id = `s${++this.#nextId}`;
    state.synced = false;
    this.#byId.set(state.id, state);
    const message = { type: "subscribe", id: state.id, query: state.query, params: state.params, mode: state.mode };
    if (state.position !== null) message.position = state.position;
    return message;
  }

  #resubscribe(state) {
    this.#byId.delete(state.id);
    this.#post({ type: "unsubscribe", id: state.id });
    this.#sendSubscribe(state);
  }

  #unsubscribe(state) {
    if (state.closed) return;
    state.closed = true;
    this.#states.delete(state);
    if (state.id !== null && this.#byId.get(state.id) === state) {
      this.#byId.delete(state.id);
      if (this.#session !== null) this.#post({ type: "unsubscribe", id: state.id });
    }
    if (this[closesWith] === state.subscription) this.close();
  }

  // Client messages, one after the other, each in the session it was meant for.
  #post(message, state) {
    const session = this.#session;
    const signal = this.#abort.signal;
    this.#posts = this.#posts.then(async () => {
      if (session !== this.#session || signal.aborted) return;
      try {
        const response = await this.#fetch(`${this.#base}sync/${encodeURIComponent(session)}`, {
          method: "POST",
          headers: await this.#headers({ "Content-Type": "application/json" }),
          credentials: this.#options.credentials,
          body: JSON.stringify(message),
          signal,
        });
        if (response.ok) {
          await response.arrayBuffer();
          return;
        }
        const error = await answerError(response);
        if (signal.aborted) return;
        // The session ended, or is not this client's to post to: its stream
        // ended or will; a new one subscribes again. (Another 404, such as
        // unknownQuery, is the subscription's error.)
        if (error.body?.reason === "unknownSession") {
          if (session === this.#session) {
            this.#report(error);
            this.#abort?.abort();
          }
          return;
        }
        // An array's refusals come on the stream too, each with its id.
        if (Array.isArray(message)) return;
        if (state !== undefined && !state.closed) this.#refusal(state, error.body ?? { message: error.message, status: response.status });
        else this.#report(error);
      } catch (error) {
        if (!signal.aborted) this.#report(error);
      }
    });
  }

  async #headers(extra) {
    const headers = { ...this.#options.headers, ...extra };
    let token = this.#options.token;
    if (typeof token === "function") token = await token();
    if (token) headers.Authorization = `Bearer ${token}`;
    return headers;
  }

  // Waits before reconnecting: `initial` doubling to `max`, with jitter.
  #delay() {
    // onStatus may have closed the connection.
    if (this.#status === "closed") return Promise.resolve();
    const { initial = 500, max = 30000 } = this.#options.retry ?? {};
    const ceiling = Math.min(max, initial * 2 ** Math.min(this.#attempt, 30));
    this.#attempt += 1;
    const delay = ceiling / 2 + (Math.random() * ceiling) / 2;
    return new Promise((resolve) => {
      this.#wake = resolve;
      this.#timer = setTimeout(resolve, delay);
    }).finally(() => {
      this.#wake = null;
      this.#timer = null;
    });
  }

  // A subscription's refusal, reported once for each id it subscribed
  // with: the server answers the POST and sends it on the stream too.
  #refusal(state, error) {
    if (state.refusedId === state.id) return;
    state.refusedId = state.id;
    this.#subscriptionError(state, error);
  }

  #subscriptionError(state, error) {
    if (state.onError) this.#call(() => state.onError(error, state.subscription));
    else this.#report(serverError(error));
  }

  #setStatus(status) {
    if (this.#status === status) return;
    this.#status = status;
    if (this.#options.onStatus) this.#call(() => this.#options.onStatus(status));
  }

  #report(error) {
    if (this.#options.onError) this.#call(() => this.#options.onError(error));
  }

  // A callback that throws does not stop the connection.
  #call(callback) {
    try {
      callback();
    } catch (error) {
      if (typeof globalThis.reportError === "function") globalThis.reportError(error);
      else console.error(error);
    }
  }
}

/**
 * A subscription (made by `Connection.subscribe` or `subscribe`): its result
 * as of `position`, kept across reconnections.
 */
export class Subscription {
  #state;

  /** Use `Connection.subscribe` or `subscribe`. */
  constructor(state) {
    this.#state = state;
  }

  /** The query's name. */
  get query() {
    return this.#state.query;
  }

  /** The query's parameters, as strings. */
  get params() {
    return this.#state.params;
  }

  /** `"changes"` or `"values"`. */
  get mode() {
    return this.#state.mode;
  }

  /** The rows in order, each `{key, row}` (empty in values mode and before the first snapshot):
   *  a new array after every change, not to be modified. */
  get rows() {
    return this.#state.result.rows;
  }

  /** The rows by `keyText(key)`. */
  get byKey() {
    return this.#state.result.byKey;
  }

  /** The snapshot's `columns` (for a served SQL query), if it named them. */
  get columns() {
    return this.#state.columns;
  }

  /** The whole value of the last `"value"` entry (values mode, or a query without a key). */
  get value() {
    return this.#state.value;
  }

  /** The position of the last batch applied, or `null`; sent when the connection subscribes again. */
  get position() {
    return this.#state.position;
  }

  /** The connection it belongs to. */
  get connection() {
    return this.#state.connection;
  }

  /** Whether `close()` was called (or its connection's). */
  get closed() {
    return this.#state.closed;
  }

  /**
   * The row of a key, or `undefined`.
   *
   * @param {any} key a key as the server sends it: a string, a number or an array
   * @returns {any} the row
   */
  get(key) {
    return this.#state.result.byKey.get(keyText(key))?.row;
  }

  /** Unsubscribes (and closes `subscribe`'s own connection). */
  close() {
    this.#state.close();
  }
}

/**
 * What a batch's entry makes of a subscription's result, computed without
 * changing it: `{rows, columns}` or `{value}`.
 * @throws {ChangeError} when the entry does not fit
 */
function stageEntry(state, entry) {
  switch (entry?.kind) {
    case "changes":
      return { rows: applyChanges(state.result.rows, entry) };
    case "catchUp": {
      if (!Array.isArray(entry.steps)) throw new ChangeError("a catchUp without steps");
      let rows = state.result.rows;
      for (const step of entry.steps) rows = applyChanges(rows, step);
      return { rows };
    }
    case "snapshot": {
      if (!Array.isArray(entry.rows)) throw new ChangeError("a snapshot without rows");
      const keys = new Set();
      const rows = entry.rows.map((item) => {
        if (item === null || typeof item !== "object" || !("key" in item)) throw new ChangeError("a snapshot row without a key");
        const text = keyText(item.key);
        if (keys.has(text)) throw new ChangeError(`a snapshot with the key ${text} twice`);
        keys.add(text);
        return { key: item.key, row: item.row };
      });
      return { rows, columns: entry.columns };
    }
    case "value":
      if (!("value" in entry) || entry.value === undefined) throw new ChangeError("a value entry without a value");
      return { value: entry.value };
    default:
      throw new ChangeError(`an entry of unknown kind ${JSON.stringify(entry?.kind)}`);
  }
}

/** The longest body a DBWatch server takes in `POST /sync/SESSION`, in bytes. */
const maximumPostBytes = 64 * 1024;

/**
 * Splits `messages` into arrays whose JSON is at most `limit` bytes of
 * UTF-8, in order; a message longer than that alone is a part by itself.
 */
function arrayParts(messages, limit) {
  const encoder = new TextEncoder();
  const parts = [];
  let part = [];
  let size = 2; // the brackets
  for (const message of messages) {
    const length = encoder.encode(JSON.stringify(message)).length;
    const added = part.length === 0 ? length : length + 1; // the comma
    if (part.length > 0 && size + added > limit) {
      parts.push(part);
      part = [];
      size = 2;
    }
    part.push(message);
    size += part.length === 1 ? length : length + 1;
  }
  if (part.length > 0) parts.push(part);
  return parts;
}

/** An error of the server: `code`, `message` and `status` as it sent them. */
function serverError(body) {
  const error = new Error(body.message ?? "the server's error");
  error.code = body.code;
  error.status = body.status;
  error.body = body;
  return error;
}

/** The error of an HTTP answer that is not a success, from its JSON body if it has one. */
async function answerError(response) {
  let body;
  try {
    body = JSON.parse(await response.text());
  } catch {
    body = undefined;
  }
  if (body === null || typeof body !== "object") body = { message: `HTTP ${response.status}` };
  const error = serverError({ status: response.status, ...body });
  error.status = response.status;
  return error;
}

/**
 * Cuts a server-sent event stream into events, in chunks split anywhere:
 * lines end in CRLF, LF or CR; `data:` lines join with a newline; comments
 * (`: keep-alive`) and the `id` and `retry` fields are ignored.
 */
class EventStreamParser {
  #buffer = "";
  #event = "";
  #data = [];
  #afterCR = false;
  #onEvent;

  constructor(onEvent) {
    this.#onEvent = onEvent;
  }

  push(text) {
    // A LF that follows a CR ending the previous chunk is the end of a CRLF.
    if (this.#afterCR && text.startsWith("\n")) text = text.slice(1);
    this.#afterCR = false;
    this.#buffer += text;
    let start = 0;
    for (;;) {
      let end = start;
      while (end < this.#buffer.length && this.#buffer[end] !== "\n" && this.#buffer[end] !== "\r") end++;
      if (end === this.#buffer.length) break;
      const line = this.#buffer.slice(start, end);
      if (this.#buffer[end] === "\r" && end + 1 === this.#buffer.length) this.#afterCR = true;
      start = end + (this.#buffer[end] === "\r" && this.#buffer[end + 1] === "\n" ? 2 : 1);
      this.#line(line);
    }
    this.#buffer = this.#buffer.slice(start);
  }

  #line(line) {
    if (line === "") {
      if (this.#data.length > 0) this.#onEvent(this.#event || "message", this.#data.join("\n"));
      this.#event = "";
      this.#data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.#event = value;
    else if (field === "data") this.#data.push(value);
  }
}
