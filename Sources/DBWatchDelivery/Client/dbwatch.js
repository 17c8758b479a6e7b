// dbwatch.js: the JavaScript client of DBWatch's sync protocol, one
// dependency-free ES module (no build step). Its reference is the
// DBWatchDelivery article "The Sync Protocol".
//
// Built so far: the keyed change rule (`applyChanges`) and the result a
// subscription keeps (`KeyedResult`). Not built yet: the connection,
// subscriptions, batches, positions and reconnection.

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
