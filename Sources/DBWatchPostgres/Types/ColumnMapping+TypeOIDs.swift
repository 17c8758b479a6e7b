extension ColumnMapping {
    /// The mapping of a built-in type by its OID (`pg_type.oid`), or `nil`
    /// for a type the replica cannot store faithfully (money, interval,
    /// inet, point, xml, bit, tsvector, ranges, composite types, arrays of
    /// those, ...).
    ///
    /// ```swift
    /// ColumnMapping(typeOID: 23)?.kind     // .integer (int4)
    /// ColumnMapping(typeOID: 1007)?.kind   // .array(of: .integer) (int4[])
    /// ColumnMapping(typeOID: 790)          // nil (money)
    /// ```
    init?(typeOID: UInt32) {
        if let kind = ColumnMapping.scalarKind(typeOID: typeOID) {
            self.init(kind: kind, typeOID: typeOID)
        } else if let element = ColumnMapping.elementOID(ofArrayType: typeOID),
            let kind = ColumnMapping.scalarKind(typeOID: element)
        {
            self.init(kind: .array(of: kind), typeOID: typeOID)
        } else {
            return nil
        }
    }

    /// The mapping of an enum type (`CREATE TYPE ... AS ENUM`), whose OID
    /// is not fixed: its labels, as text.
    static func enumeration(typeOID: UInt32) -> ColumnMapping {
        ColumnMapping(kind: .text, typeOID: typeOID)
    }

    /// The declared type of the column in the replica's SQLite table:
    /// `INTEGER`, `REAL`, `TEXT` or `BLOB`. Numeric is `TEXT`, not
    /// `NUMERIC`, so that SQLite keeps its exact digits.
    var declaredType: String {
        switch kind {
        case .integer, .boolean: "INTEGER"
        case .float: "REAL"
        case .bytes: "BLOB"
        case .numeric, .text, .timestamp, .date, .time, .json, .uuid, .array: "TEXT"
        }
    }

    /// The kind of a built-in scalar type.
    private static func scalarKind(typeOID: UInt32) -> Kind? {
        switch typeOID {
        case 20, 21, 23, 26: .integer  // int8, int2, int4, oid
        case 700, 701: .float  // float4, float8
        case 1700: .numeric
        case 18, 19, 25, 1042, 1043: .text  // "char", name, text, bpchar, varchar
        case 16: .boolean
        case 17: .bytes
        case 1114, 1184: .timestamp  // timestamp, timestamptz
        case 1082: .date
        case 1083: .time
        case 114, 3802: .json  // json, jsonb
        case 2950: .uuid
        default: nil
        }
    }

    /// The element type of a built-in array type of a mapped scalar type.
    private static func elementOID(ofArrayType typeOID: UInt32) -> UInt32? {
        switch typeOID {
        case 1005: 21
        case 1007: 23
        case 1016: 20
        case 1028: 26
        case 1021: 700
        case 1022: 701
        case 1231: 1700
        case 1009: 25
        case 1015: 1043
        case 1014: 1042
        case 1003: 19
        case 1002: 18
        case 1000: 16
        case 1001: 17
        case 1115: 1114
        case 1185: 1184
        case 1182: 1082
        case 1183: 1083
        case 199: 114
        case 3807: 3802
        case 2951: 2950
        default: nil
        }
    }
}
