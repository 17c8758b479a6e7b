// Follows a real DBWatch server with dbwatch.js, for the Swift tests of
// the client against the server (`JavaScriptSyncClientTests`): subscribes
// to `top` (n=3, keyed) and `count` (whole values), prints one JSON line
// per update and per batch, and closes when its standard input says
// `close`, then exits (no timer left behind).
//
//   node followSyncServer.mjs http://127.0.0.1:PORT/
import { connect } from "../../Sources/DBWatchDelivery/Client/dbwatch.js";
import { createInterface } from "node:readline";

const print = (object) => process.stdout.write(JSON.stringify(object) + "\n");
const connection = connect(process.argv[2], {
  onBatch: (batch) => print({ batch: batch.position, ids: Object.keys(batch.changes).sort() }),
  onError: (error) => print({ error: String(error) }),
});
connection.subscribe("top", { n: "3" }, (subscription, change) =>
  print({ id: "top", kind: change.kind, position: subscription.position, rows: subscription.rows.map((r) => r.row) }),
);
connection.subscribe("count", {}, (subscription, change) =>
  print({ id: "count", kind: change.kind, value: subscription.value }),
);
createInterface({ input: process.stdin }).on("line", (line) => {
  if (line.trim() === "close") {
    connection.close();
    process.stdin.destroy();
  }
});
