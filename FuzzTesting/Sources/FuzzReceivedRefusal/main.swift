import FuzzCommon
import HTTPTypes
import SignCore
import SignHTTP

/// `ReceivedRefusal` on any `signcore-error` value a server sends (SPEC §7.1, §7.2; an RFC 8941
/// item): it never traps; what it reads has a code of 1 or more, a name and advice that are
/// tokens, and is read again alike from the value SignHTTP would send for it; a known code
/// brings its own advice, whatever advice the field names.
///
/// Input: the field's value.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReceivedRefusal(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    let value = Fuzz.string(Array(input))
    guard HTTPField.isValidValue(value) else { return 0 }  // a field value HTTP can carry
    var fields = HTTPFields()
    fields[Refusal.errorField] = value
    guard let read = ReceivedRefusal(HTTPResponse(status: .unauthorized, headerFields: fields)) else { return 0 }
    guard read.codeNumber >= 1 else { Fuzz.broken("code \(read.codeNumber) read from \(value.debugDescription)") }
    for token in [read.name, read.adviceToken] where !isToken(token) {
        Fuzz.broken("\(token.debugDescription) read as a token from \(value.debugDescription)")
    }
    if let code = read.code, read.advice != code.advice { Fuzz.broken("code \(code) read with another advice") }
    var again = HTTPFields()
    again[Refusal.errorField] = "\(read.name);code=\(read.codeNumber);advice=\(read.adviceToken)"
    guard let reread = ReceivedRefusal(HTTPResponse(status: .unauthorized, headerFields: again)), reread == read else {
        Fuzz.broken("\(value.debugDescription) is not read alike once written again")
    }
    return 0
}

/// RFC 8941 §3.3.4: ( ALPHA / "*" ) *( tchar / ":" / "/" ).
func isToken(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    guard let first = bytes.first, (0x41...0x5A).contains(first) || (0x61...0x7A).contains(first) || first == 0x2A else { return false }
    let tchar = Set("!#$%&'*+-.^_`|~:/".utf8)
    return bytes.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || tchar.contains($0) }
}
