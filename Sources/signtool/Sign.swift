import ArgumentParser
import SignCore

struct Sign: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the whash and wtoken headers for a request.")

    @Option(help: "File holding the private JWK to sign with.")
    var key: String

    @Argument(help: "GET, HEAD, OPTIONS, DELETE, POST, PUT or PATCH")
    var method: String

    @Argument(help: "The absolute request URL, as it will be sent.")
    var url: String

    @Option(help: "File holding the body, bytes exactly as sent; default: empty.")
    var body: String?

    @Option(help: "End-user account to bind into the token.")
    var account: String = ""

    @Option(help: "Token lifetime in seconds.")
    var lifetime: Int64 = 60

    func run() {
        let method = parseMethod(method)
        let signingKey = orFail { try JWK.parseKey(readText(key)) }
        let body = body.map { [UInt8](readFile($0)) } ?? []
        let headers = orFail {
            try Signer(key: signingKey, lifetime: lifetime, account: account).sign(method: method, url: url, body: body)
        }
        print("\(HeaderName.whash): \(headers.whash)")
        print("\(HeaderName.wtoken): \(headers.wtoken)")
    }
}
