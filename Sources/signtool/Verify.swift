import ArgumentParser
import Foundation
import SignCore

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify a request's headers; exit status 0 when accepted, 1 with the reason when refused.")

    @Option(help: "File holding the JWK Set (or one JWK) of accepted keys ('-': standard input).")
    var keys: String

    @OptionGroup var request: RequestArguments

    @Option(help: "The whash header value.")
    var whash: String?

    @Option(help: "The wtoken header value.")
    var wtoken: String?

    @Option(help: "A file with sign's output (any --format) giving the whash and wtoken ('-': standard input).")
    var signed: String?

    @Option(name: .customLong("require"), help: "A header field name every token must cover (repeatable).")
    var required: [String] = []

    @Option(help: "Allowed clock skew in seconds.")
    var skew: Int64 = 30

    @Option(help: "Longest token lifetime accepted, in seconds.")
    var maxLifetime: Int64 = 300

    @Option(help: "Verify as of this time (seconds since the Unix epoch); default: now.")
    var now: Int64?

    @Flag(help: "Accept private EdDSA/ES256 keys in --keys (a verifier needs only public keys).")
    var allowPrivateKeys = false

    func validate() throws {
        if signed != nil, whash != nil || wtoken != nil { throw ValidationError("--signed replaces --whash and --wtoken") }
        try atMostOneStandardInput(["--keys": keys, "--signed": signed, "--body": request.body])
    }

    func run() async {
        let keySet = withKeyFile(keys) { try KeySet(jwksBytes: $0, allowPrivateKeys: allowPrivateKeys) }
        let fixedNow = now
        let verifier = orFail {
            try Verifier(keys: keySet, replayGuard: InMemoryReplayGuard(), skew: skew, maxLifetime: maxLifetime,
                         requiredHeaders: try RequiredHeaders(urlMethods: required, bodyMethods: required),
                         clock: { fixedNow ?? SystemClock.seconds() })
        }
        var (whash, wtoken) = (whash, wtoken)
        if let signed { (whash, wtoken) = readSigned(signed) }
        let received = ReceivedRequest(method: request.method, url: request.url, body: .bytes(request.bodyBytes),
                                       headers: request.headerFields, whash: whash, wtoken: wtoken)
        do {
            let verified = try await verifier.verify(received)
            print(validLine(verified))
        } catch {
            let named = error.keyID.map { " (kid \($0))" } ?? ""
            fail("invalid: \(error.description)\(named) [advice: \(error.code.advice.rawValue)]", .refused)
        }
    }
}

/// The line printed for an accepted request. The fixed fields come first; the account, the only
/// free text, comes last and quoted, so it can neither start a line nor pose as another field.
func validLine(_ verified: VerifiedRequest) -> String {
    var line = "valid: kid=\(printable(verified.keyID)) alg=\(verified.algorithm.rawValue)"
    if !verified.coveredHeaders.isEmpty { line += " covers=" + printable(verified.coveredHeaders.joined(separator: ",")) }
    line += " created=\(verified.created) expires=\(verified.expires)"
    if !verified.account.isEmpty { line += " account=" + printable(verified.account, quoted: true) }
    return line
}

/// The whash and wtoken in a file of `sign`'s output; a file holding neither is invalid input.
func readSigned(_ path: String) -> (whash: String?, wtoken: String?) {
    let (whash, wtoken) = parseSigned(String(decoding: readBytes(path), as: UTF8.self))
    guard whash != nil || wtoken != nil else {
        fail("\(path == "-" ? "standard input" : path) holds no whash or wtoken (expected sign's output: lines, shell or json)")
    }
    return (whash, wtoken)
}
