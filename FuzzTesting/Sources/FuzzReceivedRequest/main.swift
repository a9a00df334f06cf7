import FuzzCommon
import HTTPTypes
import SignCore
import SignHTTP

/// What a server runs on a received request's host and target (`ReceivedRequest.checkHost`,
/// `ServerOrigin.validate(authority:)` and `(target:)`, `ReceivedRequest.init` with and without a
/// fixed authority), on any authority, target and header fields:
/// - when the checks pass, the URL verified canonicalises to exactly the canonical authority
///   (lower case, no default port) followed by the canonical form of the target alone: no
///   spelling moves a byte of the authority into the path or of the path into the authority;
/// - an authority holding `/ ? # @ \`, a space or a control byte is refused, and so is a request
///   with a `Host` field beside its `:authority` (two hosts), whatever its case, and a target that
///   does not start with `/` or holds `#`, `\`, a space or a control byte;
/// - `ReceivedRequest.init` accepts what the gateway's checks accept and nothing else;
/// - a token signed for `GET https://api.example.com/` verifies for no other host or target.
///
/// Input: one byte of flags (bit 0: `http` instead of `https`), then the authority, the request
/// target and `Name: value` lines of header fields, separated by 0x00.
let host = "api.example.com"
let fixed = "api.example.com"
let verifier = Fuzz.verifier()
let names = SignHeaderNames.standard
/// A token for `GET https://api.example.com/`, checked once to verify as signed (else this
/// fuzzer would check nothing).
let signed: SignedHeaders = {
    do {
        let headers = try Signer(key: Fuzz.key, clock: { Fuzz.created }).sign(method: .get, url: "https://" + host + "/")
        for origin in [ServerOrigin(scheme: "https"), ServerOrigin(scheme: "https", authority: fixed)] {
            var request = HTTPRequest(method: .get, scheme: nil, authority: host, path: "/")
            request.headerFields[names.whash] = headers.whash
            request.headerFields[names.wtoken] = headers.wtoken
            _ = try verifier.check(try ReceivedRequest(request, origin: origin))
        }
        return headers
    } catch {
        fatalError("fixed token: \(error)")
    }
}()

/// Bytes that end, move or smuggle an authority: `/ ? # @ \`, space and the control bytes.
func endsAuthority(_ byte: UInt8) -> Bool {
    byte <= 0x20 || byte == 0x7F || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
        || byte == UInt8(ascii: "@") || byte == UInt8(ascii: "\\")
}

func canonical(_ url: String) -> String? { try? CanonicalURL.canonicalize(url) }

/// `scheme://host[:port]` as the canonical URL must write a validated authority (SPEC §2.4,
/// §2.5), worked out here from its bytes: a name in ASCII lower case, the port kept unless it is
/// the scheme's default. An IPv6 literal's RFC 5952 form is the canonical URL's own (its vectors
/// check it): only the brackets and the port are checked here.
func checkAuthority(_ authority: String, scheme: String) -> String {
    guard let alone = canonical(scheme + "://" + authority + "/"), alone.hasSuffix("/") else {
        Fuzz.broken("an authority that passed validate(authority:) is refused by the canonical URL: \(authority.debugDescription)")
    }
    let written = String(alone.dropLast())
    let bytes = Array(authority.utf8)
    let hostEnd: Int
    if bytes.first == UInt8(ascii: "[") {
        hostEnd = (bytes.firstIndex(of: UInt8(ascii: "]")) ?? bytes.count - 1) + 1
    } else {
        hostEnd = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.count
    }
    let port = hostEnd < bytes.count ? Fuzz.string(Array(bytes[(hostEnd + 1)...])) : ""
    let defaultPort = scheme == "https" ? "443" : "80"
    let portPart = port.isEmpty || port == defaultPort ? "" : ":" + port
    let prefix = scheme + "://"
    if bytes.first == UInt8(ascii: "[") {
        guard written.hasPrefix(prefix + "["), written.hasSuffix("]" + portPart),
              !written.dropFirst(prefix.count).utf8.contains(where: endsAuthority) else {
            Fuzz.broken("an IPv6 authority \(authority.debugDescription) is written \(written.debugDescription)")
        }
    } else {
        let lower = Fuzz.string(bytes[..<hostEnd].map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 })
        guard written == prefix + lower + portPart else {
            Fuzz.broken("the authority \(authority.debugDescription) is written \(written.debugDescription)")
        }
    }
    return written
}

/// The URL verified, `scheme://authority` + `target`, canonicalises to the authority's canonical
/// form followed by the target's (the target's taken behind a one-letter host, so that a URL the
/// canonical form refuses for its length alone is refused only for being longer).
func checkURL(scheme: String, authority: String, target: String) {
    let authorityPart = checkAuthority(authority, scheme: scheme)
    let base = scheme + "://a"
    let url = scheme + "://" + authority + target
    switch (canonical(url), canonical(base + target)) {
    case let (whole?, targetAlone?):
        guard whole == authorityPart + targetAlone.dropFirst(base.count) else {
            Fuzz.broken("the URL verified \(url.debugDescription) is \(whole.debugDescription), not the authority's \(authorityPart.debugDescription) and the target's \(targetAlone.debugDescription) side by side")
        }
    case (nil, nil):
        break  // the target is refused on its own (and so is the URL)
    case (nil, _?):
        guard url.utf8.count > CanonicalURL.maxInputBytes else {
            Fuzz.broken("the URL verified \(url.debugDescription) is refused, its authority and target are not")
        }
    case (_?, nil):
        Fuzz.broken("the URL verified \(url.debugDescription) is canonical, its target alone is refused")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReceivedRequest(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    guard let flags = input.first else { return 0 }
    let p = Fuzz.parts(UnsafeRawBufferPointer(rebasing: input.dropFirst()), 3)
    let scheme = flags & 1 == 0 ? "https" : "http"
    let rawAuthority = Fuzz.string(p[0]), rawTarget = Fuzz.string(p[1])

    // The checks on the strings themselves (a control byte included: a server's parser may keep it).
    if (try? ServerOrigin.validate(authority: rawAuthority)) != nil {
        guard !rawAuthority.utf8.contains(where: endsAuthority) else {
            Fuzz.broken("the authority \(rawAuthority.debugDescription) holds / ? # @ \\, a space or a control byte and was accepted")
        }
        if (try? ServerOrigin.validate(target: rawTarget)) != nil { checkURL(scheme: scheme, authority: rawAuthority, target: rawTarget) }
    }
    if (try? ServerOrigin.validate(target: rawTarget)) != nil {
        guard rawTarget.utf8.first == UInt8(ascii: "/"),
              !rawTarget.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: "\\") }) else {
            Fuzz.broken("the target \(rawTarget.debugDescription) is no origin-form path without # \\, space or control bytes, and was accepted")
        }
    }

    // The request as swift-http-types carries it: the first host in `:authority`, any other one
    // a field (as the HTTP/1 adapters leave it), values legalised as a server's parser does.
    var fields = HTTPFields()
    var hosts = 0
    for field in Fuzz.fields(p[2]) {
        guard let name = HTTPField.Name(field.name) else { continue }
        if field.name.lowercased() == "host" { hosts += 1 }
        fields.append(HTTPField(name: name, value: field.value))
    }
    let request = HTTPRequest(method: .get, scheme: nil, authority: rawAuthority.isEmpty ? nil : rawAuthority, path: rawTarget,
                              headerFields: fields)
    let hostPasses = (try? ReceivedRequest.checkHost(request)) != nil
    guard hostPasses == (hosts == 0) else {
        Fuzz.broken(hosts > 0 ? "a request with \(hosts) Host field(s) beside :authority passed checkHost" : "checkHost refused a request without a Host field")
    }
    let authority = request.authority
    let authorityPasses = authority.map { (try? ServerOrigin.validate(authority: $0)) != nil } ?? true
    if let authority, authorityPasses, authority.utf8.contains(where: endsAuthority) {
        Fuzz.broken("the received authority \(authority.debugDescription) holds / ? # @ \\, a space or a control byte and was accepted")
    }
    let target = request.path ?? ""
    let targetPasses = (try? ServerOrigin.validate(target: target)) != nil
    let gatewayPasses = hostPasses && authorityPasses && targetPasses  // signd's RequestTargetMiddleware
    let singleSignatureFields = fields[values: names.whash].count <= 1 && fields[values: names.wtoken].count <= 1

    // ReceivedRequest accepts exactly what the gateway's checks accept (the authority its origin's
    // when fixed), and builds the URL from the authority and the target side by side.
    for origin in [ServerOrigin(scheme: scheme), ServerOrigin(scheme: scheme, authority: fixed)] {
        let used = origin.authority ?? authority ?? ""
        let usedPasses = origin.authority == nil ? authorityPasses && !used.isEmpty : true
        let expected = hostPasses && usedPasses && targetPasses && singleSignatureFields
        guard let received = try? ReceivedRequest(request, origin: origin, names: names) else {
            guard !expected else { Fuzz.broken("ReceivedRequest refused a request the gateway's checks accept") }
            continue
        }
        guard expected, origin.authority != nil || gatewayPasses else {
            Fuzz.broken("ReceivedRequest accepted a request the gateway's checks refuse")
        }
        guard received.url == scheme + "://" + used + target else {
            Fuzz.broken("ReceivedRequest verifies \(received.url.debugDescription), not scheme://authority + target")
        }
        checkURL(scheme: scheme, authority: used, target: target)
    }

    // The token for `GET https://api.example.com/` sent with this host, target and fields: it
    // verifies only where the URL verified is the one signed.
    var sent = request
    sent.headerFields[names.whash] = signed.whash
    sent.headerFields[names.wtoken] = signed.wtoken
    for origin in [ServerOrigin(scheme: scheme), ServerOrigin(scheme: scheme, authority: fixed)] {
        guard let received = try? ReceivedRequest(sent, origin: origin, names: names), (try? verifier.check(received)) != nil else { continue }
        let sameHost = origin.authority != nil || authority.flatMap { canonical("https://" + $0 + "/") } == "https://" + host + "/"
        guard scheme == "https", sameHost, canonical("https://a" + target) == "https://a/" else {
            Fuzz.broken("a token signed for GET https://\(host)/ verified with Host \(String(describing: authority).debugDescription) and target \(target.debugDescription)")
        }
    }
    return 0
}
