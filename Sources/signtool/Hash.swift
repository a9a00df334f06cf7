import ArgumentParser
import SignCore

struct Hash: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the whash of a request (and its canonical URL).")

    @OptionGroup var request: RequestArguments

    @Flag(help: "Also print the canonical URL.")
    var canonical = false

    func run() {
        let method = parseMethod(request.method)
        if canonical { print("canonical-url: " + printable(orFail { try CanonicalURL.canonicalize(request.url) })) }
        print(orFail { try WHash.compute(method: method, url: request.url, body: request.bodyBytes).description })
    }
}
