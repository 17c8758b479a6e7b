import CSQLite

/// Guards for the built-in SQL functions whose one call can run for
/// minutes on values within the length limit, out of reach of the time
/// limit (checked between steps of the virtual machine, not inside a call).
///
/// `instr`, `replace`, `trim`, `ltrim` and `rtrim` compare every position
/// of one argument with the other: their time grows with the product of
/// the sizes (`instr` of a 1 MB text and a 0.5 MB needle takes about 10 s,
/// `trim` of 200 kB by 100 kB more than 20 s). `printf` and `format` take
/// time in proportion to the precision asked (`printf('%.*c', 2000000000,
/// 'a')` runs 14 s even when the result is refused as too big).
///
/// The guards replace the built-ins on a connection the first time it runs
/// untrusted SQL, and stay. Under a policy they refuse, with
/// ``ResultCode/tooBig``, a call whose product of sizes exceeds
/// ``productLimit`` or a width or precision beyond the value length limit;
/// otherwise (and always outside a policy) they return what the built-in
/// returns, computed by the built-in itself on a private in-memory
/// connection: the same types, encodings and edge cases, for about a
/// microsecond more per call.
final class UntrustedSQLFunctions {
    /// The largest product of the sizes in bytes of the two arguments that
    /// are compared position by position: at most about 0.1 s for `trim`,
    /// the slowest, and milliseconds for `instr` and `replace`.
    static let productLimit = 10_000_000

    /// The guarded functions: name, number of arguments (-1: any), and
    /// the positions of the two arguments whose sizes multiply (nil for
    /// `printf` and `format`, checked by their widths).
    private static let guarded: [(name: String, arguments: Int32, compared: (Int32, Int32)?)] = [
        ("instr", 2, (0, 1)), ("replace", 3, (0, 1)), ("trim", 2, (0, 1)), ("ltrim", 2, (0, 1)),
        ("rtrim", 2, (0, 1)), ("printf", -1, nil), ("format", -1, nil),
    ]

    /// The private connection that runs the built-ins; closed in deinit.
    private let builtins: OpaquePointer
    /// Its prepared statements, by function (index << 16) and number of arguments.
    private var statements: [Int: OpaquePointer] = [:]
    /// The connection the guards are registered on (unowned: it owns this).
    private unowned let database: Database

    private init(database: Database, builtins: OpaquePointer) {
        self.database = database
        self.builtins = builtins
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(builtins)
    }

    /// Registers the guards on `handle`, the connection of `database`.
    ///
    /// - Throws: ``SQLiteError`` when SQLite refuses (``ResultCode/busy``
    ///   while a statement of the connection runs: replacing a function
    ///   needs none to run).
    static func install(on handle: OpaquePointer, for database: Database) throws -> UntrustedSQLFunctions {
        var builtins: OpaquePointer?
        let code = sqlite3_open_v2(":memory:", &builtins, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let builtins else {
            sqlite3_close_v2(builtins)
            throw SQLiteError(code: ResultCode(rawValue: code), message: "cannot open the connection for built-ins")
        }
        let functions = UntrustedSQLFunctions(database: database, builtins: builtins)
        for (index, function) in guarded.enumerated() {
            // Each registration holds a reference, released by SQLite with
            // the function (when the connection closes).
            let context = Unmanaged.passRetained(FunctionContext(functions: functions, index: index)).toOpaque()
            let code = sqlite3_create_function_v2(
                handle, function.name, function.arguments, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                context, guardedFunction, nil, nil, releaseFunctionContext)
            guard code == SQLITE_OK else {
                throw SQLiteError(
                    code: ResultCode(rawValue: code),
                    message: "cannot guard the function \(function.name)(): \(String(cString: sqlite3_errmsg(handle)))")
            }
        }
        return functions
    }

    /// Runs guarded function `index` for `context`.
    fileprivate func call(
        _ index: Int, _ context: OpaquePointer?, _ count: Int32, _ values: UnsafeMutablePointer<OpaquePointer?>?
    ) {
        let function = Self.guarded[index]
        let arguments = UnsafeBufferPointer(start: values, count: Int(count))
        if let policy = database.untrustedSQL.policy, let refusal = refusal(function, arguments, policy) {
            sqlite3_result_error(context, refusal, -1)
            sqlite3_result_error_code(context, SQLITE_TOOBIG)
            return
        }
        let key = index << 16 | Int(count)
        let statement: OpaquePointer
        if let cached = statements[key] {
            statement = cached
        } else {
            let sql = "SELECT \(function.name)(" + (0..<Int(count)).map { "?\($0 + 1)" }.joined(separator: ",") + ")"
            var prepared: OpaquePointer?
            guard sqlite3_prepare_v2(builtins, sql, -1, &prepared, nil) == SQLITE_OK, let prepared else {
                sqlite3_result_error(context, sqlite3_errmsg(builtins), -1)
                return
            }
            statements[key] = prepared
            statement = prepared
        }
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        // The built-in makes no value larger than the calling connection allows.
        if let handle = database.handle {
            sqlite3_limit(builtins, SQLITE_LIMIT_LENGTH, sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, -1))
        }
        for (position, argument) in arguments.enumerated() {
            sqlite3_bind_value(statement, Int32(position + 1), argument)
        }
        if sqlite3_step(statement) == SQLITE_ROW {
            sqlite3_result_value(context, sqlite3_column_value(statement, 0))
        } else {
            sqlite3_result_error(context, sqlite3_errmsg(builtins), -1)
            sqlite3_result_error_code(context, sqlite3_extended_errcode(builtins))
        }
    }

    /// Why a call under `policy` is refused, or nil.
    private func refusal(
        _ function: (name: String, arguments: Int32, compared: (Int32, Int32)?),
        _ arguments: UnsafeBufferPointer<OpaquePointer?>,
        _ policy: UntrustedSQLPolicy
    ) -> String? {
        if let (first, second) = function.compared {
            let product = Int(sqlite3_value_bytes(arguments[Int(first)]))
                .multipliedReportingOverflow(by: Int(sqlite3_value_bytes(arguments[Int(second)])))
            if product.overflow || product.partialValue > Self.productLimit {
                return "\(function.name)() refused: the sizes of its arguments multiply beyond "
                    + "\(Self.productLimit) bytes, which untrusted SQL may not compare"
            }
            return nil
        }
        // printf and format: a width or a precision, written in the format
        // or given by `*` as an argument, beyond the value length limit.
        let limit = Int64(database.handle.map { sqlite3_limit($0, SQLITE_LIMIT_LENGTH, -1) } ?? 0)
        guard let format = arguments.first, let text = sqlite3_value_text(format) else { return nil }
        let bytes = UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(format)))
        var next = 1
        var index = 0
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        /// Reads a number or a `*` at `index`; whether it is beyond the limit.
        func sizeIsBeyondLimit() -> Bool {
            if index < bytes.count && bytes[index] == UInt8(ascii: "*") {
                index += 1
                defer { next += 1 }
                guard next < arguments.count else { return false }
                return sqlite3_value_int64(arguments[next]).magnitude > limit.magnitude
            }
            var number: Int64 = 0
            while index < bytes.count && isDigit(bytes[index]) {
                number = min(number * 10 + Int64(bytes[index] - UInt8(ascii: "0")), Int64(Int32.max))
                index += 1
            }
            return number > limit
        }
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "%") else {
                index += 1
                continue
            }
            index += 1
            if index < bytes.count && bytes[index] == UInt8(ascii: "%") {
                index += 1
                continue
            }
            while index < bytes.count && "-+ 0#,!".utf8.contains(bytes[index]) { index += 1 }
            var beyond = sizeIsBeyondLimit()
            if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
                index += 1
                beyond = sizeIsBeyondLimit() || beyond
            }
            if beyond {
                return "\(function.name)() refused: a width or precision beyond the length limit of \(limit) bytes"
            }
            // The conversion consumes an argument (`%%` and `%n` aside, close enough).
            next += 1
        }
        return nil
    }
}

/// What a guard's registration holds: the guards and which function it is.
private final class FunctionContext {
    let functions: UntrustedSQLFunctions
    let index: Int

    init(functions: UntrustedSQLFunctions, index: Int) {
        self.functions = functions
        self.index = index
    }
}

private func guardedFunction(
    _ context: OpaquePointer?, _ count: Int32, _ values: UnsafeMutablePointer<OpaquePointer?>?
) {
    guard let pointer = sqlite3_user_data(context) else { return }
    let function = Unmanaged<FunctionContext>.fromOpaque(pointer).takeUnretainedValue()
    function.functions.call(function.index, context, count, values)
}

private func releaseFunctionContext(_ pointer: UnsafeMutableRawPointer?) {
    guard let pointer else { return }
    Unmanaged<FunctionContext>.fromOpaque(pointer).release()
}
