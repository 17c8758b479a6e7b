/// The little JSON reading the benchmark needs, straight from bytes: the
/// number or string after a marker, and how often a marker occurs.
enum JSONScan {
    /// The first index of `marker` in `bytes`.
    static func firstIndex(of marker: [UInt8], in bytes: ArraySlice<UInt8>) -> Int? {
        guard let first = marker.first, bytes.count >= marker.count else { return nil }
        var index = bytes.startIndex
        let last = bytes.endIndex - marker.count
        while index <= last {
            if bytes[index] == first && bytes[index..<(index + marker.count)].elementsEqual(marker) { return index }
            index += 1
        }
        return nil
    }

    /// The integer right after the first `marker`.
    static func integer(after marker: [UInt8], in bytes: ArraySlice<UInt8>) -> Int? {
        guard var digit = firstIndex(of: marker, in: bytes).map({ $0 + marker.count }) else { return nil }
        var negative = false
        if digit < bytes.endIndex && bytes[digit] == UInt8(ascii: "-") {
            negative = true
            digit += 1
        }
        var value = 0
        var digits = 0
        while digit < bytes.endIndex, bytes[digit] >= UInt8(ascii: "0"), bytes[digit] <= UInt8(ascii: "9") {
            value = value * 10 + Int(bytes[digit] - UInt8(ascii: "0"))
            digit += 1
            digits += 1
        }
        guard digits > 0 else { return nil }
        return negative ? -value : value
    }

    /// The integers right after every `marker`, in order.
    static func integers(after marker: [UInt8], in bytes: ArraySlice<UInt8>) -> [Int] {
        var values: [Int] = []
        var rest = bytes
        while let index = firstIndex(of: marker, in: rest) {
            if let value = integer(after: marker, in: rest[index...]) { values.append(value) }
            rest = rest[(index + marker.count)...]
        }
        return values
    }

    /// The string right after the first `marker` (which ends with its opening quote), up to the closing quote.
    static func string(after marker: [UInt8], in bytes: ArraySlice<UInt8>) -> String? {
        guard let start = firstIndex(of: marker, in: bytes).map({ $0 + marker.count }),
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\""))
        else { return nil }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// How many times `marker` occurs in `bytes` (not overlapping).
    static func count(of marker: [UInt8], in bytes: ArraySlice<UInt8>) -> Int {
        var count = 0
        var rest = bytes
        while let index = firstIndex(of: marker, in: rest) {
            count += 1
            rest = rest[(index + marker.count)...]
        }
        return count
    }
}
