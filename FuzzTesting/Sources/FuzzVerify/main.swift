import FuzzCommon
import SignCore

/// The whole verify (SPEC §5) on random requests, and on mutations of a valid signed request:
/// nothing traps, and a request whose token, whash, URL, method, body or covered header was
/// changed is never accepted.
let url = "https://api.example.com/v1/orders?id=42&sort=desc"
let fields = [HeaderField("Content-Type", "application/json"), HeaderField("X-Tenant", "acme")]
let body = Array(#"{"item":"book"}"#.utf8)
let verifier = Fuzz.verifier()
let signed: SignedHeaders = {
    do {
        return try Signer(key: Fuzz.key, coveredHeaders: ["content-type", "x-tenant"], clock: { Fuzz.created })
            .sign(method: .post, url: url, body: body, headers: fields)
    } catch { fatalError("\(error)") }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVerify(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    guard let mode = input.first else { return 0 }
    let rest = UnsafeRawBufferPointer(rebasing: input.dropFirst())
    if mode & 1 == 0 {
        // Random values for every part of a request.
        let p = Fuzz.parts(rest, 6)
        let request = ReceivedRequest(method: Fuzz.string(p[0]), url: Fuzz.string(p[1]), body: .bytes(p[4]), headers: Fuzz.fields(p[5]),
                                      whash: p[2].isEmpty ? nil : Fuzz.string(p[2]), wtoken: Fuzz.string(p[3]))
        _ = try? verifier.check(request)
        return 0
    }
    // A valid request with byte edits (position, value) applied to one of its parts.
    var token = Array(signed.wtoken.utf8), whash = Array(signed.whash.utf8), target = Array(url.utf8), content = body
    var headerBytes = Array("Content-Type: application/json\nX-Tenant: acme".utf8)
    var index = 0
    while index + 2 < rest.count {
        let part = rest[index] % 5, position = Int(rest[index + 1]), value = rest[index + 2]
        index += 3
        func edit(_ bytes: inout [UInt8]) {
            if value == 0xFF, !bytes.isEmpty { bytes.remove(at: position % bytes.count) }
            else if !bytes.isEmpty, value & 1 == 0 { bytes[position % bytes.count] = value }
            else { bytes.insert(value, at: position % (bytes.count + 1)) }
        }
        switch part {
        case 0: edit(&token)
        case 1: edit(&whash)
        case 2: edit(&target)
        case 3: edit(&content)
        default: edit(&headerBytes)
        }
    }
    let request = ReceivedRequest(method: "POST", url: Fuzz.string(target), body: .bytes(content), headers: Fuzz.fields(headerBytes),
                                  whash: Fuzz.string(whash), wtoken: Fuzz.string(token))
    guard (try? verifier.check(request)) != nil else { return 0 }
    // Accepted: the token and body must be as signed, and the URL and fields must mean the same.
    guard Fuzz.string(token) == signed.wtoken, content == body,
          (try? CanonicalURL.canonicalize(Fuzz.string(target))) == (try? CanonicalURL.canonicalize(url)) else {
        Fuzz.broken("a changed request was accepted")
    }
    return 0
}
