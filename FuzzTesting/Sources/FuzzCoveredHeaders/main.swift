import FuzzCommon
import SignCore

/// SPEC §4.3 on any names and fields: a clear error, or a token that verifies with the fields
/// it was signed over — in any other case, spelling and surrounding whitespace of the names
/// and values — and never with a covered value changed.
let url = "https://api.example.com/v1/items"
let verifier = Fuzz.verifier()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCoveredHeaders(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let p = Fuzz.parts(UnsafeRawBufferPointer(start: start, count: count), 2)
    let names = p[0].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map { Fuzz.string(Array($0)) }
    let fields = Fuzz.fields(p[1])
    guard let signer = try? Signer(key: Fuzz.key, coveredHeaders: names, clock: { Fuzz.created }),
          let signed = try? signer.sign(method: .get, url: url, headers: fields) else { return 0 }
    func accepted(_ fields: [HeaderField]) -> Bool {
        (try? verifier.check(ReceivedRequest(method: .get, url: url, headers: fields, whash: signed.whash, wtoken: signed.wtoken))) != nil
    }
    guard accepted(fields) else { Fuzz.broken("a token does not verify with the fields it was signed over") }
    let respelled = fields.map { HeaderField($0.name.uppercased(), " \t" + $0.value + " ") }
    guard accepted(respelled) else { Fuzz.broken("case or surrounding whitespace changed the covered values") }
    if let index = fields.firstIndex(where: { field in signer.coveredHeaders.contains(field.name.lowercased()) }) {
        var changed = fields
        changed[index].value += "x"
        guard !accepted(changed) else { Fuzz.broken("a changed covered value was accepted") }
    }
    return 0
}
