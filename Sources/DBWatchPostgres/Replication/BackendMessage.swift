/// One message from PostgreSQL on a replication connection, among those
/// the replica needs (PostgreSQL's "Message Formats"); the others are
/// ``other(type:)``.
///
/// Reading a message never traps: a body too short for its fields, or a
/// field that makes no sense, throws ``PgOutputParseError``.
enum BackendMessage: Sendable, Equatable {
    /// `R`: an authentication request, or its outcome.
    case authentication(Authentication)
    /// `S`: a run-time parameter's value.
    case parameterStatus(name: String, value: String)
    /// `K`: the key to cancel queries (not used).
    case backendKeyData
    /// `Z`: ready for a new query.
    case readyForQuery
    /// `E`: an error; `FATAL` and `PANIC` ones end the connection.
    case error(PostgresServerError)
    /// `N`: a notice (a warning PostgreSQL sends along).
    case notice(PostgresServerError)
    /// `T`: the columns of a query's rows, by name.
    case rowDescription(columns: [String])
    /// `D`: one row of text values.
    case dataRow([[UInt8]?])
    /// `C`: a command finished.
    case commandComplete(tag: String)
    /// `I`: the query was empty.
    case emptyQueryResponse
    /// `W`: the start of the copy in both directions (`START_REPLICATION`).
    case copyBothResponse
    /// `d`: data of the copy.
    case copyData([UInt8])
    /// `c`: the end of the copy.
    case copyDone
    /// A message the replica does not need, by its type byte.
    case other(type: UInt8)

    /// An authentication message's request.
    enum Authentication: Sendable, Equatable {
        /// Authenticated.
        case ok
        /// A clear-text password.
        case cleartextPassword
        /// An MD5 hash of the password with this salt.
        case md5Password(salt: [UInt8])
        /// SASL, with the mechanisms the server offers.
        case sasl(mechanisms: [String])
        /// A SASL challenge.
        case saslContinue([UInt8])
        /// The SASL outcome's data.
        case saslFinal([UInt8])
        /// A method the replica does not speak (Kerberos, GSSAPI, SSPI), by
        /// its code.
        case unsupported(Int32)
    }

    /// The message of `type` whose body (after the length) is `body`.
    init(type: UInt8, body: [UInt8]) throws(PgOutputParseError) {
        var reader = PgOutputReader(body)
        switch type {
        case UInt8(ascii: "R"):
            let code = try reader.readInt32("authentication code")
            switch code {
            case 0: self = .authentication(.ok)
            case 3: self = .authentication(.cleartextPassword)
            case 5: self = .authentication(.md5Password(salt: try reader.readBytes(4, "MD5 salt")))
            case 10:
                var mechanisms: [String] = []
                while reader.remaining > 1 { mechanisms.append(try reader.readString("SASL mechanism")) }
                self = .authentication(.sasl(mechanisms: mechanisms))
            case 11: self = .authentication(.saslContinue(try reader.readBytes(reader.remaining, "SASL data")))
            case 12: self = .authentication(.saslFinal(try reader.readBytes(reader.remaining, "SASL data")))
            default: self = .authentication(.unsupported(code))
            }
        case UInt8(ascii: "S"):
            self = .parameterStatus(name: try reader.readString("parameter"), value: try reader.readString("value"))
        case UInt8(ascii: "K"): self = .backendKeyData
        case UInt8(ascii: "Z"): self = .readyForQuery
        case UInt8(ascii: "E"): self = .error(try PostgresServerError(fields: &reader))
        case UInt8(ascii: "N"): self = .notice(try PostgresServerError(fields: &reader))
        case UInt8(ascii: "T"):
            let count = try reader.readInt16("column count")
            guard count >= 0 else { throw PgOutputParseError(message: "negative column count", offset: 0) }
            var columns: [String] = []
            for _ in 0..<count {
                columns.append(try reader.readString("column name"))
                // Table OID, attribute number, type OID, size, modifier, format.
                _ = try reader.readBytes(18, "column description")
            }
            self = .rowDescription(columns: columns)
        case UInt8(ascii: "D"):
            let count = try reader.readInt16("value count")
            guard count >= 0 else { throw PgOutputParseError(message: "negative value count", offset: 0) }
            var values: [[UInt8]?] = []
            for _ in 0..<count {
                let length = try reader.readInt32("value length")
                values.append(length < 0 ? nil : try reader.readBytes(Int(length), "value"))
            }
            self = .dataRow(values)
        case UInt8(ascii: "C"): self = .commandComplete(tag: try reader.readString("command tag"))
        case UInt8(ascii: "I"): self = .emptyQueryResponse
        case UInt8(ascii: "W"): self = .copyBothResponse
        case UInt8(ascii: "d"): self = .copyData(body)
        case UInt8(ascii: "c"): self = .copyDone
        default: self = .other(type: type)
        }
    }
}

/// An `ErrorResponse` or `NoticeResponse` of PostgreSQL: its severity,
/// SQLSTATE, message and detail.
struct PostgresServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `ERROR`, `FATAL`, `PANIC`, `WARNING`, … (not localized).
    var severity: String
    /// The SQLSTATE code, such as `57P01`.
    var sqlState: String
    /// The primary message.
    var message: String
    /// The detail, if any.
    var detail: String?

    /// Whether PostgreSQL ends the connection after it.
    var isFatal: Bool { severity == "FATAL" || severity == "PANIC" }

    var description: String {
        "\(severity): \(message) (SQLSTATE \(sqlState))" + (detail.map { " \($0)" } ?? "")
    }

    /// Reads the fields of the message: a type byte and a string each, up
    /// to a zero byte.
    init(fields reader: inout PgOutputReader) throws(PgOutputParseError) {
        var fields: [UInt8: String] = [:]
        while true {
            let type = try reader.readByte("field type")
            if type == 0 { break }
            fields[type] = try reader.readString("field")
        }
        severity = fields[UInt8(ascii: "V")] ?? fields[UInt8(ascii: "S")] ?? "ERROR"
        sqlState = fields[UInt8(ascii: "C")] ?? "XX000"
        message = fields[UInt8(ascii: "M")] ?? "(no message)"
        detail = fields[UInt8(ascii: "D")]
    }

    /// An error of these fields.
    init(severity: String, sqlState: String, message: String, detail: String? = nil) {
        self.severity = severity
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
    }
}
