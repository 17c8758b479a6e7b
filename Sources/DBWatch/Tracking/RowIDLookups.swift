import CSQLite

/// The rows a statement reads by rowid, found in its bytecode: a program
/// with no loop that reaches a rowid table only through `SeekRowid` or
/// `NotExists`, on a register set once by a bound parameter or a constant
/// (`SELECT * FROM player WHERE id = ?`). For such a table, a commit that
/// changes other rows cannot change the result.
///
/// Anything else (scans, index lookups, `IN` lists, joins on columns,
/// subroutines) leaves the table without row precision: the analysis only
/// ever errs towards refetching.
struct RowIDLookups {
    enum Source: Equatable {
        case parameter(Int32)
        case constant(Int64)
    }

    /// The tables read only by rowid, and where each looked-up rowid comes from.
    var lookups: [TableName: [Source]] = [:]

    var isEmpty: Bool { lookups.isEmpty }

    /// Opcodes that make a program loop or read rows other than by rowid.
    private static let disqualifying: Set<String> = [
        "Next", "Prev", "Rewind", "Last", "SeekGE", "SeekGT", "SeekLE", "SeekLT", "SeekEnd", "SeekScan",
        "SorterSort", "SorterNext", "Sort", "VFilter", "VNext", "OpenEphemeral", "OpenAutoindex", "OpenPseudo",
        "IdxGE", "IdxGT", "IdxLE", "IdxLT", "Found", "NotFound", "NoConflict", "DeferredSeek", "IdxRowid",
        "InitCoroutine", "Yield", "Gosub", "BeginSubrtn", "Return", "Once", "OpenDup", "RowSetRead", "Program",
    ]

    /// Opcodes allowed on a table cursor read by rowid.
    private static let allowedOnCursor: Set<String> = [
        "OpenRead", "Column", "Rowid", "Close", "NullRow", "SeekRowid", "NotExists", "ColumnsUsed", "Offset",
        "CursorHint",
    ]

    /// Opcodes whose P1 is a cursor (the others use P1 for something else).
    private static let cursorOpcodes: Set<String> = allowedOnCursor.union([
        "Count", "RowData", "Delete", "Insert", "Sequence", "SequenceTest", "IfNullRow", "FinishSeek", "RowCell",
        "IdxRowid", "DeferredSeek", "SeekHit", "IfNoHope", "IfNotOpen", "OpenWrite", "ReopenIdx", "CursorLock",
        "CursorUnlock", "IdxInsert", "IdxDelete", "ResetSorter", "SorterData", "SorterInsert", "Column",
    ])

    fileprivate struct Instruction {
        let opcode: String
        let p1: Int64
        let p2: Int64
        let p3: Int64
        let p4: String?
    }

    /// Analyses `sql` on `db`. Returns no lookups when anything is unclear.
    static func analyse(sql: String, in db: Database) -> RowIDLookups {
        guard let program = try? db.explainProgram(sql), !program.isEmpty else { return RowIDLookups() }
        if program.contains(where: { disqualifying.contains($0.opcode) }) { return RowIDLookups() }
        let opens = program.filter { $0.opcode == "OpenRead" }
        // Only the main schema: its root pages map to table names.
        guard !opens.isEmpty, opens.allSatisfy({ $0.p3 == 0 }) else { return RowIDLookups() }
        guard let tablesByRootPage = try? db.mainTablesByRootPage() else { return RowIDLookups() }
        var result = RowIDLookups()
        for open in opens {
            guard let table = tablesByRootPage[open.p2] else { return RowIDLookups() }  // an index: no precision
            let cursor = open.p1
            let uses = program.filter { $0.p1 == cursor && cursorOpcodes.contains($0.opcode) }
            guard uses.allSatisfy({ allowedOnCursor.contains($0.opcode) }) else { continue }
            let seeks = uses.filter { $0.opcode == "SeekRowid" || $0.opcode == "NotExists" }
            guard !seeks.isEmpty else { continue }
            var sources: [Source] = []
            for seek in seeks {
                guard let source = source(ofRegister: seek.p3, in: program) else { sources = []; break }
                sources.append(source)
            }
            if !sources.isEmpty { result.lookups[TableName(table), default: []].append(contentsOf: sources) }
        }
        return result
    }

    /// The registers an instruction writes: `[]` for none, `nil` when the
    /// opcode is not one this analysis knows (the analysis then gives up).
    private static func writtenRegisters(_ instruction: Instruction) -> ClosedRange<Int64>?? {
        let p1 = instruction.p1
        let p2 = instruction.p2
        let p3 = instruction.p3
        switch instruction.opcode {
        case "Init", "Goto", "Halt", "Transaction", "OpenRead", "SeekRowid", "NotExists", "ResultRow", "Close",
            "NullRow", "ColumnsUsed", "Explain", "Noop", "CursorHint", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "IsNull",
            "NotNull", "If", "IfNot", "MustBeInt", "Affinity", "TableLock", "ReleaseReg", "HaltIfNull", "Trace":
            return .some(nil)
        case "Integer", "Int64", "Real", "String8", "String", "Variable", "Rowid", "SCopy", "IntCopy", "Blob",
            "SoftNull", "Not", "BitNot":
            return .some(p2...p2)
        case "Null":
            return .some(p2...max(p2, p3))
        case "Copy":
            return .some(p2...(p2 + max(0, p3)))
        case "Column", "Function", "PureFunc", "Add", "Subtract", "Multiply", "Divide", "Remainder", "Concat",
            "BitAnd", "BitOr", "ShiftLeft", "ShiftRight", "And", "Or", "MakeRecord", "AggStep", "AggValue":
            return .some(p3...p3)
        case "AggFinal", "Cast", "RealAffinity":
            return .some(p1...p1)
        default:
            return nil
        }
    }

    /// The single writer of `register`, when it is a parameter or a constant.
    private static func source(ofRegister register: Int64, in program: [Instruction]) -> Source? {
        var found: Source?
        for instruction in program {
            guard let written = writtenRegisters(instruction) else { return nil }
            guard let written, written.contains(register) else { continue }
            if found != nil { return nil }
            switch instruction.opcode {
            case "Variable": found = .parameter(Int32(instruction.p1))
            case "Integer": found = .constant(instruction.p1)
            case "Int64":
                guard let value = instruction.p4.flatMap({ Int64($0) }) else { return nil }
                found = .constant(value)
            default:
                return nil
            }
        }
        return found
    }

    /// The rowids looked up for the current bindings of `statement`, by table.
    /// A binding that is not an integer leaves its table without precision.
    func rowIDs(boundIn statement: Statement) -> [TableName: Set<Int64>] {
        var result: [TableName: Set<Int64>] = [:]
        for (table, sources) in lookups {
            var rowIDs: Set<Int64> = []
            var known = true
            for source in sources {
                switch source {
                case .constant(let value):
                    rowIDs.insert(value)
                case .parameter(let index):
                    guard let value = statement.boundValue(at: index), let rowID = value.exactRowID else {
                        known = false
                        break
                    }
                    rowIDs.insert(rowID)
                }
            }
            if known { result[table] = rowIDs }
        }
        return result
    }
}

extension DatabaseValue {
    /// The rowid SQLite's `MustBeInt` makes of this value, if exact.
    var exactRowID: Int64? {
        switch self {
        case .integer(let value): return value
        case .real(let value): return Int64(exactly: value)
        case .text(let text): return Int64(text.trimmingCharacters(in: .whitespaces))
        default: return nil
        }
    }
}

extension Database {
    /// The bytecode of `sql`, from `EXPLAIN`, without caching it or
    /// recording what it reads.
    fileprivate func explainProgram(_ sql: String) throws -> [RowIDLookups.Instruction] {
        let handle = try openHandle()
        return try withoutRecordingReads {
            let (statement, _) = try ("EXPLAIN " + sql).withCString {
                try prepare($0, sql: nil, handle: handle, persistent: false)
            }
            guard let statement else { return [] }
            var program: [RowIDLookups.Instruction] = []
            while try step(statement) {
                let h = statement.handle
                program.append(
                    RowIDLookups.Instruction(
                        opcode: String(textOf: sqlite3_column_value(h, 1)),
                        p1: sqlite3_column_int64(h, 2), p2: sqlite3_column_int64(h, 3), p3: sqlite3_column_int64(h, 4),
                        p4: sqlite3_column_type(h, 5) == SQLITE_NULL ? nil : String(textOf: sqlite3_column_value(h, 5))
                    ))
            }
            return program
        }
    }

    /// Root page to table name, for the `main` schema.
    fileprivate func mainTablesByRootPage() throws -> [Int64: String] {
        try withoutRecordingReads {
            var tables: [Int64: String] = [:]
            let cursor = try fetchCursor(sql: "SELECT rootpage, name FROM main.sqlite_schema WHERE type = 'table'")
            while let row = try cursor.next() {
                // A name that is not valid UTF-8 is repaired, as the authorizer's are.
                if case .integer(let page) = row[0], let name = String.fromDatabaseValue(row[1]) { tables[page] = name }
            }
            return tables
        }
    }
}
