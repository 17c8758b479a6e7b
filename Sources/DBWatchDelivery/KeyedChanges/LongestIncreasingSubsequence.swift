/// Which elements of `values` form one longest strictly increasing
/// subsequence, in O(n log n) (patience sorting): `true` at the positions
/// kept. Of several longest ones, the result is always the same for the
/// same input.
///
/// ```swift
/// longestIncreasingSubsequence([0, 3, 1, 2])   // [true, false, true, true]
/// ```
func longestIncreasingSubsequence(_ values: [Int]) -> [Bool] {
    var kept = [Bool](repeating: false, count: values.count)
    guard !values.isEmpty else { return kept }
    // The common case, nothing moved: all of them, without the search.
    if zip(values, values.dropFirst()).allSatisfy({ $0 < $1 }) {
        return [Bool](repeating: true, count: values.count)
    }
    // tails[k]: the position of the smallest last value of an increasing
    // subsequence of length k + 1; previous[i]: the element before i in
    // the subsequence that ends at i.
    var tails: [Int] = []
    tails.reserveCapacity(values.count)
    var previous = [Int](repeating: -1, count: values.count)
    for (position, value) in values.enumerated() {
        // Mostly in order: extending the longest one needs no search.
        if let last = tails.last, values[last] < value {
            previous[position] = last
            tails.append(position)
            continue
        }
        var low = 0
        var high = tails.count
        while low < high {
            let middle = (low + high) / 2
            if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
        }
        if low > 0 { previous[position] = tails[low - 1] }
        if low == tails.count { tails.append(position) } else { tails[low] = position }
    }
    var position = tails[tails.count - 1]
    while position >= 0 {
        kept[position] = true
        position = previous[position]
    }
    return kept
}
