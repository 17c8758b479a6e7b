/// The cost of the standard library's `Decodable` machinery alone, for
/// workload 6: `Player(from:)` over a decoder that reads nothing and returns
/// constants, its keyed container built once and reused like DBWatch's.
/// What it costs per row beyond a memberwise `Player(…)` is the least any
/// `Decodable`-based `fetchAll` adds to the raw loop, whatever its columns
/// cost.
final class ConstantDecoder: Decoder {
    let name = "Player number 100000"
    private var containerBox: AnyObject?

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        // One key type only (`Player.CodingKeys`): the box is returned as is.
        if let containerBox { return unsafeBitCast(containerBox, to: KeyedDecodingContainer<Key>.self) }
        let container = KeyedDecodingContainer(ConstantColumns<Key>(decoder: self))
        containerBox = unsafeBitCast(container, to: AnyObject.self)
        return container
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [], debugDescription: "keyed only"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(Int.self, .init(codingPath: [], debugDescription: "keyed only"))
    }
}

/// The keyed container of ``ConstantDecoder``.
struct ConstantColumns<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ConstantDecoder
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { 1 }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { 2 }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { 0.5 }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { decoder.name }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        throw DecodingError.typeMismatch(T.self, .init(codingPath: [key], debugDescription: "not in Player"))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        throw DecodingError.typeMismatch(NestedKey.self, .init(codingPath: [key], debugDescription: "flat"))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [key], debugDescription: "flat"))
    }

    func superDecoder() throws -> any Decoder { decoder }
    func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
}

/// Seconds per row for `rows` values of `Player(from:)` over a constant
/// decoder, and for `rows` memberwise `Player(…)`, both appended to arrays.
@inline(never)
func decodableFloor(rows: Int) throws -> (decodable: Double, memberwise: Double) {
    let decoder: any Decoder = ConstantDecoder()
    var start = nowNanoseconds()
    var decoded: [Player] = []
    for _ in 0..<rows { decoded.append(try Player(from: decoder)) }
    let decodable = seconds(since: start) / Double(rows)
    start = nowNanoseconds()
    var built: [Player] = []
    for index in 0..<rows {
        built.append(Player(id: Int64(index), name: "Player number 100000", score: index, bonus: 0.5))
    }
    let memberwise = seconds(since: start) / Double(rows)
    guard decoded.count == rows, built.count == rows else { throw RawError(description: "floor: wrong counts") }
    return (decodable, memberwise)
}
