import DBWatch

/// Draws a ``QueryResult`` as an aligned table for people: columns fit the
/// width (cut with `…`), numbers are right-aligned, and with colour on the
/// cells that changed since the previous value are shown in reverse video,
/// like `watch -d`.
///
/// ```
///  id │ name    │ score
/// ────┼─────────┼──────
///   1 │ Arthur  │   120
///   2 │ Barbara │    80
/// (2 rows)
/// ```
struct TableRenderer: Sendable {
    /// The width to fit, in columns; `nil` for no limit.
    var width: Int?
    /// The most lines the table may take (header and footer included); `nil`
    /// for no limit. Rows that do not fit are counted in the footer.
    var maxLines: Int?
    /// Whether to use ANSI attributes.
    var usesColor: Bool

    /// Between two columns.
    static let separator = " │ "

    /// The lines of the table for `result`; cells that differ from
    /// `previous` are highlighted when colour is on.
    func lines(for result: QueryResult, previous: QueryResult? = nil) -> [String] {
        guard !result.columns.isEmpty else { return ["(no columns)"] }
        let cells = result.rows.map { $0.map(TableRenderer.text(for:)) }
        let natural = result.columns.indices.map { column in
            max(
                CellText.width(of: CellText.sanitized(result.columns[column])),
                cells.map { CellText.width(of: $0[column]) }.max() ?? 0)
        }
        let (widths, hiddenColumns) = fit(natural)
        let shown = widths.indices
        let rightAligned = shown.map { column in
            result.rows.contains { row in
                if case .integer = row[column] { return true }
                if case .real = row[column] { return true }
                return false
            }
                && result.rows.allSatisfy { row in
                    switch row[column] {
                    case .integer, .real, .null: return true
                    default: return false
                    }
                }
        }
        let highlighted = usesColor ? changedCells(result, previous: previous) : []

        var lines: [String] = []
        let header = shown.map { column in
            CellText.padded(
                CellText.truncated(CellText.sanitized(result.columns[column]), toWidth: widths[column]),
                toWidth: widths[column], alignRight: rightAligned[column])
        }
        lines.append(ANSI.style(header.joined(separator: TableRenderer.separator), .bold, enabled: usesColor))
        lines.append(shown.map { String(repeating: "─", count: widths[$0]) }.joined(separator: "─┼─"))

        let rowBudget = maxLines.map { max(1, $0 - 3) } ?? .max
        let visibleRows = result.rows.count <= rowBudget ? result.rows.count : max(0, rowBudget - 1)
        for rowIndex in 0..<visibleRows {
            let line = shown.map { column -> String in
                let text = CellText.padded(
                    CellText.truncated(cells[rowIndex][column], toWidth: widths[column]), toWidth: widths[column],
                    alignRight: rightAligned[column])
                if highlighted.contains(CellPosition(row: rowIndex, column: column)) {
                    return ANSI.style(text, .reverse, enabled: true)
                }
                if case .null = result.rows[rowIndex][column] { return ANSI.style(text, .dim, enabled: usesColor) }
                return text
            }
            lines.append(line.joined(separator: TableRenderer.separator))
        }
        var footer = result.rows.count == 1 ? "(1 row" : "(\(result.rows.count) rows"
        if visibleRows < result.rows.count { footer += ", \(result.rows.count - visibleRows) not shown" }
        if hiddenColumns > 0 { footer += ", \(hiddenColumns) more column\(hiddenColumns == 1 ? "" : "s") not shown" }
        lines.append(ANSI.style(footer + ")", .dim, enabled: usesColor))
        return lines
    }

    /// Column widths that fit ``width``: every column keeps its natural
    /// width up to a common cap, the largest cap that fits. When even one
    /// column each does not fit, trailing columns are dropped.
    func fit(_ natural: [Int]) -> (widths: [Int], hiddenColumns: Int) {
        guard let width else { return (natural, 0) }
        var natural = natural.map { max(1, $0) }
        var hidden = 0
        func available(_ count: Int) -> Int { width - TableRenderer.separator.count * (count - 1) }
        while natural.count > 1 && available(natural.count) < natural.count {
            natural.removeLast()
            hidden += 1
        }
        let budget = max(natural.count, available(natural.count))
        if natural.reduce(0, +) <= budget { return (natural, hidden) }
        var low = 1
        var high = natural.max() ?? 1
        while low < high {
            let cap = (low + high + 1) / 2
            if natural.reduce(0, { $0 + min($1, cap) }) <= budget { low = cap } else { high = cap - 1 }
        }
        var widths = natural.map { min($0, low) }
        var spare = budget - widths.reduce(0, +)
        for index in widths.indices where spare > 0 && widths[index] < natural[index] {
            widths[index] += 1
            spare -= 1
        }
        return (widths, hidden)
    }

    /// The cells of `result` that are new or differ from `previous`: matched
    /// by key when both have the same key columns, by position otherwise.
    func changedCells(_ result: QueryResult, previous: QueryResult?) -> Set<CellPosition> {
        guard let previous, previous.columns == result.columns else { return [] }
        var cells: Set<CellPosition> = []
        let previousByKey: [[DatabaseValue]: [DatabaseValue]]? = {
            guard let keys = result.keyColumns, previous.keyColumns == keys else { return nil }
            return Dictionary(previous.rows.map { row in (keys.map { row[$0] }, row) }, uniquingKeysWith: { $1 })
        }()
        for (rowIndex, row) in result.rows.enumerated() {
            let before: [DatabaseValue]?
            if let previousByKey, let key = result.key(of: row) {
                before = previousByKey[key]
            } else {
                before = rowIndex < previous.rows.count ? previous.rows[rowIndex] : nil
            }
            for column in row.indices where before == nil || before![column] != row[column] {
                cells.insert(CellPosition(row: rowIndex, column: column))
            }
        }
        return cells
    }

    /// A cell, by row and column.
    struct CellPosition: Hashable {
        var row: Int
        var column: Int
    }

    /// What a cell shows: `NULL`, the number, the text with control
    /// characters (and bytes that are not valid UTF-8) made visible, or a
    /// blob as `x'…'` hexadecimal.
    static func text(for value: DatabaseValue) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let integer): return String(integer)
        case .real(let real): return "\(real)"
        case .text(let text): return CellText.sanitized(text)
        case .invalidUTF8Text(let bytes): return CellText.sanitized(CellText.escapingInvalidUTF8(bytes))
        case .blob(let data):
            guard data.count > 32 else { return value.description }
            let prefix = DatabaseValue.blob(data.prefix(32)).description.dropLast()
            return prefix + "…' (\(data.count) bytes)"
        }
    }
}
