import ArgumentParser
import DBWatch
import DBWatchHummingbird

/// One `--param QUERY.NAME=TYPE[:RANGE]` of `serve`: the type and range the
/// query's author allows for one parameter. A value from a URL outside it is
/// a 400 that names the parameter.
///
/// - `integer`, `integer:1...100`, `integer:0...`, `integer:...100`: a
///   64-bit integer, within the range (both ends included).
/// - `real`, `real:0...1`, `real:-90...90`: a number (an integer is taken as
///   a `REAL`), within the range.
/// - `text`, `text:64`: the value as text, as it is (no quotes removed,
///   `NULL` is the text `NULL`), at most 64 characters.
///
/// ```swift
/// let bound = try ParameterBound.parse("top.n=integer:1...100")
/// try bound.value(from: "10")   // .integer(10)
/// try bound.value(from: "-1")   // throws LiveQueriesError.badRequest("parameter n: …")
/// ```
struct ParameterBound: Sendable, Hashable {
    /// A parameter's type and range.
    enum Kind: Sendable, Hashable {
        /// An integer within `min...max`.
        case integer(min: Int64, max: Int64)
        /// A finite number within `min...max`.
        case real(min: Double, max: Double)
        /// Text of at most `maxLength` characters.
        case text(maxLength: Int?)
    }

    /// The query's name, as in `--query NAME=SQL`.
    let query: String
    /// The parameter's name, without its prefix (`n` for `:n`).
    let parameter: String
    /// Its type and range.
    let kind: Kind

    /// Parses `--param`'s value.
    static func parse(_ argument: String) throws -> ParameterBound {
        let shown = CellText.sanitized(argument)
        guard let equals = argument.firstIndex(of: "="), let dot = argument[..<equals].firstIndex(of: ".") else {
            throw ValidationError(
                "--param \(shown): write it QUERY.NAME=TYPE[:RANGE], for example top.n=integer:1...100.")
        }
        let query = String(argument[..<dot])
        let parameter = String(argument[argument.index(after: dot)..<equals])
        guard !query.isEmpty, !parameter.isEmpty else {
            throw ValidationError("--param \(shown): the query's name and the parameter's are both needed (top.n).")
        }
        let spec = argument[argument.index(after: equals)...]
        let type = spec.prefix { $0 != ":" }
        let range = spec.dropFirst(type.count + 1)
        let hasRange = type.count < spec.count
        let kind: Kind
        switch type.lowercased() {
        case "integer", "int":
            let (low, high) = try Self.ends(range, hasRange: hasRange, argument: shown) { Int64($0) }
            kind = .integer(min: low ?? .min, max: high ?? .max)
        case "real", "float", "double":
            let (low, high) = try Self.ends(range, hasRange: hasRange, argument: shown) { text in
                Double(text).flatMap { $0.isFinite ? $0 : nil }
            }
            kind = .real(min: low ?? -.greatestFiniteMagnitude, max: high ?? .greatestFiniteMagnitude)
        case "text":
            if !hasRange {
                kind = .text(maxLength: nil)
            } else {
                let digits = range.hasPrefix("...") ? range.dropFirst(3) : range
                guard let length = Int(digits), length >= 0 else {
                    throw ValidationError("--param \(shown): a text's bound is its maximum length: text:64.")
                }
                kind = .text(maxLength: length)
            }
        default:
            throw ValidationError(
                "--param \(shown): the type is integer, real or text (integer:1...100, real:0...1, text:64).")
        }
        if case .integer(let low, let high) = kind, low > high {
            throw ValidationError("--param \(shown): the range is empty (its lower end is above its upper end).")
        }
        if case .real(let low, let high) = kind, low > high {
            throw ValidationError("--param \(shown): the range is empty (its lower end is above its upper end).")
        }
        return ParameterBound(query: query, parameter: parameter, kind: kind)
    }

    /// The two ends of `LOW...HIGH`, `LOW...` or `...HIGH`.
    private static func ends<T>(
        _ range: Substring, hasRange: Bool, argument: String, as parse: (String) -> T?
    ) throws -> (T?, T?) {
        guard hasRange else { return (nil, nil) }
        guard let dots = range.range(of: "...") else {
            throw ValidationError("--param \(argument): write the range LOW...HIGH, LOW... or ...HIGH.")
        }
        let lowText = String(range[..<dots.lowerBound])
        let highText = String(range[dots.upperBound...])
        let low = lowText.isEmpty ? nil : parse(lowText)
        let high = highText.isEmpty ? nil : parse(highText)
        guard lowText.isEmpty || low != nil, highText.isEmpty || high != nil, !(lowText.isEmpty && highText.isEmpty)
        else {
            throw ValidationError("--param \(argument): the range's ends are not numbers of its type.")
        }
        return (low, high)
    }

    /// The value to bind for `text`, the parameter's value in a URL, or a
    /// ``LiveQueriesError/badRequest(_:)`` that names the parameter.
    func value(from text: String) throws -> DatabaseValue {
        switch kind {
        case .integer(let low, let high):
            guard let value = Int64(text) else {
                throw LiveQueriesError.badRequest("parameter \(parameter) must be an integer\(rangeText)")
            }
            guard value >= low, value <= high else {
                throw LiveQueriesError.badRequest(
                    "parameter \(parameter) is out of range: it must be \(rangeText.dropFirst(2))")
            }
            return .integer(value)
        case .real(let low, let high):
            guard SQLArgument.isDecimal(text), let value = Double(text), value.isFinite else {
                throw LiveQueriesError.badRequest("parameter \(parameter) must be a number\(rangeText)")
            }
            guard value >= low, value <= high else {
                throw LiveQueriesError.badRequest(
                    "parameter \(parameter) is out of range: it must be \(rangeText.dropFirst(2))")
            }
            return .real(value)
        case .text(let maxLength):
            if let maxLength, text.count > maxLength {
                throw LiveQueriesError.badRequest(
                    "parameter \(parameter) is too long: at most \(maxLength) characters")
            }
            return .text(text)
        }
    }

    /// A value inside the bound, for the run at start.
    var sampleValue: DatabaseValue {
        switch kind {
        case .integer(let low, let high): .integer(Swift.min(Swift.max(0, low), high))
        case .real(let low, let high): .real(Swift.min(Swift.max(0, low), high))
        case .text: .text("")
        }
    }

    /// `, between 1 and 100`, `, at least 0`, or nothing.
    private var rangeText: String {
        switch kind {
        case .integer(let low, let high):
            Self.rangeText(low == .min ? nil : "\(low)", high == .max ? nil : "\(high)")
        case .real(let low, let high):
            Self.rangeText(
                low == -.greatestFiniteMagnitude ? nil : "\(low)", high == .greatestFiniteMagnitude ? nil : "\(high)")
        case .text: ""
        }
    }

    private static func rangeText(_ low: String?, _ high: String?) -> String {
        switch (low, high) {
        case (let low?, let high?): ", between \(low) and \(high)"
        case (let low?, nil): ", at least \(low)"
        case (nil, let high?): ", at most \(high)"
        case (nil, nil): ""
        }
    }

    /// The bound as `--param` writes it after the `=`: `integer:1...100`.
    var description: String {
        switch kind {
        case .integer(let low, let high):
            "integer" + Self.rangeSuffix(low == .min ? nil : "\(low)", high == .max ? nil : "\(high)")
        case .real(let low, let high):
            "real"
                + Self.rangeSuffix(
                    low == -.greatestFiniteMagnitude ? nil : "\(low)",
                    high == .greatestFiniteMagnitude ? nil : "\(high)")
        case .text(let maxLength): "text" + (maxLength.map { ":\($0)" } ?? "")
        }
    }

    private static func rangeSuffix(_ low: String?, _ high: String?) -> String {
        low == nil && high == nil ? "" : ":\(low ?? "")...\(high ?? "")"
    }

    /// The help text of `--param`.
    static let help = ArgumentHelp(
        "The type and range of a query's parameter, QUERY.NAME=TYPE[:RANGE] (repeat for each).",
        discussion: """
            TYPE is integer, real or text: integer:1...100, integer:0..., real:-90...90, text:64 (at most \
            64 characters). A value outside is a 400 naming the parameter.
            """,
        valueName: "query.name=type")
}
