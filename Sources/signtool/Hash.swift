import ArgumentParser
import SignCore

struct Hash: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the whash of a request (and its canonical URL).")

    @Argument(help: "GET, HEAD, OPTIONS, DELETE, POST, PUT or PATCH")
    var method: String

    @Argument(help: "The absolute request URL.")
    var url: String

    @Option(help: "File holding the body (POST, PUT, PATCH); default: empty.")
    var body: String?

    @Flag(help: "Also print the canonical URL.")
    var canonical = false

    func run() {
        let method = parseMethod(method)
        let body = body.map { [UInt8](readFile($0)) } ?? []
        if canonical { print("canonical-url: " + orFail { try CanonicalURL.canonicalize(url) }) }
        print(orFail { try WHash.compute(method: method, url: url, body: body).description })
    }
}
