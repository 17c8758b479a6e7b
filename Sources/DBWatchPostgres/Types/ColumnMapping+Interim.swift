import DBWatch

// INTERIM: replaced by the decoding helper's implementation at merge.
extension ColumnMapping {
    init?(typeOID: UInt32) {
        switch typeOID {
        case 20, 21, 23: self.init(kind: .integer, typeOID: typeOID)
        case 25, 1043: self.init(kind: .text, typeOID: typeOID)
        case 16: self.init(kind: .boolean, typeOID: typeOID)
        default: return nil
        }
    }

    static func enumeration(typeOID: UInt32) -> ColumnMapping { ColumnMapping(kind: .text, typeOID: typeOID) }

    var declaredType: String {
        switch kind {
        case .integer, .boolean: "INTEGER"
        default: "TEXT"
        }
    }

    func databaseValue(fromText bytes: [UInt8]) throws(ValueConversionError) -> DatabaseValue {
        let text = String(decoding: bytes, as: UTF8.self)
        switch kind {
        case .integer:
            guard let value = Int64(text) else { throw ValueConversionError(text: text, reason: "not an integer") }
            return .integer(value)
        case .boolean: return .integer(text == "t" ? 1 : 0)
        default: return .text(text)
        }
    }
}

extension PgOutputMessage {
    init(parsing bytes: [UInt8]) throws(PgOutputParseError) {
        var reader = Reader(bytes: bytes)
        let tag = try reader.byte()
        switch tag {
        case UInt8(ascii: "B"):
            self = .begin(
                Begin(
                    finalPosition: LogSequenceNumber(rawValue: try reader.uint64()),
                    commitTime: Int64(bitPattern: try reader.uint64()),
                    transactionID: try reader.uint32()))
        case UInt8(ascii: "C"):
            _ = try reader.byte()
            self = .commit(
                Commit(
                    commitPosition: LogSequenceNumber(rawValue: try reader.uint64()),
                    endPosition: LogSequenceNumber(rawValue: try reader.uint64()),
                    commitTime: Int64(bitPattern: try reader.uint64())))
        case UInt8(ascii: "R"):
            let id = try reader.uint32()
            let namespace = try reader.string()
            let name = try reader.string()
            let identity = try reader.byte()
            let count = Int(try reader.uint16())
            var columns: [Relation.Column] = []
            for _ in 0..<count {
                let flags = try reader.byte()
                let columnName = try reader.string()
                let type = try reader.uint32()
                let modifier = Int32(bitPattern: try reader.uint32())
                columns.append(.init(isKey: flags & 1 != 0, name: columnName, typeOID: type, typeModifier: modifier))
            }
            self = .relation(
                Relation(id: id, namespace: namespace, name: name, replicaIdentity: identity, columns: columns))
        case UInt8(ascii: "I"):
            let id = try reader.uint32()
            _ = try reader.byte()
            self = .insert(relation: id, newRow: try reader.tuple())
        case UInt8(ascii: "U"):
            let id = try reader.uint32()
            var kind = try reader.byte()
            var old: TupleData? = nil
            if kind != UInt8(ascii: "N") {
                old = try reader.tuple()
                kind = try reader.byte()
            }
            self = .update(relation: id, oldKey: old, newRow: try reader.tuple())
        case UInt8(ascii: "D"):
            let id = try reader.uint32()
            _ = try reader.byte()
            self = .delete(relation: id, oldKey: try reader.tuple())
        case UInt8(ascii: "T"):
            let count = Int(try reader.uint32())
            let options = try reader.byte()
            var ids: [UInt32] = []
            for _ in 0..<count { ids.append(try reader.uint32()) }
            self = .truncate(relations: ids, cascade: options & 1 != 0, restartIdentity: options & 2 != 0)
        default:
            self = .ignored(tag: tag)
        }
    }

    private struct Reader {
        var bytes: [UInt8]
        var offset = 0
        mutating func byte() throws(PgOutputParseError) -> UInt8 {
            guard offset < bytes.count else { throw PgOutputParseError(message: "truncated", offset: offset) }
            defer { offset += 1 }
            return bytes[offset]
        }
        mutating func uint16() throws(PgOutputParseError) -> UInt16 {
            UInt16(try byte()) << 8 | UInt16(try byte())
        }
        mutating func uint32() throws(PgOutputParseError) -> UInt32 {
            UInt32(try uint16()) << 16 | UInt32(try uint16())
        }
        mutating func uint64() throws(PgOutputParseError) -> UInt64 {
            UInt64(try uint32()) << 32 | UInt64(try uint32())
        }
        mutating func string() throws(PgOutputParseError) -> String {
            guard let end = bytes[offset...].firstIndex(of: 0) else {
                throw PgOutputParseError(message: "unterminated", offset: offset)
            }
            defer { offset = end + 1 }
            return String(decoding: bytes[offset..<end], as: UTF8.self)
        }
        mutating func tuple() throws(PgOutputParseError) -> TupleData {
            let count = Int(try uint16())
            var values: [TupleValue] = []
            for _ in 0..<count {
                switch try byte() {
                case UInt8(ascii: "n"): values.append(.null)
                case UInt8(ascii: "u"): values.append(.unchangedToast)
                case UInt8(ascii: "t"):
                    let length = Int(try uint32())
                    guard offset + length <= bytes.count else {
                        throw PgOutputParseError(message: "truncated", offset: offset)
                    }
                    values.append(.text(Array(bytes[offset..<offset + length])))
                    offset += length
                default: throw PgOutputParseError(message: "value kind", offset: offset)
                }
            }
            return TupleData(values: values)
        }
    }
}
