import ArgumentParser
import SignCore

struct Sign: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the whash and wtoken headers for a request.")

    @Option(help: "File holding the private JWK to sign with.")
    var key: String

    @OptionGroup var request: RequestArguments

    @Option(help: "End-user account to bind into the token.")
    var account: String = ""

    @Option(help: "Token lifetime in seconds.")
    var lifetime: Int64 = 60

    func run() {
        let method = parseMethod(request.method)
        let signingKey = orFail { try JWK.parseKey(readText(key)) }
        let headers = orFail {
            try Signer(key: signingKey, lifetime: lifetime, account: account)
                .sign(method: method, url: request.url, body: request.bodyBytes)
        }
        print("\(HeaderName.whash): \(headers.whash)")
        print("\(HeaderName.wtoken): \(headers.wtoken)")
    }
}
