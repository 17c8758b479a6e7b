// The keyed change rule of dbwatch.js (`node --test Tests/JavaScript`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { applyChanges, ChangeError, KeyedResult } from "../../Sources/DBWatchDelivery/Client/dbwatch.js";

const rows = (...pairs) => pairs.map(([key, row]) => ({ key, row }));

test("the reference's leaderboard example: carol rises to the first place, dave leaves", () => {
  const previous = rows([1, [1, "arthur", 100]], [2, [2, "barbara", 80]], [3, [3, "carol", 70]], [4, [4, "dave", 10]]);
  const changes = { delete: [4], upsert: [{ key: 3, index: 0, row: [3, "carol", 120] }] };
  assert.deepEqual(applyChanges(previous, changes), rows([3, [3, "carol", 120]], [1, [1, "arthur", 100]], [2, [2, "barbara", 80]]));
});

test("inserts at the start, the middle and the end, in ascending index order whatever the order given", () => {
  const previous = rows([1, "a"], [2, "b"]);
  const changes = { upsert: [{ key: 9, index: 4, row: "z" }, { key: 7, index: 0, row: "x" }, { key: 8, index: 2, row: "y" }] };
  assert.deepEqual(applyChanges(previous, changes).map((entry) => entry.key), [7, 1, 8, 2, 9]);
});

test("a move without a row keeps its row; an update without an index stays where it is", () => {
  const previous = rows([1, "a"], [2, "b"], [3, "c"]);
  const changes = { upsert: [{ key: 3, index: 0 }, { key: 2, row: "B" }] };
  assert.deepEqual(applyChanges(previous, changes), rows([3, "c"], [1, "a"], [2, "B"]));
});

test("composite keys are compared by value", () => {
  const previous = rows([[1, "x"], "a"], [[1, "y"], "b"]);
  assert.deepEqual(applyChanges(previous, { delete: [[1, "x"]], upsert: [{ key: [1, "y"], row: "B" }] }), rows([[1, "y"], "B"]));
});

test("changes that do not fit are a ChangeError and leave a KeyedResult as it was", () => {
  const previous = rows([1, "a"], [2, "b"]);
  const misfits = [
    { delete: [3] },
    { delete: [1, 1] },
    { upsert: [{ key: 3, row: "c" }] },
    { upsert: [{ key: 3, index: 0 }] },
    { upsert: [{ key: 3, index: 3, row: "c" }] },
    { upsert: [{ key: 3, index: -1, row: "c" }] },
    { upsert: [{ key: 3, index: 0, row: "c" }, { key: 4, index: 0, row: "d" }] },
    { upsert: [{ key: 1, row: "A" }, { key: 1, index: 0 }] },
    { upsert: [{ key: 2 }] },
    { delete: [1], upsert: [{ key: 1, index: 0, row: "A" }] },
  ];
  for (const changes of misfits) {
    const result = new KeyedResult();
    result.replace(previous);
    assert.throws(() => result.apply(changes), ChangeError, JSON.stringify(changes));
    assert.deepEqual(result.rows, previous);
    assert.equal(result.byKey.get("2").row, "b");
  }
});

/** A deterministic generator (xorshift), so a failure names its seed. */
function generator(seed) {
  let state = BigInt(seed) || 1n;
  return (bound) => {
    state ^= (state << 13n) & 0xffffffffffffffffn;
    state ^= state >> 7n;
    state ^= (state << 17n) & 0xffffffffffffffffn;
    return Number(state % BigInt(bound));
  };
}

/** Any valid encoding of the step from `previous` to `next`: the rows left
 *  unmentioned are a random increasing subsequence of the common keys. */
function someChanges(previous, next, random) {
  const oldPosition = new Map(previous.map((entry, position) => [entry.key, position]));
  const newKeys = new Set(next.map((entry) => entry.key));
  const changes = { delete: previous.filter((entry) => !newKeys.has(entry.key)).map((entry) => entry.key), upsert: [] };
  let last = -1;
  next.forEach((entry, index) => {
    const position = oldPosition.get(entry.key);
    const old = position === undefined ? undefined : previous[position];
    if (position !== undefined && position > last && random(4) !== 0) {
      last = position;
      if (old.row !== entry.row) changes.upsert.push({ key: entry.key, row: entry.row });
    } else if (old !== undefined && old.row === entry.row && random(2) === 0) {
      changes.upsert.push({ key: entry.key, index });
    } else {
      changes.upsert.push({ key: entry.key, index, row: entry.row });
    }
  });
  // The order of upserts in a message does not matter.
  changes.upsert.sort(() => random(3) - 1);
  return changes;
}

test("any valid encoding of random steps gives exactly the next result, order included", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const random = generator(seed);
    let nextKey = 0;
    let current = Array.from({ length: random(30) }, () => ({ key: nextKey++, row: random(5) }));
    for (let step = 0; step < 20; step++) {
      let next = current.filter(() => random(6) !== 0).map((entry) => ({ key: entry.key, row: random(3) === 0 ? random(5) : entry.row }));
      for (let i = random(4); i > 0; i--) next.splice(random(next.length + 1), 0, { key: nextKey++, row: random(5) });
      if (random(2) === 0 && next.length > 1) {
        const [moved] = next.splice(random(next.length), 1);
        next.splice(random(next.length + 1), 0, moved);
      }
      const changes = someChanges(current, next, random);
      assert.deepEqual(applyChanges(current, changes), next, `seed ${seed}, step ${step}: ${JSON.stringify(changes)}`);
      current = next;
    }
  }
});
