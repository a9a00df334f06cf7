import FuzzCommon
import SignAttest
import SignCore

/// ATTEST.md §4.2 and §4.4 on any body: a clear error, or an attest request (or response) that
/// reads back the same from the body this side would write for it; and SPEC §6.1's document
/// rules (`JSONObject`) never trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAttestRequest(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let body = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let object = try? JSONObject(bytes: body, maxBytes: 1 << 20) {
        for (index, member) in object.members.enumerated() where object.members[(index + 1)...].contains(where: { $0.name == member.name }) {
            Fuzz.broken("an object with a duplicate member was read")
        }
    }
    if let request = try? AttestRequest(body: body) {
        guard (try? AttestRequest(body: request.body)) == request else { Fuzz.broken("an attest request does not read back") }
    }
    if let response = try? AttestResponse(body: body) {
        guard (try? AttestResponse(body: response.body)) == response else { Fuzz.broken("an attest response does not read back") }
    }
    return 0
}
