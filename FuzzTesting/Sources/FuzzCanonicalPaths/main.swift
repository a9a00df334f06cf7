@_spi(Fuzzing) import SignCore
import FuzzCommon

/// The one-pass canonicaliser for common URLs and the general one agree on every input: the
/// same bytes, or the same error code.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCanonicalPaths(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    /// The canonical bytes, or the error code's number.
    func outcome(_ commonPath: Bool) -> ([UInt8]?, Int?) {
        do throws(SignCoreError) { return (try CanonicalURL.canonicalBytes(input, commonPath: commonPath), nil) } catch {
            return (nil, error.code.rawValue)
        }
    }
    guard outcome(true) == outcome(false) else { Fuzz.broken("the one-pass and general canonicalisers disagree") }
    return 0
}
