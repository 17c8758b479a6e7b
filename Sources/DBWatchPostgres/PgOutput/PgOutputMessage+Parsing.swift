extension PgOutputMessage {
    /// Reads one message of `pgoutput` protocol version 1, as one
    /// `XLogData` message of the replication stream carries it.
    ///
    /// - Throws: ``PgOutputParseError``, with the offset of the faulty
    ///   field, for a truncated message, bytes after its end, an unknown
    ///   tag, a negative count or length, or a value sent in binary (`b`,
    ///   which the replica never requests).
    init(parsing bytes: [UInt8]) throws(PgOutputParseError) {
        var reader = PgOutputReader(bytes)
        let tag = try reader.readByte("message tag")
        switch tag {
        case UInt8(ascii: "B"):
            self = .begin(
                Begin(
                    finalPosition: try reader.readPosition("final LSN"),
                    commitTime: try reader.readInt64("commit time"),
                    transactionID: try reader.readUInt32("transaction id")))
        case UInt8(ascii: "C"):
            _ = try reader.readByte("commit flags")
            self = .commit(
                Commit(
                    commitPosition: try reader.readPosition("commit LSN"),
                    endPosition: try reader.readPosition("end LSN"),
                    commitTime: try reader.readInt64("commit time")))
        case UInt8(ascii: "R"):
            self = .relation(try Relation(reading: &reader))
        case UInt8(ascii: "I"):
            let relation = try reader.readUInt32("relation oid")
            try reader.expect(UInt8(ascii: "N"), "new tuple marker N")
            self = .insert(relation: relation, newRow: try TupleData(reading: &reader))
        case UInt8(ascii: "U"):
            let relation = try reader.readUInt32("relation oid")
            var oldKey: TupleData?
            let markerOffset = reader.offset
            switch try reader.readByte("tuple marker") {
            case UInt8(ascii: "K"), UInt8(ascii: "O"):
                oldKey = try TupleData(reading: &reader)
                try reader.expect(UInt8(ascii: "N"), "new tuple marker N")
            case UInt8(ascii: "N"):
                break
            case let marker:
                throw PgOutputParseError(
                    message: "unknown tuple marker \(PgOutputReader.describe(marker)), expected K, O or N",
                    offset: markerOffset)
            }
            self = .update(relation: relation, oldKey: oldKey, newRow: try TupleData(reading: &reader))
        case UInt8(ascii: "D"):
            let relation = try reader.readUInt32("relation oid")
            let markerOffset = reader.offset
            let marker = try reader.readByte("tuple marker")
            guard marker == UInt8(ascii: "K") || marker == UInt8(ascii: "O") else {
                throw PgOutputParseError(
                    message: "unknown tuple marker \(PgOutputReader.describe(marker)), expected K or O",
                    offset: markerOffset)
            }
            self = .delete(relation: relation, oldKey: try TupleData(reading: &reader))
        case UInt8(ascii: "T"):
            let countOffset = reader.offset
            let count = try reader.readInt32("relation count")
            guard count >= 0 else {
                throw PgOutputParseError(message: "negative relation count \(count)", offset: countOffset)
            }
            let options = try reader.readByte("truncate options")
            // Checked before reserving: a corrupt count must not allocate.
            guard Int(count) * 4 <= reader.remaining else {
                throw PgOutputParseError(
                    message: "truncated: \(count) relation oids need \(Int(count) * 4) bytes, \(reader.remaining) left",
                    offset: reader.offset)
            }
            var relations: [UInt32] = []
            relations.reserveCapacity(Int(count))
            for _ in 0..<count {
                relations.append(try reader.readUInt32("relation oid"))
            }
            self = .truncate(relations: relations, cascade: options & 1 != 0, restartIdentity: options & 2 != 0)
        case UInt8(ascii: "Y"), UInt8(ascii: "O"), UInt8(ascii: "M"):
            // Not read further: the replica needs none of them.
            self = .ignored(tag: tag)
            return
        default:
            throw PgOutputParseError(message: "unknown message tag \(PgOutputReader.describe(tag))", offset: 0)
        }
        try reader.requireEnd()
    }
}

extension PgOutputMessage.Relation {
    /// Reads the body of an `R` message.
    fileprivate init(reading reader: inout PgOutputReader) throws(PgOutputParseError) {
        id = try reader.readUInt32("relation oid")
        let namespace = try reader.readString("namespace")
        // pgoutput sends an empty namespace for pg_catalog.
        self.namespace = namespace.isEmpty ? "pg_catalog" : namespace
        name = try reader.readString("relation name")
        replicaIdentity = try reader.readByte("replica identity")
        let countOffset = reader.offset
        let count = try reader.readInt16("column count")
        guard count >= 0 else {
            throw PgOutputParseError(message: "negative column count \(count)", offset: countOffset)
        }
        columns = []
        // A column takes at least 10 bytes: a corrupt count must not allocate.
        columns.reserveCapacity(min(Int(count), reader.remaining / 10))
        for _ in 0..<count {
            let flags = try reader.readByte("column flags")
            columns.append(
                Column(
                    isKey: flags & 1 != 0,
                    name: try reader.readString("column name"),
                    typeOID: try reader.readUInt32("column type oid"),
                    typeModifier: try reader.readInt32("column type modifier")))
        }
    }
}

extension PgOutputMessage.TupleData {
    /// Reads a `TupleData`: a column count, then each value.
    fileprivate init(reading reader: inout PgOutputReader) throws(PgOutputParseError) {
        let countOffset = reader.offset
        let count = try reader.readInt16("tuple column count")
        guard count >= 0 else {
            throw PgOutputParseError(message: "negative tuple column count \(count)", offset: countOffset)
        }
        values = []
        // A value takes at least 1 byte: a corrupt count must not allocate.
        values.reserveCapacity(min(Int(count), reader.remaining))
        for _ in 0..<count {
            let kindOffset = reader.offset
            switch try reader.readByte("tuple value kind") {
            case UInt8(ascii: "n"):
                values.append(.null)
            case UInt8(ascii: "u"):
                values.append(.unchangedToast)
            case UInt8(ascii: "t"):
                let lengthOffset = reader.offset
                let length = try reader.readInt32("value length")
                guard length >= 0 else {
                    throw PgOutputParseError(message: "negative value length \(length)", offset: lengthOffset)
                }
                values.append(.text(try reader.readBytes(Int(length), "value")))
            case UInt8(ascii: "b"):
                throw PgOutputParseError(
                    message: "binary value (b), which the replica does not request", offset: kindOffset)
            case let kind:
                throw PgOutputParseError(
                    message: "unknown tuple value kind \(PgOutputReader.describe(kind))", offset: kindOffset)
            }
        }
    }
}

extension PgOutputReader {
    /// Reads one byte and throws unless it is `expected`.
    fileprivate mutating func expect(_ expected: UInt8, _ field: String) throws(PgOutputParseError) {
        let start = offset
        let byte = try readByte(field)
        guard byte == expected else {
            throw PgOutputParseError(
                message: "expected \(field), found \(PgOutputReader.describe(byte))", offset: start)
        }
    }

    /// A byte for an error message: `'N'` when printable, `0x00` otherwise.
    static func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "0x" + String(byte, radix: 16)
    }
}
