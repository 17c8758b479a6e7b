import DBWatch

/// The rows of `EXPLAIN QUERY PLAN` drawn as a tree, as the `sqlite3`
/// shell does.
///
/// ```
/// ├─ SCAN player
/// └─ SEARCH team USING INTEGER PRIMARY KEY (rowid=?)
/// ```
struct QueryPlan {
    /// The `EXPLAIN QUERY PLAN` rows: `id`, `parent`, `notused`, `detail`.
    let rows: [Row]

    /// One line per step, indented under its parent.
    var lines: [String] {
        let steps = rows.compactMap { row -> (id: Int64, parent: Int64, detail: String)? in
            guard case .integer(let id) = row[0], case .integer(let parent) = row[1],
                let detail = String.fromDatabaseValue(row[row.count - 1])
            else { return nil }
            return (id, parent, CellText.sanitized(detail))
        }
        var lines: [String] = []
        func draw(parent: Int64, prefix: String) {
            let children = steps.filter { $0.parent == parent && $0.id != parent }
            for (index, child) in children.enumerated() {
                let isLast = index == children.count - 1
                lines.append(prefix + (isLast ? "└─ " : "├─ ") + child.detail)
                draw(parent: child.id, prefix: prefix + (isLast ? "   " : "│  "))
            }
        }
        draw(parent: 0, prefix: "")
        return lines.isEmpty ? ["(no plan)"] : lines
    }
}
