// The connection of dbwatch.js against a scripted fake server of the sync
// protocol (`node --test Tests/JavaScript`): subscribing, batches applied
// whole or not at all, positions, errors, reconnection and close.
import { spawn } from "node:child_process";
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, subscribe } from "../../Sources/DBWatchDelivery/Client/dbwatch.js";
import { Queue, startScriptedSyncServer } from "./scriptedSyncServer.mjs";

const options = { timeout: 10000 };
const fast = { initial: 5, max: 20 };

/** Runs `body` with a fresh fake server, closing it afterwards. */
async function withServer(body) {
  const server = await startScriptedSyncServer();
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

/** A subscription's updates as a queue of `{subscription, change}`. */
function updates() {
  const queue = new Queue();
  queue.callback = (subscription, change) => queue.push({ subscription, change });
  return queue;
}

/** The keys of a subscription's rows, in order. */
const keys = (subscription) => subscription.rows.map((entry) => entry.key);

const snapshot = (...keys) => ({ kind: "snapshot", reason: "subscribed", rows: keys.map((key) => ({ key, row: [key, `r${key}`] })) });

test("after the hello, a subscription is a POST to the session with the reference's subscribe message, with the token on every request", options, async () => {
  await withServer(async (server) => {
    const db = connect(server.url, { token: "secret", retry: fast });
    try {
      db.subscribe("leaderboard", { n: 10 });
      const stream = await server.streams.next();
      assert.equal(stream.headers.accept, "text/event-stream");
      assert.equal(stream.headers.authorization, "Bearer secret");
      assert.equal(server.posts.pending, 0);
      await stream.hello("e/1042");
      const post = await server.posts.next();
      assert.equal(post.session, stream.session);
      assert.equal(post.headers["content-type"], "application/json");
      assert.equal(post.headers.authorization, "Bearer secret");
      assert.deepEqual(post.body, { type: "subscribe", id: "s1", query: "leaderboard", params: { n: "10" }, mode: "changes" });
      assert.equal(db.status, "open");
      assert.equal(db.position, "e/1042");
      // A subscription made once the connection is open is posted at once, with its own id.
      db.subscribe("recent", {}, undefined, { position: "e/1000" });
      assert.deepEqual((await server.posts.next()).body, {
        type: "subscribe", id: "s2", query: "recent", params: {}, mode: "changes", position: "e/1000",
      });
    } finally {
      db.close();
    }
  });
});

test("a token function is asked before every request", options, async () => {
  await withServer(async (server) => {
    let asked = 0;
    const db = connect(server.url, { token: async () => `t${++asked}`, retry: fast });
    try {
      db.subscribe("q");
      const stream = await server.streams.next();
      assert.equal(stream.headers.authorization, "Bearer t1");
      await stream.hello("e/1");
      assert.equal((await server.posts.next()).headers.authorization, "Bearer t2");
    } finally {
      db.close();
    }
  });
});

test("a snapshot, then keyed changes: the rows, the map by key and the position follow; the callback gets the change", options, async () => {
  await withServer(async (server) => {
    const db = connect(server.url, { retry: fast });
    const seen = updates();
    try {
      const top = db.subscribe("leaderboard", { n: "10" }, seen.callback);
      const stream = await server.streams.next();
      await stream.hello("e/1");
      const { id } = (await server.posts.next()).body;
      const rows = [[1, "arthur", 100], [2, "barbara", 80], [3, "carol", 70], [4, "dave", 10]];
      await stream.batch("e/2", {
        [id]: { kind: "snapshot", reason: "subscribed", columns: ["id", "name", "score"], rows: rows.map((row) => ({ key: row[0], row })) },
      });
      let { subscription, change } = await seen.next();
      assert.equal(subscription, top);
      assert.equal(change.kind, "snapshot");
      assert.equal(change.position, "e/2");
      assert.deepEqual(keys(top), [1, 2, 3, 4]);
      assert.deepEqual(top.columns, ["id", "name", "score"]);
      assert.equal(top.position, "e/2");

      await stream.batch("e/3", { [id]: { kind: "changes", delete: [4], upsert: [{ key: 3, index: 0, row: [3, "carol", 120] }] } });
      ({ change } = await seen.next());
      assert.deepEqual(change, { kind: "changes", delete: [4], upsert: [{ key: 3, index: 0, row: [3, "carol", 120] }], position: "e/3" });
      assert.deepEqual(top.rows.map((entry) => entry.row), [[3, "carol", 120], [1, "arthur", 100], [2, "barbara", 80]]);
      assert.deepEqual(top.get(3), [3, "carol", 120]);
      assert.equal(top.get(4), undefined);
      assert.equal(top.position, "e/3");
      assert.equal(db.position, "e/3");
    } finally {
      db.close();
    }
  });
});

test("a batch of two subscriptions is applied to both before either callback runs, and onBatch runs once after them", options, async () => {
  await withServer(async (server) => {
    const calls = [];
    const db = connect(server.url, { retry: fast, onBatch: (batch) => calls.push(`batch ${batch.position}`) });
    const done = new Queue();
    try {
      const seenBy = (name) => (subscription) => {
        calls.push(`${name}: a ${keys(a)}, b ${keys(b)}`);
        if (name === "b") done.push();
      };
      const a = db.subscribe("a", {}, seenBy("a"));
      const b = db.subscribe("b", {}, seenBy("b"));
      const stream = await server.streams.next();
      await stream.hello("e/1");
      // Both in one array, handled together by the server.
      const [idA, idB] = (await server.posts.next()).body.map((message) => message.id);
      await stream.batch("e/2", { [idA]: snapshot(1), [idB]: snapshot(2) });
      await done.next();
      await stream.batch("e/3", { [idA]: { kind: "changes", upsert: [{ key: 3, index: 1, row: "x" }] }, [idB]: { kind: "changes", delete: [2] } });
      await done.next();
      assert.deepEqual(calls, ["a: a 1, b 2", "b: a 1, b 2", "batch e/2", "a: a 1,3, b ", "b: a 1,3, b ", "batch e/3"]);
      assert.equal(a.position, "e/3");
      assert.equal(b.position, "e/3");
    } finally {
      db.close();
    }
  });
});

test("a batch with an entry that does not fit changes neither subscription: the misfit subscribes again without a position, the other from its own", options, async () => {
  await withServer(async (server) => {
    const errors = [];
    const db = connect(server.url, { retry: fast, onError: (error) => errors.push(error) });
    const seen = updates();
    try {
      const a = db.subscribe("a", {}, seen.callback);
      const b = db.subscribe("b", {}, seen.callback);
      const stream = await server.streams.next();
      await stream.hello("e/1");
      // Both in one array, handled together by the server.
      const [idA, idB] = (await server.posts.next()).body.map((message) => message.id);
      await stream.batch("e/2", { [idA]: snapshot(1, 2), [idB]: snapshot(5) });
      await seen.next();
      await seen.next();
      // b's change is good, a's deletes a key a does not hold.
      await stream.batch("e/3", { [idB]: { kind: "changes", delete: [5] }, [idA]: { kind: "changes", delete: [9] } });
      const messages = [];
      for (let i = 0; i < 4; i++) messages.push((await server.posts.next()).body);
      assert.deepEqual(keys(a), [1, 2]);
      assert.deepEqual(keys(b), [5]);
      assert.equal(a.position, null);
      assert.equal(b.position, "e/2");
      assert.equal(seen.pending, 0);
      assert.equal(errors.length, 1);
      assert.equal(errors[0].name, "ChangeError");
      const unsubscribed = messages.filter((message) => message.type === "unsubscribe").map((message) => message.id).sort();
      assert.deepEqual(unsubscribed, [idA, idB].sort());
      const subscribed = messages.filter((message) => message.type === "subscribe");
      const newA = subscribed.find((message) => message.query === "a");
      const newB = subscribed.find((message) => message.query === "b");
      assert.equal("position" in newA, false);
      assert.equal(newB.position, "e/2");
      assert.equal(new Set([idA, idB, newA.id, newB.id]).size, 4, "every subscribe has a new id");
      // Entries for the old ids are ignored; the new ones apply.
      await stream.batch("e/4", { [idA]: snapshot(7), [newA.id]: { ...snapshot(1, 2, 3), reason: "subscribed" }, [newB.id]: { kind: "catchUp", steps: [{ delete: [5] }] } });
      await seen.next();
      await seen.next();
      assert.deepEqual(keys(a), [1, 2, 3]);
      assert.deepEqual(keys(b), []);
      assert.equal(a.position, "e/4");
    } finally {
      db.close();
    }
  });
});

test("a snapshot that repeats a key, a catchUp without steps and an unknown kind are misfits too", options, async () => {
  await withServer(async (server) => {
    const errors = new Queue();
    const db = connect(server.url, { retry: fast, onError: (error) => errors.push(error) });
    try {
      db.subscribe("a");
      const stream = await server.streams.next();
      await stream.hello("e/1");
      let id = (await server.posts.next()).body.id;
      for (const entry of [snapshot(1, 1), { kind: "catchUp" }, { kind: "patch" }, { kind: "value" }, { kind: "changes", delete: 3 }]) {
        await stream.batch("e/2", { [id]: entry });
        assert.equal((await errors.next()).name, "ChangeError");
        assert.deepEqual((await server.posts.next()).body, { type: "unsubscribe", id });
        id = (await server.posts.next()).body.id;
      }
    } finally {
      db.close();
    }
  });
});

test("catchUp steps are applied one after the other", options, async () => {
  await withServer(async (server) => {
    const db = connect(server.url, { retry: fast });
    const seen = updates();
    try {
      const top = db.subscribe("top", {}, seen.callback);
      const stream = await server.streams.next();
      await stream.hello("e/1");
      const { id } = (await server.posts.next()).body;
      await stream.batch("e/2", { [id]: snapshot(1, 2, 3) });
      await seen.next();
      const steps = [{ delete: [1] }, { upsert: [{ key: 4, index: 0, row: "d" }] }, { upsert: [{ key: 3, index: 0 }], delete: [4] }];
      await stream.batch("e/9", { [id]: { kind: "catchUp", steps } });
      const { change } = await seen.next();
      assert.equal(change.kind, "catchUp");
      assert.deepEqual(keys(top), [3, 2]);
      assert.equal(top.position, "e/9");
    } finally {
      db.close();
    }
  });
});

test("values mode: the subscribe says so and whole values replace the result", options, async () => {
  await withServer(async (server) => {
    const db = connect(server.url, { retry: fast });
    const seen = updates();
    try {
      const total = db.subscribe("total", {}, seen.callback, { mode: "values" });
      const stream = await server.streams.next();
      await stream.hello("e/1");
      const { body } = await server.posts.next();
      assert.equal(body.mode, "values");
      await stream.batch("e/2", { [body.id]: { kind: "value", value: { columns: ["n"], rows: [[3]] } } });
      await seen.next();
      assert.deepEqual(total.value, { columns: ["n"], rows: [[3]] });
      assert.deepEqual(total.rows, []);
      await stream.batch("e/3", { [body.id]: { kind: "value", value: { columns: ["n"], rows: [[4]] } } });
      const { change } = await seen.next();
      assert.equal(change.kind, "value");
      assert.deepEqual(total.value.rows, [[4]]);
      assert.equal(total.position, "e/3");
    } finally {
      db.close();
    }
  });
});

test("an error with an id goes to that subscription's onError and the subscription stays", options, async () => {
  await withServer(async (server) => {
    const db = connect(server.url, { retry: fast });
    const seen = updates();
    const errors = new Queue();
    try {
      const top = db.subscribe("top", {}, seen.callback, { onError: (error, subscription) => errors.push({ error, subscription }) });
      const stream = await server.streams.next();
      await stream.hello("e/1");
      const { id } = (await server.posts.next()).body;
      await stream.batch("e/2", { [id]: snapshot(1) });
      await seen.next();
      await stream.send({ type: "error", id, position: "e/3", error: { code: "sqlite", message: "no such column: score", status: 400 } });
      const { error, subscription } = await errors.next();
      assert.equal(subscription, top);
      assert.deepEqual(error, { code: "sqlite", message: "no such column: score", status: 400 });
      assert.deepEqual(keys(top), [1]);
      assert.equal(top.position, "e/2");
      // Still on the same stream, and a later snapshot applies.
      await stream.batch("e/4", { [id]: { ...snapshot(2), reason: "reset" } });
      await seen.next();
      assert.deepEqual(keys(top), [2]);
      assert.equal(server.streams.pending, 0);
      assert.equal(server.posts.pending, 0);
    } finally {
      db.close();
    }
  });
});

test("subscriptions whose one array would exceed the server's 64 KiB body limit subscribe in several arrays, each within it; one message longer than that goes by itself and its refusal is its subscription's", options, async () => {
  await withServer(async (server) => {
    const db = connect(server.url, { retry: fast, onError: () => {} });
    const errors = new Queue();
    try {
      // Five subscriptions of about 20 KB each (parameters of 20,000
      // characters, two of them two bytes long in UTF-8), and one of 70 KB.
      const small = Array.from({ length: 5 }, (_, index) =>
        db.subscribe(`q${index}`, { text: (index % 2 === 0 ? "é" : "e").repeat(index % 2 === 0 ? 10000 : 20000) }),
      );
      const huge = db.subscribe("huge", { text: "x".repeat(70000) }, undefined, { onError: (error, subscription) => errors.push({ error, subscription }) });
      const stream = await server.streams.next();
      // As a DBWatch server refuses a body over 64 KiB.
      server.refusePost(400, { message: "the message is longer than 64 KiB", reason: "badRequest" }, (body) => body.query === "huge");
      await stream.hello("e/1");
      const posts = [];
      while (posts.flatMap((post) => (Array.isArray(post.body) ? post.body : [post.body])).length < 6) {
        posts.push(await server.posts.next());
      }
      const sizes = posts.map((post) => new TextEncoder().encode(JSON.stringify(post.body)).length);
      // In order: three, two, then the long one alone (refused).
      assert.deepEqual(posts.map((post) => (Array.isArray(post.body) ? post.body.map((message) => message.query) : post.body.query)), [
        ["q0", "q1", "q2"],
        ["q3", "q4"],
        "huge",
      ]);
      assert.ok(sizes[0] <= 65536 && sizes[1] <= 65536, `parts of ${sizes}`);
      assert.ok(sizes[0] + sizes[1] > 65536);
      assert.equal(posts[2].status, 400);
      const { error, subscription } = await errors.next();
      assert.equal(subscription, huge);
      assert.equal(error.reason, "badRequest");
      assert.equal(small.length, 5);
    } finally {
      db.close();
    }
  });
});

test("a 404 unknownQuery is the subscription's error; a 404 unknownSession on an open stream opens a new one, where every subscription subscribes again", options, async () => {
  await withServer(async (server) => {
    const batches = new Queue();
    const db = connect(server.url, { retry: fast, onError: () => {}, onBatch: (batch) => batches.push(batch) });
    const errors = new Queue();
    try {
      server.refusePost(404, { message: "no query named \"nope\"", reason: "unknownQuery" });
      const nope = db.subscribe("nope", {}, undefined, { onError: (error, subscription) => errors.push({ error, subscription }) });
      const first = await server.streams.next();
      await first.hello("e/1");
      const refused = await server.posts.next();
      assert.equal(refused.status, 404);
      const { error, subscription } = await errors.next();
      assert.equal(subscription, nope);
      assert.equal(error.reason, "unknownQuery");
      // The server sends the refusal on the stream too: reported once.
      await first.send({ type: "error", id: refused.body.id, error: { message: "no query named \"nope\"", reason: "unknownQuery" } });
      await first.batch("e/2", {});
      await batches.next();
      assert.equal(errors.pending, 0, "the refusal was reported once");
      nope.close();
      await server.posts.next(); // its unsubscribe

      // The server no longer knows the session, though its stream is open
      // (a token whose claims changed): the client opens a new stream.
      server.refusePost(404, { message: "no such sync session: it ended, or never existed", reason: "unknownSession" });
      db.subscribe("top", {});
      assert.equal((await server.posts.next()).status, 404);
      const second = await server.streams.next();
      assert.notEqual(second.session, first.session);
      await second.hello("e/2");
      const again = await server.posts.next();
      assert.equal(again.session, second.session);
      assert.equal(again.body.query, "top");
    } finally {
      db.close();
    }
  });
});

test("a stream the server closes is opened again after a backoff, and every subscription subscribes again with its position", options, async () => {
  await withServer(async (server) => {
    const statuses = [];
    const batches = new Queue();
    const db = connect(server.url, { retry: fast, onStatus: (status) => statuses.push(status), onBatch: (batch) => batches.push(batch) });
    const seen = updates();
    try {
      const a = db.subscribe("a", {}, seen.callback);
      const b = db.subscribe("b", { n: "2" }, seen.callback);
      const first = await server.streams.next();
      await first.hello("e/1");
      const idA = (await server.posts.next()).body[0].id;
      await first.batch("e/2", { [idA]: snapshot(1) });
      await seen.next();
      await batches.next();
      // b has no entry yet: it keeps no position; a is as of every later batch.
      await first.batch("e/3", {});
      await batches.next();
      assert.equal(a.position, "e/3");
      assert.equal(b.position, null);
      await first.end();

      const second = await server.streams.next();
      assert.notEqual(second.session, first.session);
      await second.hello("e/5");
      // One array: both subscriptions enter the same first batch.
      const again = await server.posts.next();
      assert.equal(again.session, second.session);
      assert.deepEqual(again.body, [
        { type: "subscribe", id: "s3", query: "a", params: {}, mode: "changes", position: "e/3" },
        { type: "subscribe", id: "s4", query: "b", params: { n: "2" }, mode: "changes" },
      ]);
      // The rows stay while the catch-up comes.
      assert.deepEqual(keys(a), [1]);
      await second.batch("e/5", { s3: { kind: "catchUp", steps: [{ upsert: [{ key: 2, index: 1, row: "b" }] }] } });
      await seen.next();
      assert.deepEqual(keys(a), [1, 2]);
      assert.deepEqual(statuses, ["open", "waiting", "connecting", "open"]);
    } finally {
      db.close();
    }
  });
});

test("an end message and an error without an id end the stream: the client reconnects", options, async () => {
  await withServer(async (server) => {
    const errors = [];
    const db = connect(server.url, { retry: fast, onError: (error) => errors.push(error) });
    try {
      db.subscribe("a");
      const first = await server.streams.next();
      await first.hello("e/1");
      await server.posts.next();
      await first.send({ type: "end", reason: "shutdown" });
      await first.closed;
      const second = await server.streams.next();
      await second.hello("e/1");
      await server.posts.next();
      assert.deepEqual(errors, []);
      await second.send({ type: "error", error: { code: "tooManySubscriptions", message: "too many", status: 429 } });
      await second.closed;
      const third = await server.streams.next();
      await third.hello("e/1");
      assert.equal((await server.posts.next()).session, third.session);
      assert.equal(errors.length, 1);
      assert.equal(errors[0].code, "tooManySubscriptions");
    } finally {
      db.close();
    }
  });
});

test("a refused stream is reported with its error body and tried again", options, async () => {
  await withServer(async (server) => {
    const errors = new Queue();
    server.refuse(401, { code: "unauthorized", message: "a bearer token is required" });
    const db = connect(server.url, { retry: fast, onError: (error) => errors.push(error) });
    try {
      const error = await errors.next();
      assert.equal(error.status, 401);
      assert.equal(error.code, "unauthorized");
      assert.equal(error.message, "a bearer token is required");
      await server.streams.next();
    } finally {
      db.close();
    }
  });
});

test("the stream is parsed in chunks split anywhere: CRLF, CR, data over several lines, comments and other fields", options, async () => {
  await withServer(async (server) => {
    const db = connect(server.url, { retry: fast });
    const seen = updates();
    try {
      const top = db.subscribe("top", {}, seen.callback);
      const stream = await server.streams.next();
      await stream.write(": keep-alive\r\n\r\n");
      await stream.write(`event: hello\r\nid: 1\r\ndata: {"type": "hello", "protocol": 1,\r\ndata: "session": "${stream.session}", "position": "e/1"}\r\n\r\n`);
      const { id } = (await server.posts.next()).body;
      const text = `: keep-alive\n\nevent:batch\rdata:{"type":"batch","position":"e/2",\rdata: "changes":{"${id}":{"kind":"snapshot","rows":[{"key":"é","row":"日本"}]}}}\r\r`;
      for (const byte of Buffer.from(text, "utf8")) await stream.write(Buffer.from([byte]));
      await seen.next();
      assert.deepEqual(top.rows, [{ key: "é", row: "日本" }]);
    } finally {
      db.close();
    }
  });
});

test("closing a subscription posts its unsubscribe; entries for it are then ignored", options, async () => {
  await withServer(async (server) => {
    const db = connect(server.url, { retry: fast });
    const seen = updates();
    try {
      const a = db.subscribe("a", {}, seen.callback);
      const b = db.subscribe("b", {}, seen.callback);
      const stream = await server.streams.next();
      await stream.hello("e/1");
      // Both in one array, handled together by the server.
      const [idA, idB] = (await server.posts.next()).body.map((message) => message.id);
      a.close();
      assert.equal(a.closed, true);
      assert.deepEqual((await server.posts.next()).body, { type: "unsubscribe", id: idA });
      await stream.batch("e/2", { [idA]: snapshot(1), [idB]: snapshot(2) });
      const { subscription } = await seen.next();
      assert.equal(subscription, b);
      assert.deepEqual(a.rows, []);
      assert.equal(db.status, "open");
    } finally {
      db.close();
    }
  });
});

test("subscribe(url, params) opens a connection of its own at BASE/sync for BASE/queries/NAME; closing it closes the connection", options, async () => {
  await withServer(async (server) => {
    const seen = updates();
    const top = subscribe(`${server.url}queries/leaderboard?n=10`, { after: "x" }, seen.callback, { token: "t" });
    try {
      const stream = await server.streams.next();
      assert.equal(stream.headers.authorization, "Bearer t");
      await stream.hello("e/1");
      const { body } = await server.posts.next();
      assert.deepEqual(body, { type: "subscribe", id: "s1", query: "leaderboard", params: { n: "10", after: "x" }, mode: "changes" });
      await stream.batch("e/2", { s1: snapshot(1) });
      await seen.next();
      assert.deepEqual(keys(top), [1]);
      top.close();
      assert.equal(top.connection.status, "closed");
      await stream.closed;
    } finally {
      top.close();
    }
  });
});

test("close() aborts the stream and never reconnects", options, async () => {
  await withServer(async (server) => {
    const db = connect(server.url, { retry: { initial: 1, max: 1 } });
    db.subscribe("a");
    const stream = await server.streams.next();
    await stream.hello("e/1");
    await server.posts.next();
    db.close();
    assert.equal(db.status, "closed");
    await stream.closed;
    assert.throws(() => db.subscribe("b"));
    // A reconnection would come after 1 ms; a new stream would be pushed.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(server.streams.pending, 0);
  });
});

test("reconnections wait longer each time, from half the delay to all of it, and a hello resets the delay", options, async () => {
  await withServer(async (server) => {
    for (let i = 0; i < 3; i++) server.refuse(503, { code: "unavailable", message: "later" });
    const db = connect(server.url, { retry: { initial: 100, max: 1000 } });
    try {
      const times = [await server.refused.next(), await server.refused.next(), await server.refused.next()];
      let stream = await server.streams.next();
      const opened = performance.now();
      // 100 ms, then 200 ms, then 400 ms; each at least half of it.
      assert.ok(times[1] - times[0] >= 50, `${times[1] - times[0]} ms`);
      assert.ok(times[2] - times[1] >= 100, `${times[2] - times[1]} ms`);
      assert.ok(opened - times[2] >= 200, `${opened - times[2]} ms`);
      await stream.hello("e/1");
      await stream.end();
      const ended = performance.now();
      stream = await server.streams.next();
      const gap = performance.now() - ended;
      // Without the reset it would be the fourth delay, 400-800 ms.
      assert.ok(gap >= 50 && gap < 400, `after a hello, the first delay is 50-100 ms again: ${gap} ms`);
    } finally {
      db.close();
    }
  });
});

test("a process whose connections are closed exits: no timer, stream or request is left behind", options, async () => {
  await withServer(async (server) => {
    const client = new URL("../../Sources/DBWatchDelivery/Client/dbwatch.js", import.meta.url).href;
    // One connection open with a subscription, one waiting a minute to reconnect; both closed.
    const script = `
      import { connect } from ${JSON.stringify(client)};
      const waiting = connect("http://127.0.0.1:1/", { retry: { initial: 60000 }, onStatus: (status) => {
        if (status === "waiting") waiting.close();
      } });
      const db = connect(${JSON.stringify(server.url)});
      db.subscribe("a", {}, () => { db.close(); console.log("closed"); });
    `;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    const exited = new Promise((resolve) => child.on("exit", resolve));
    try {
      const stream = await server.streams.next();
      await stream.hello("e/1");
      const { body } = await server.posts.next();
      await stream.batch("e/2", { [body.id]: snapshot(1) });
      assert.equal(await exited, 0);
      assert.equal(output, "closed\n");
    } finally {
      child.kill();
    }
  });
});

test("a stream silent for idleTimeout is taken as dead and opened again", options, async () => {
  await withServer(async (server) => {
    const errors = [];
    const db = connect(server.url, { retry: fast, idleTimeout: 100, onError: (error) => errors.push(error) });
    try {
      db.subscribe("a");
      const first = await server.streams.next();
      await first.hello("e/1");
      await server.posts.next();
      await first.closed;
      const second = await server.streams.next();
      await second.hello("e/1");
      assert.equal((await server.posts.next()).session, second.session);
      assert.match(errors[0].message, /no keep-alive for 100 ms/);
    } finally {
      db.close();
    }
  });
});

test("a callback that throws is reported and the connection goes on", options, async (t) => {
  const reported = [];
  t.mock.method(console, "error", (error) => reported.push(error));
  await withServer(async (server) => {
    const db = connect(server.url, { retry: fast });
    const seen = updates();
    try {
      const top = db.subscribe("top", {}, (subscription, change) => {
        seen.push(change);
        if (change.kind === "snapshot") throw new Error("a bug in the page");
      });
      const stream = await server.streams.next();
      await stream.hello("e/1");
      const { id } = (await server.posts.next()).body;
      await stream.batch("e/2", { [id]: snapshot(1) });
      await seen.next();
      await stream.batch("e/3", { [id]: { kind: "changes", delete: [1] } });
      await seen.next();
      assert.deepEqual(keys(top), []);
      assert.equal(top.position, "e/3");
      assert.deepEqual(reported.map((error) => error.message), ["a bug in the page"]);
    } finally {
      db.close();
    }
  });
});
