import ArgumentParser
import Foundation
import SignCore

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify a request's headers; exit status 0 when accepted, 1 with the reason when refused.")

    @Option(help: "File holding the JWK Set (or one JWK) of accepted keys.")
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
        if signed == "-", request.body == "-" { throw ValidationError("--signed and --body cannot both be standard input") }
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
        if let signed { (whash, wtoken) = parseSigned(String(decoding: readBytes(signed), as: UTF8.self)) }
        let received = ReceivedRequest(method: request.method, url: request.url, body: .bytes(request.bodyBytes),
                                       headers: request.headerFields, whash: whash, wtoken: wtoken)
        do {
            let verified = try await verifier.verify(received)
            // Everything from the token is escaped: an account with a newline cannot print a second line.
            let account = verified.account.isEmpty ? "" : " account=\(printable(verified.account))"
            let covered = verified.coveredHeaders.isEmpty ? "" : " covers=\(verified.coveredHeaders.joined(separator: ","))"
            print("valid: kid=\(printable(verified.keyID)) alg=\(verified.algorithm.rawValue)\(account)\(covered) created=\(verified.created) expires=\(verified.expires)")
        } catch {
            let named = error.keyID.map { " (kid \($0))" } ?? ""
            fail("invalid: \(error.description)\(named) [advice: \(error.code.advice.rawValue)]", .refused)
        }
    }
}
