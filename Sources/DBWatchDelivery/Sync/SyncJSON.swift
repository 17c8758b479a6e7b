/// The small pieces of JSON text the sync protocol's messages are built
/// from: values already encoded (rows, keys, changes) are inserted as
/// their bytes are, never decoded and encoded again.
enum SyncJSON {
    /// `text` as a JSON string, quoted and escaped.
    static func string(_ text: String) -> [UInt8] {
        var json: [UInt8] = [UInt8(ascii: "\"")]
        json.reserveCapacity(text.utf8.count + 2)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): json += #"\""#.utf8
            case UInt8(ascii: "\\"): json += #"\\"#.utf8
            case UInt8(ascii: "\n"): json += #"\n"#.utf8
            case UInt8(ascii: "\r"): json += #"\r"#.utf8
            case UInt8(ascii: "\t"): json += #"\t"#.utf8
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                json += #"\u00"#.utf8
                json.append(hex[Int(byte >> 4)])
                json.append(hex[Int(byte & 0xF)])
            default: json.append(byte)
            }
        }
        json.append(UInt8(ascii: "\""))
        return json
    }

    /// `{"key":value,…}` from members whose values are JSON already.
    static func object(_ members: [(key: String, value: [UInt8])]) -> [UInt8] {
        var json: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            json += string(member.key)
            json.append(UInt8(ascii: ":"))
            json += member.value
        }
        json.append(UInt8(ascii: "}"))
        return json
    }

    /// `[a,b,…]` from elements that are JSON already.
    static func array(_ elements: [[UInt8]]) -> [UInt8] {
        var json: [UInt8] = [UInt8(ascii: "[")]
        json.reserveCapacity(elements.reduce(2) { $0 + $1.count + 1 })
        for (index, element) in elements.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            json += element
        }
        json.append(UInt8(ascii: "]"))
        return json
    }
}
