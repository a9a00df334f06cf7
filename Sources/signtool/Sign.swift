import ArgumentParser
import Foundation
import SignCore

struct Sign: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the whash and wtoken headers for a request.",
        discussion: "The output of --format shell or json (or the default) is what verify --signed reads.")

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case lines, shell, json
    }

    @Option(help: "File holding the private JWK to sign with ('-': standard input).")
    var key: String

    @OptionGroup var request: RequestArguments

    @Option(help: "End-user account to bind into the token.")
    var account: String = ""

    @Option(help: "Token lifetime in seconds (1-86400).")
    var lifetime: Int64 = 60

    @Option(name: .customLong("cover"), help: "A header field name the token covers (repeatable); its value comes from --header.")
    var covered: [String] = []

    @Flag(help: "Sign a GET, HEAD, OPTIONS or DELETE that has a body; the body stays UNSIGNED.")
    var allowUnsignedBody = false

    @Option(help: "lines ('whash: ...' and 'wtoken: ...'), shell (whash='...' wtoken='...', for eval) or json.")
    var format: Format = .lines

    func validate() throws {
        try atMostOneStandardInput(["--key": key, "--body": request.body])
    }

    func run() {
        let method = parseMethod(request.method)
        let signingKey = withKeyFile(key) { try JWK.parseKey(bytes: $0) }
        let headers = orFail {
            try Signer(key: signingKey, lifetime: lifetime, account: account, coveredHeaders: covered,
                       allowsUnsignedBody: allowUnsignedBody)
                .sign(method: method, url: request.url, body: request.bodyBytes, headers: request.headerFields)
        }
        // Both values are base64url, digits, dots and commas: nothing to quote or escape.
        switch format {
        case .lines: print("\(HeaderName.whash): \(headers.whash)\n\(HeaderName.wtoken): \(headers.wtoken)")
        case .shell: print("whash='\(headers.whash)'\nwtoken='\(headers.wtoken)'")
        case .json: print(#"{"whash":"\#(headers.whash)","wtoken":"\#(headers.wtoken)"}"#)
        }
    }
}

/// The whash and wtoken of `sign`'s output, in any of its formats.
func parseSigned(_ text: String) -> (whash: String?, wtoken: String?) {
    if let data = text.data(using: .utf8), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
        return (object["whash"] as? String, object["wtoken"] as? String)
    }
    var whash: String?, wtoken: String?
    for line in text.split(whereSeparator: \.isNewline) {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        for (name, separator) in [("whash", ":"), ("whash", "="), ("wtoken", ":"), ("wtoken", "=")] where trimmed.hasPrefix(name + separator) {
            var value = trimmed.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("'"), value.hasSuffix("'") { value = String(value.dropFirst().dropLast()) }
            if name == "whash" { whash = value } else { wtoken = value }
        }
    }
    return (whash, wtoken)
}
