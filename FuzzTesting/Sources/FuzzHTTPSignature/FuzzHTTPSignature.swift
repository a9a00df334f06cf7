import FuzzCommon
import HTTPTypes
import SignCore
import SignHTTP
import SignHTTPSignatures

/// docs/HTTPSIG.md's parsers on any bytes: `Signature-Input` and `Signature`, component values
/// over a request, `Content-Digest`, `Signature-Agent`, and the verifier under each coverage.
/// Properties: parsed fields serialise to text that parses to the same; every base made has the
/// shape a key signs (§3.3); every refusal carries a code of the profile (or SPEC §7's for the
/// request itself); nothing is ever accepted (no input can hold a valid signature of the fixed
/// key); a claimed digest written again reads the same; an agent origin is https without user.
///
/// Input, split at 0x00: a flag byte (bit 0: agent coverage, bit 1: nonce optional, bit 2: a
/// body), Signature-Input, Signature, Content-Digest, Signature-Agent, the target, one more
/// field's value (`x-extra`), the body.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPSignature(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let parts = Fuzz.parts(UnsafeRawBufferPointer(start: start, count: count), 8)
    let flags = parts[0].first ?? 0
    var fields = HTTPFields()
    for (index, name) in [(1, SignatureFields.signatureInput), (2, SignatureFields.signature), (3, ContentDigest.field), (4, SignatureAgent.field),
                          (6, HTTPField.Name("x-extra")!)] where !parts[index].isEmpty {
        fields.append(HTTPField(name: name, value: Fuzz.string(parts[index])))
    }
    let target = "/" + Fuzz.string(parts[5])
    let body = flags & 4 != 0 ? parts[7] : []
    let request = HTTPRequest(method: body.isEmpty ? .get : .post, scheme: "https", authority: "api.example.com", path: target, headerFields: fields)

    // The fields: a parse that succeeds writes text that parses to the same.
    if let parsed = try? SignatureFields(fields) {
        for entry in parsed.entries {
            guard let written = try? entry.parameters.serialized() else { continue }
            let again = HTTPFields([HTTPField(name: SignatureFields.signatureInput, value: "s=" + written)])
            guard let reread = try? SignatureFields(again), reread.entries.first?.parameters == entry.parameters else {
                Fuzz.broken("Signature-Input member \(written.debugDescription) does not read back as itself")
            }
            // Every base made has the shape of §3.3.
            if let parts = try? MessageComponents.RequestParts(request, origin: ServerOrigin(scheme: "https")),
               let base = try? SignatureBase.make(entry.parameters, message: MessageComponents(request: parts)) {
                do { try SigningKey.checkSignatureBase(base) } catch { Fuzz.broken("a base a key would not take: \(error)") }
            }
        }
    }

    // Content-Digest: what is claimed, written again, reads the same.
    if let claimed = try? ContentDigest.claimed(in: fields) {
        let written = HTTPFields([HTTPField(name: ContentDigest.field, value: claimed.fieldValue)])
        guard (try? ContentDigest.claimed(in: written)) == claimed else { Fuzz.broken("Content-Digest does not read back as itself") }
    }
    if let agent = SignatureAgent.url(in: fields, label: "sig1"), let origin = SignatureAgent.origin(of: agent),
       !origin.hasPrefix("https://") || origin.contains("@") {
        Fuzz.broken("agent origin \(origin.debugDescription) is not https without user information")
    }

    // The verifier: refused with a code of the profile or of the request, never accepted.
    let policy = HTTPSignaturePolicy(coverage: flags & 1 != 0 ? .agent : .request, nonce: flags & 2 != 0 ? .optional : .required)
    let checker = MessageSignatureVerifier(Fuzz.verifier(), policy: policy)
    let allowed: Set<Int> = Set(SignCoreError.Code.httpSignatureCodes.map(\.rawValue)).union([3, 10, 11, 12, 20, 21, 23, 32, 41, 43, 45])
    do throws(SignCoreError) {
        var digest = try checker.bodyDigest(for: request, limit: 1 << 20)
        let digested: Result<Void, SignCoreError> = body.withUnsafeBytes { bytes in Result { () throws(SignCoreError) in try digest.append(bytes) } }
        try digested.get()
        _ = try checker.check(request, bodyDigest: digest.finalize(), origin: ServerOrigin(scheme: "https"), now: Fuzz.now)
        Fuzz.broken("a fuzzed request verified")
    } catch {
        if !allowed.contains(error.code.rawValue) { Fuzz.broken("refused with \(error.code.name), not a code of the profile") }
    }
    return 0
}
