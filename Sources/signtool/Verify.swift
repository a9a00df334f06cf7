import ArgumentParser
import SignCore

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify a request's headers; exit status 0 when accepted, 1 with the reason otherwise.")

    @Option(help: "File holding the JWK Set (or one JWK) of accepted keys.")
    var keys: String

    @OptionGroup var request: RequestArguments

    @Option(help: "The whash header value.")
    var whash: String?

    @Option(help: "The wtoken header value.")
    var wtoken: String?

    @Option(help: "Allowed clock skew in seconds.")
    var skew: Int64 = 30

    @Option(help: "Longest token lifetime accepted, in seconds.")
    var maxLifetime: Int64 = 300

    @Option(help: "Verify as of this time (seconds since the Unix epoch); default: now.")
    var now: Int64?

    func run() async {
        let keySet = orFail { try KeySet(jwks: readText(keys)) }
        let fixedNow = now
        let verifier = orFail {
            try Verifier(keys: keySet, replayGuard: InMemoryReplayGuard(), skew: skew, maxLifetime: maxLifetime,
                         clock: { fixedNow ?? SystemClock.seconds() })
        }
        let received = ReceivedRequest(method: request.method, url: request.url, body: .bytes(request.bodyBytes),
                                       whash: whash, wtoken: wtoken)
        do {
            let verified = try await verifier.verify(received)
            let account = verified.account.isEmpty ? "" : " account=\(verified.account)"
            print("valid: kid=\(verified.keyID) alg=\(verified.algorithm.rawValue)\(account) created=\(verified.created) expires=\(verified.expires)")
        } catch {
            fail("invalid: \(error.description) [advice: \(error.code.advice.rawValue)]")
        }
    }
}
