import FuzzCommon
import HTTPTypes
import SignCore
import SignHTTP

/// `ForwardAuthDescription.describe` on any fields a proxy, or a client through it, could send
/// (docs/SIGND.md, "Forward auth"): it never traps; what it accepts is exactly what the fields
/// say, each description field given once: the method, target and host are the proxy's own
/// fields' values, the scheme the origin's, and the request carries none of the description or
/// framing fields and every other field it was sent; a description field given twice, the other
/// proxy's fields, a refused field (the identity fields, any spelling) or another scheme is
/// refused; a body is announced exactly when a framing field holds something other than 0.
///
/// Input: one byte of flags (bit 0: nginx's fields instead of Caddy's; bit 1: an `http` origin
/// instead of `https`), then `Name: value` lines separated by LF.
let refusedSpellings: Set<String> = ["signcore-key-id", "signcore-account", "x-http-method-override"]

func spelling(_ name: HTTPField.Name) -> String { name.canonicalName.replacingOccurrences(of: "_", with: "-") }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzForwardAuth(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    guard let flags = input.first else { return 0 }
    let style: ForwardAuthDescription.Style = flags & 1 == 1 ? .nginx : .forwarded
    let scheme = flags & 2 == 2 ? "http" : "https"
    var fields = HTTPFields()
    for field in Fuzz.fields(Array(input.dropFirst())) {
        // Only fields swift-http-types would hold (a server never sees others).
        guard let name = HTTPField.Name(field.name) else { continue }
        let value = field.value.utf8.drop { $0 == 0x20 }
        guard HTTPField.isValidValue(String(decoding: value, as: UTF8.self)) else { continue }
        fields.append(HTTPField(name: name, value: String(decoding: value, as: UTF8.self)))
    }
    let refused = { (name: HTTPField.Name) in refusedSpellings.contains(spelling(name)) }
    let host = ForwardAuthDescription.forwardedHost, proto = ForwardAuthDescription.forwardedProto
    // What must be accepted: each description field once, none of the other proxy's, no refused
    // field, the origin's scheme, and a method.
    let once = [style.method, style.uri, host, proto].allSatisfy { fields[values: $0].count == 1 }
    let valid = once && !style.foreign.contains { fields[$0] != nil } && !fields.contains { refused($0.name) }
        && fields[proto]?.lowercased() == scheme
        && fields[style.method].map { HTTPRequest.Method($0) != nil && (try? RequestMethod(token: $0)) != nil } == true
    let described: ForwardAuthDescription.Described
    do {
        described = try ForwardAuthDescription.describe(fields, style: style, scheme: scheme, refused: refused)
    } catch {
        if valid { Fuzz.broken("a valid description refused: \(error.detail)") }
        return 0
    }
    guard valid else { Fuzz.broken("an invalid description accepted") }
    for name in [style.method, style.uri, host, proto] where fields[values: name].count != 1 {
        Fuzz.broken("accepted with \(name.canonicalName) given \(fields[values: name].count) times")
    }
    if let foreign = style.foreign.first(where: { fields[$0] != nil }) { Fuzz.broken("accepted with the other proxy's \(foreign.canonicalName)") }
    if let field = fields.first(where: { refused($0.name) }) { Fuzz.broken("accepted with the refused \(field.name.canonicalName)") }
    guard fields[proto]?.lowercased() == scheme else { Fuzz.broken("accepted over \(fields[proto].debugDescription) for \(scheme)") }
    let head = described.head
    guard head.method.rawValue == fields[style.method], described.method.rawValue == fields[style.method] else {
        Fuzz.broken("method \(head.method.rawValue) from \(fields[style.method].debugDescription)")
    }
    guard head.path == fields[style.uri], head.authority == fields[host], head.scheme == nil else {
        Fuzz.broken("target \(head.path.debugDescription), host \(head.authority.debugDescription) from the description")
    }
    let removed: [HTTPField.Name] = [style.method, style.uri, host, proto, ForwardAuthDescription.originalContentLength,
                                     ForwardAuthDescription.originalTransferEncoding, .contentLength, .transferEncoding, HTTPField.Name("host")!]
    if let kept = head.headerFields.first(where: { removed.contains($0.name) }) { Fuzz.broken("\(kept.name.canonicalName) kept") }
    let expected = fields.filter { !removed.contains($0.name) }
    guard Array(head.headerFields) == Array(expected) else { Fuzz.broken("the other fields changed on the way") }
    let framing = [ForwardAuthDescription.originalContentLength, .contentLength, ForwardAuthDescription.originalTransferEncoding, .transferEncoding]
    var values: [String] = []
    for name in framing { values += fields[values: name] }
    // Something other than one 0 among spaces and tabs.
    let announced = values.contains { value in
        let kept = value.unicodeScalars.filter { $0 != " " && $0 != "\t" }
        return !kept.isEmpty && String(kept) != "0"
    }
    guard described.announcesBody == announced else { Fuzz.broken("body announced: \(described.announcesBody), framing \(values)") }
    return 0
}
