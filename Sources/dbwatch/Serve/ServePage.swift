/// The page of `serve` at `/`: each query as a live table fed by
/// `EventSource`, the cells that changed since the previous value
/// highlighted (rows matched by the query's key columns, as `watch` does). One self-contained document (no framework, no CDN: it works
/// offline), readable on a phone.
///
/// Parameters come from the page's own query string (`/?n=10` fills `:n` of
/// every query that has it) and from a field per parameter.
enum ServePage {
    /// The whole page, with `title` (escaped) as its title.
    static func html(title: String) -> String {
        template.replacingOccurrences(of: "{{TITLE}}", with: escaped(title))
    }

    /// `text` safe inside HTML text and attribute values.
    static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }

    private static let template = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{TITLE}} · dbwatch</title>
        <style>
        :root { color-scheme: light dark; --changed: #ffe58a; --changed-text: #000; --muted: #888; --line: #8884; }
        body { font: 15px/1.4 system-ui, sans-serif; margin: 0 auto; padding: 12px; max-width: 1100px; }
        header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 12px; }
        h1 { font-size: 1.2em; margin: 0; }
        h2 { font-size: 1.05em; margin: 0; }
        #status, .meta, .sql { color: var(--muted); font-size: 0.85em; }
        section { margin: 16px 0; padding-top: 8px; border-top: 1px solid var(--line); }
        .sql { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-word; margin: 4px 0; }
        form { display: flex; flex-wrap: wrap; gap: 6px; margin: 6px 0; }
        label { font-size: 0.9em; }
        input { font: inherit; width: 8em; padding: 2px 4px; }
        .scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; }
        table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
        th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid var(--line); white-space: nowrap; }
        th { font-weight: 600; }
        td.number { text-align: right; }
        td.null { color: var(--muted); font-style: italic; }
        td.changed { background: var(--changed); color: var(--changed-text); transition: background 2s; }
        .error { color: #c33; font-size: 0.9em; }
        </style>
        </head>
        <body>
        <header><h1>{{TITLE}}</h1><span id="status">connecting…</span></header>
        <main id="queries"></main>
        <script>
        "use strict";
        const pageParameters = new URLSearchParams(location.search);
        const main = document.getElementById("queries");
        const status = document.getElementById("status");
        const live = new Map();

        function element(tag, properties, children) {
          const node = document.createElement(tag);
          Object.assign(node, properties || {});
          for (const child of children || []) node.append(child);
          return node;
        }

        function cellText(value) {
          if (value === null) return "NULL";
          if (typeof value === "object") {
            if ("base64" in value) return "blob, " + Math.floor(value.base64.length * 3 / 4) + " bytes";
            return JSON.stringify(value);
          }
          return String(value);
        }

        function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

        function render(state, value) {
          const previous = state.value;
          state.value = value;
          const head = element("tr", {}, value.columns.map((name) => element("th", { textContent: name })));
          // As `watch` does: rows matched by their key columns when the
          // query has them (a moved row is not a changed one), else by position.
          const comparable = previous && same(previous.columns, value.columns);
          const keyIndexes = (state.key || []).map((name) => value.columns.indexOf(name));
          const byKey = comparable && keyIndexes.length && keyIndexes.every((i) => i >= 0);
          const keyOf = (row) => JSON.stringify(keyIndexes.map((i) => row[i]));
          const previousByKey = new Map(byKey ? previous.rows.map((row) => [keyOf(row), row]) : []);
          const rows = value.rows.map((row, r) => {
            const before = !comparable ? null : byKey ? previousByKey.get(keyOf(row)) : previous.rows[r];
            return element("tr", {}, row.map((cell, c) => {
              const td = element("td", { textContent: cellText(cell) });
              if (cell === null) td.classList.add("null");
              if (typeof cell === "number") td.classList.add("number");
              if (comparable && (!before || !same(before[c], cell))) td.classList.add("changed");
              return td;
            }));
          });
          state.table.replaceChildren(element("thead", {}, [head]), element("tbody", {}, rows));
          state.meta.textContent = value.rows.length + (value.rows.length === 1 ? " row" : " rows") +
            " · updated " + new Date().toLocaleTimeString();
          state.error.textContent = "";
        }

        function connect(state) {
          if (state.source) state.source.close();
          const query = new URLSearchParams();
          for (const [name, input] of state.inputs) {
            if (input.value === "") {
              state.error.textContent = "Give " + state.inputs.size + (state.inputs.size === 1 ? " parameter" : " parameters") + " to start.";
              return;
            }
            query.set(name, input.value);
          }
          const url = "queries/" + encodeURIComponent(state.name) + "/events" + (state.inputs.size ? "?" + query : "");
          state.value = null;
          const source = new EventSource(url);
          state.source = source;
          source.onmessage = (event) => render(state, JSON.parse(event.data));
          source.addEventListener("error", (event) => {
            if (event.data) state.error.textContent = "Error: " + JSON.parse(event.data).message;
          });
          source.addEventListener("end", (event) => {
            source.close();
            state.error.textContent = "Stream ended: " + JSON.parse(event.data).reason + ". Reload to reconnect.";
            updateStatus();
          });
          source.onopen = updateStatus;
          source.onerror = () => {
            if (source.readyState === EventSource.CONNECTING) state.meta.textContent = "reconnecting…";
            if (source.readyState === EventSource.CLOSED) {
              fetch(url).then((r) => r.json()).then((body) => { state.error.textContent = "Error: " + body.message; }).catch(() => {});
            }
            updateStatus();
          };
        }

        function updateStatus() {
          const open = [...live.values()].filter((s) => s.source && s.source.readyState === EventSource.OPEN).length;
          status.textContent = open + " of " + live.size + " live";
        }

        function add(query) {
          const state = { name: query.name, key: query.key, inputs: new Map(), value: null, source: null };
          state.table = element("table");
          state.meta = element("div", { className: "meta", textContent: "waiting for the first value…" });
          state.error = element("div", { className: "error" });
          const form = element("form");
          for (const name of query.parameters) {
            const input = element("input", { name, value: pageParameters.get(name) || "", inputMode: "text" });
            state.inputs.set(name, input);
            form.append(element("label", { textContent: ":" + name + " " }, [input]));
          }
          if (query.parameters.length) form.append(element("button", { textContent: "Show" }));
          form.onsubmit = (event) => { event.preventDefault(); connect(state); };
          const section = element("section", { id: "query-" + query.name }, [
            element("h2", { textContent: query.name }),
            element("div", { className: "sql", textContent: query.sql }),
          ]);
          if (query.parameters.length) section.append(form);
          section.append(state.meta, state.error, element("div", { className: "scroll" }, [state.table]));
          main.append(section);
          live.set(query.name, state);
          connect(state);
        }

        fetch("queries").then((r) => r.json()).then((queries) => {
          queries.forEach(add);
          updateStatus();
        }).catch((error) => { status.textContent = "cannot list the queries: " + error; });
        </script>
        </body>
        </html>
        """#
}
