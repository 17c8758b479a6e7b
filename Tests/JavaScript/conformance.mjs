// Applies the changes that the Swift engine (KeyedChanges.between) computed,
// with dbwatch.js's applyChanges, and checks that each gives the next result:
// `node Tests/JavaScript/conformance.mjs CASES.ndjson`, one case a line,
// {"previous": [{key, row}…], "changes": {delete, upsert}, "next": [{key, row}…]}.
// Prints "ok N" and exits 0, or prints the first case that differs and exits 1.
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { applyChanges } from "../../Sources/DBWatchDelivery/Client/dbwatch.js";

const lines = readFileSync(process.argv[2], "utf8").split("\n").filter((line) => line.length > 0);
lines.forEach((line, number) => {
  const { previous, changes, next } = JSON.parse(line);
  let applied;
  try {
    applied = applyChanges(previous, changes);
  } catch (error) {
    console.log(`case ${number + 1}: ${error.message}\n${line}`);
    process.exit(1);
  }
  if (!isDeepStrictEqual(applied, next)) {
    console.log(`case ${number + 1}: applied ${JSON.stringify(applied)}\n${line}`);
    process.exit(1);
  }
});
console.log(`ok ${lines.length}`);
