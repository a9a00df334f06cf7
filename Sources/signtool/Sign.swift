import ArgumentParser
import Foundation
import SignCore

struct Sign: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the whash and wtoken headers for a request.",
        discussion: "The output of --format shell or json (or the default) is what verify --signed reads.")

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case lines, shell, json, curl
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

    @Option(help: "lines ('whash: ...' and 'wtoken: ...'), shell (whash='...' wtoken='...', for eval), json, or curl (the whole request as a curl command).")
    var format: Format = .lines

    @Option(help: "The token's creation time, seconds since 1970 (for tests; default: now).")
    var created: Int64?

    @Option(help: "The token's nonce, 22 base64url characters (for tests only: a nonce must never repeat; default: fresh).")
    var nonce: String?

    func validate() throws {
        try atMostOneStandardInput(["--key": key, "--body": request.body])
        if let nonce, Base64URL.decode(nonce).flatMap(Nonce.init(bytes:)) == nil {
            throw ValidationError("--nonce must be 22 base64url characters (16 bytes)")
        }
    }

    func run() {
        let method = parseMethod(request.method)
        let signingKey = withKeyFile(key) { try JWK.parseKey(bytes: $0) }
        let fields = request.headerFields
        let headers = orFail {
            try Signer(key: signingKey, lifetime: lifetime, account: account, coveredHeaders: covered,
                       allowsUnsignedBody: allowUnsignedBody)
                .sign(method: method, url: request.url, body: request.bodyBytes, headers: fields,
                      created: created ?? SystemClock.seconds(), nonce: nonce.flatMap(Base64URL.decode).flatMap(Nonce.init(bytes:)) ?? Nonce.random())
        }
        // Both values are base64url, digits, dots and commas: nothing to quote or escape.
        switch format {
        case .lines: print("\(HeaderName.whash): \(headers.whash)\n\(HeaderName.wtoken): \(headers.wtoken)")
        case .shell: print("whash='\(headers.whash)'\nwtoken='\(headers.wtoken)'")
        case .json: print(#"{"whash":"\#(headers.whash)","wtoken":"\#(headers.wtoken)"}"#)
        case .curl: print(curlCommand(fields: fields, signed: headers))
        }
    }

    /// The request as curl sends it exactly as signed: the target as written (`--path-as-is`,
    /// `--globoff`), the given fields, the two signature fields, the body from its file, then
    /// `"$@"` (a script's arguments: more options). curl's own `Content-Type` for a body, `Expect`,
    /// and any default of a covered field the request does not carry are removed (a covered
    /// absent field must stay absent).
    func curlCommand(fields: [HeaderField], signed: SignedHeaders) -> String {
        var words = ["curl", "--globoff", "--path-as-is"]
        switch request.method {
        case "GET": break
        case "HEAD": words.append("--head")
        default: words += ["-X", request.method]
        }
        words.append(shellQuoted(request.url))
        for field in fields {
            let value = field.value.trimmingCharacters(in: .whitespaces)
            // `Name:` would remove the field in curl; `Name;` sends it empty.
            words += ["-H", shellQuoted(value.isEmpty ? "\(field.name);" : "\(field.name): \(value)")]
        }
        let given = Set(fields.map { $0.name.lowercased() })
        var removed = covered.map { $0.lowercased() }.filter { !given.contains($0) }
        if request.body != nil { removed += ["content-type", "expect"].filter { !given.contains($0) } }
        for name in Set(removed).sorted() { words += ["-H", shellQuoted("\(name):")] }
        words += ["-H", shellQuoted("\(HeaderName.whash): \(signed.whash)"), "-H", shellQuoted("\(HeaderName.wtoken): \(signed.wtoken)")]
        if let body = request.body { words += ["--data-binary", body == "-" ? "@-" : shellQuoted("@" + body)] }
        words.append(#""$@""#)  // `sh request.sh -v`: more curl options; nothing when pasted
        return words.joined(separator: " ")
    }
}

/// `text` as one POSIX shell word: in single quotes, each `'` written `'\''`.
func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
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
