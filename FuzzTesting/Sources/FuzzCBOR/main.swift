import FuzzCommon
import SignDevice

/// The CBOR reader (docs/ATTEST.md §9.7) on any bytes: an item or a refusal, never a trap; an
/// item read is within the reader's bounds.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCBOR(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard let item = try? CBOR(decoding: bytes) else { return 0 }
    func depth(_ item: CBOR) -> Int {
        switch item {
        case .array(let elements): 1 + (elements.map(depth).max() ?? 0)
        case .map(let entries): 1 + (entries.map { max(depth($0.key), depth($0.value)) }.max() ?? 0)
        default: 1
        }
    }
    if depth(item) > CBOR.maxDepth { Fuzz.broken("an item deeper than the limit was read") }
    if case .map(let entries) = item {
        for (index, entry) in entries.enumerated() where entries[(index + 1)...].contains(where: { $0.key == entry.key }) {
            Fuzz.broken("a map with a duplicate key was read")
        }
    }
    return 0
}
