import FuzzCommon
import SignAttest
import SignCore

/// ATTEST.md §2.4 and §3 on any header value and answer: a clear error, or a challenge whose
/// encoding is exactly the input, whose tag check and answer check run to an answer, and whose
/// answer is accepted only when every sub-solution's hash, recomputed here, has d leading zeros.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChallenge(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let parts = Fuzz.parts(UnsafeRawBufferPointer(start: start, count: count), 2)
    let text = Fuzz.string(parts[0])
    guard let challenge = try? Challenge(parsing: text) else { return 0 }
    guard challenge.text == text else { Fuzz.broken("a challenge parsed from a non-canonical spelling") }
    _ = try? Fuzz.key.verifyMessage(Array(challenge.body), signature: Array(challenge.tag), context: Challenge.tagContext)
    let answer = parts[1]
    let valid = ProofOfWork.isValid(answer, for: challenge)
    let prefix = ProofOfWork.prefix(of: challenge).bytes
    let expected = answer.count == 8 * challenge.count && (0..<challenge.count).allSatisfy { index in
        let digest = SHA256Hasher.hash(prefix + [UInt8(index)] + answer[(8 * index)..<(8 * index + 8)])
        return SHA256CounterSearch.leadingZeroBits(of: digest) >= challenge.difficulty
    }
    guard valid == expected else { Fuzz.broken("the answer check disagrees with the hashes") }
    return 0
}
