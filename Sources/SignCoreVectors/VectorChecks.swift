import Foundation
import SignCore

/// Runs vector cases through SignCore. Each check returns the problems found (none: passed),
/// so the test suite and `signtool vectors --check` share one definition of "passes".
public enum VectorCheck {
    /// The outcome of an operation as the vector files state it.
    enum Outcome: Equatable, CustomStringConvertible {
        case valid(String)
        case invalid(String)

        init(result: String, expected: String?, error: String?) {
            self = result == "valid" ? .valid(expected ?? "") : .invalid(error ?? "")
        }

        init(_ body: () throws -> String) {
            do { self = .valid(try body()) } catch let error as SignCoreError { self = .invalid(error.code.name) } catch {
                self = .invalid("\(error)")
            }
        }

        var description: String {
            switch self {
            case let .valid(value): "valid \(value)"
            case let .invalid(code): "invalid \(code)"
            }
        }
    }

    static func compare(_ got: Outcome, _ want: Outcome, _ tcId: Int) -> [String] {
        got == want ? [] : ["tcId \(tcId): got \(got), expected \(want)"]
    }

    public static func canonicalURL(_ tc: CanonicalURLVectors.Case) -> [String] {
        guard let bytes = tc.inputHex.map({ [UInt8](hex: $0) }) ?? tc.input.map({ Array($0.utf8) }) else {
            return ["tcId \(tc.tcId): no input"]
        }
        let got = Outcome { try CanonicalURL.canonicalize(bytes: bytes) }
        var problems = compare(got, Outcome(result: tc.result, expected: tc.expected, error: tc.error), tc.tcId)
        if case let .valid(once) = got, (try? CanonicalURL.canonicalize(once)) != once {
            problems.append("tcId \(tc.tcId): the canonical form is not its own canonical form")
        }
        return problems
    }

    public static func canonicalPair(_ tc: CanonicalURLVectors.Pair) -> [String] {
        guard let a = try? CanonicalURL.canonicalize(tc.a), let b = try? CanonicalURL.canonicalize(tc.b) else {
            return ["tcId \(tc.tcId): a spelling is invalid"]
        }
        return (a == b) == (tc.result == "same") ? [] : ["tcId \(tc.tcId): \(a) vs \(b), expected \(tc.result)"]
    }

    public static func whash(_ tc: WHashVectors.Case) -> [String] {
        guard let body = BodySpec.bytes(of: tc.body) else { return ["tcId \(tc.tcId): unknown body formula"] }
        let got = Outcome { try WHash.compute(method: try RequestMethod(token: tc.method), url: tc.url ?? "", body: body).description }
        var problems = compare(got, Outcome(result: tc.result, expected: tc.expected, error: tc.error), tc.tcId)
        // The incremental hasher, fed in uneven chunks, agrees with the one-shot value.
        if case let .valid(expected) = got, RequestMethod(rawValue: tc.method)?.contentClass == .body {
            var hasher = WHash.BodyHasher()
            var offset = 0, chunk = 1
            while offset < body.count {
                let end = min(body.count, offset + chunk)
                try? hasher.append(Array(body[offset..<end]))
                offset = end
                chunk = chunk * 7 + 3
            }
            if hasher.finalize().description != expected { problems.append("tcId \(tc.tcId): incremental whash differs") }
        }
        return problems
    }

    /// - Parameter deterministicEd25519: whether EdDSA tokens must match byte for byte; where the
    ///   backend hedges Ed25519 (CryptoKit) everything but the signature must match and the
    ///   signature must verify (README, "Platforms and crypto backends").
    public static func sign(_ tc: WTokenVectors.SignCase, in file: WTokenVectors,
                            deterministicEd25519: Bool = SignCoreVersion.ed25519SignaturesAreDeterministic) -> [String] {
        let fields = (tc.headers ?? []).map { HeaderField($0[0], $0[1]) }
        guard let body = BodySpec.bytes(of: tc.body), let nonceBytes = [UInt8](hex: tc.nonce),
              let nonce = Nonce(bytes: nonceBytes) else { return ["tcId \(tc.tcId): bad body or nonce"] }
        guard let expected = tc.expected else {
            let got = Outcome {
                let signer = try Signer(key: try file.key(tc.key), lifetime: tc.lifetime, account: tc.account,
                                        coveredHeaders: tc.coveredHeaders ?? [], allowsUnsignedBody: tc.allowUnsignedBody ?? false)
                return try signer.sign(method: try RequestMethod(token: tc.method), url: tc.url, body: body, headers: fields,
                                       created: tc.created, nonce: nonce).wtoken
            }
            return compare(got, Outcome(result: tc.result, expected: nil, error: tc.error), tc.tcId)
        }
        do {
            let key = try file.key(tc.key)
            let method = try RequestMethod(token: tc.method)
            let signer = try Signer(key: key, lifetime: tc.lifetime, account: tc.account, coveredHeaders: tc.coveredHeaders ?? [],
                                    allowsUnsignedBody: tc.allowUnsignedBody ?? false)
            let canonical = try CanonicalURL.canonicalize(tc.url)
            let whash = try WHash.compute(method: method, url: tc.url, body: body)
            let target = Array(canonical.utf8).withUnsafeBytes { SigningInput.targetDigest(method: method, canonicalURL: $0) }
            let headersDigest = try signer.coveredHeadersDigest(fields)
            let input = try SigningInput.bytes(algorithm: key.algorithm, keyID: key.id, target: target, whash: whash,
                                               created: tc.created, lifetime: tc.lifetime, nonce: nonce, account: tc.account,
                                               headers: headersDigest.map { (signer.coveredHeaders.count, $0) })
            let headers = try signer.sign(method: method, url: tc.url, body: body, headers: fields, created: tc.created, nonce: nonce)
            var problems: [String] = []
            func check(_ name: String, _ got: String?, _ want: String?) {
                if got != want { problems.append("tcId \(tc.tcId): \(name) is \(got ?? "nil"), expected \(want ?? "nil")") }
            }
            check("canonicalURL", canonical, expected.canonicalURL)
            check("whash", whash.description, expected.whash)
            check("targetDigest", target.bytes.hex, expected.targetDigest)
            check("headersDigest", headersDigest?.bytes.hex, expected.headersDigest)
            check("signingInput", input.hex, expected.signingInput)
            check("whash header", headers.whash, expected.whash)
            if key.algorithm == .ed25519 && !deterministicEd25519 {
                func unsigned(_ token: String?) -> String? { token.map { String($0[..<($0.lastIndex(of: ".") ?? $0.endIndex)]) } }
                check("wtoken without its signature", unsigned(headers.wtoken), unsigned(expected.wtoken))
                let verifier = try Verifier(keys: KeySet([key.publicOnly()]), replayGuard: InMemoryReplayGuard(capacity: 10), maxLifetime: 86_400,
                                            allowsUnsignedBody: tc.allowUnsignedBody ?? false, requiredHeaders: try RequiredHeaders(),
                                            clock: { tc.created })
                do {
                    _ = try verifier.verifySynchronously(ReceivedRequest(method: method, url: tc.url, body: .bytes(body), headers: fields,
                                                                         whash: headers.whash, wtoken: headers.wtoken))
                } catch {
                    problems.append("tcId \(tc.tcId): the EdDSA token does not verify: \(error)")
                }
            } else {
                check("wtoken", headers.wtoken, expected.wtoken)
            }
            return problems
        } catch {
            return ["tcId \(tc.tcId): \(error)"]
        }
    }

    public static func verify(_ tc: WTokenVectors.VerifyCase, in file: WTokenVectors) async -> [String] {
        let replayGuard: InMemoryReplayGuard
        let verifier: Verifier
        var keys = KeySet()
        guard let body = BodySpec.bytes(of: tc.request.body) else { return ["tcId \(tc.tcId): bad body"] }
        do {
            replayGuard = try InMemoryReplayGuard(capacity: 1000, maxShare: 1)
            for name in tc.verifierKeys { try keys.add(try file.key(name)) }
            for seen in tc.seen ?? [] {
                guard let nonce = [UInt8](hex: seen.nonce).flatMap({ Nonce(bytes: $0) }) else { return ["tcId \(tc.tcId): bad nonce"] }
                try replayGuard.record(keyID: seen.kid, nonce: nonce, expires: seen.expires, now: tc.now)
            }
            let now = tc.now
            verifier = try Verifier(keys: keys, replayGuard: replayGuard, skew: tc.skew ?? 30, maxLifetime: tc.maxLifetime ?? 300,
                                    requireWhashHeader: tc.requireWhash ?? true, allowsUnsignedBody: tc.allowUnsignedBody ?? false,
                                    requiredHeaders: try RequiredHeaders(urlMethods: tc.requiredHeaders?.url ?? [],
                                                                         bodyMethods: tc.requiredHeaders?.body ?? []),
                                    clock: { now })
        } catch {
            return ["tcId \(tc.tcId): \(error)"]
        }
        let request = ReceivedRequest(method: tc.request.method, url: tc.request.url, body: .bytes(body),
                                      headers: (tc.request.headers ?? []).map { HeaderField($0[0], $0[1]) },
                                      whash: tc.request.whash, wtoken: tc.request.wtoken)
        let got: Outcome
        do {
            let v = try await verifier.verify(request)
            got = .valid("\(v.keyID) \(v.account) \(v.created) \(v.expires)")
        } catch {
            got = .invalid(error.code.name)
        }
        let want = tc.expected.map { Outcome.valid("\($0.keyID) \($0.account) \($0.created) \($0.expires)") }
            ?? Outcome(result: tc.result, expected: nil, error: tc.error)
        return compare(got, want, tc.tcId)
    }

    public static func jwk(_ tc: JWKVectors.Case) -> [String] {
        let got = Outcome {
            let key = try JWK.parseKey(tc.document)
            return "\(key.id) \(JWK.thumbprint(of: key)) \(key.algorithm.rawValue)"
        }
        let want = tc.expected.map { Outcome.valid("\($0.kid) \($0.thumbprint) \($0.alg)") }
            ?? Outcome(result: tc.result, expected: nil, error: tc.error)
        return compare(got, want, tc.tcId)
    }

    public static func jwkSet(_ tc: JWKVectors.SetCase) -> [String] {
        let got = Outcome { try KeySet(jwks: tc.document).ids.joined(separator: ",") }
        let want = tc.kids.map { Outcome.valid($0.joined(separator: ",")) } ?? Outcome(result: tc.result, expected: nil, error: tc.error)
        return compare(got, want, tc.tcId)
    }

    /// A message sign case (SPEC §10): the signing input byte for byte, and the signature byte
    /// for byte where it is deterministic (HS256; EdDSA on a deterministic backend), else one
    /// that verifies.
    public static func signMessage(_ tc: MessageVectors.SignCase, in file: MessageVectors,
                                   deterministicEd25519: Bool = SignCoreVersion.ed25519SignaturesAreDeterministic) -> [String] {
        guard let message = BodySpec.bytes(of: tc.message) else { return ["tcId \(tc.tcId): unknown message formula"] }
        let algorithm = (try? file.key(tc.key))?.algorithm
        let reproducible = algorithm == .hmacSHA256 || (algorithm == .ed25519 && deterministicEd25519)
        let got = Outcome {
            let key = try file.key(tc.key)
            let signature = try key.signMessage(message, context: tc.context)
            let input = try key.messageSigningInput(message, context: tc.context)
            try key.verifyMessage(message, signature: signature, context: tc.context)
            let inputText = input.count > 4096 ? "sha256:" + SHA256Hasher.hash(input).bytes.hex : input.hex
            return inputText + " " + (reproducible ? Base64URL.encode(signature) : "verifies")
        }
        let want = tc.expected.map { expected in
            let inputText = expected.signingInput ?? ("sha256:" + (expected.signingInputSHA256 ?? ""))
            return Outcome.valid(inputText + " " + (reproducible ? expected.signature : "verifies"))
        } ?? Outcome(result: tc.result, expected: nil, error: tc.error)
        var problems = compare(got, want, tc.tcId)
        // The stored signature (ES256 and hedged EdDSA included) verifies here too.
        if let expected = tc.expected, let key = try? file.key(tc.key), case let signature = base64url(expected.signature),
           (try? key.verifyMessage(message, signature: signature, context: tc.context)) == nil {
            problems.append("tcId \(tc.tcId): the stored signature does not verify")
        }
        return problems
    }

    /// A vector's base64url field as bytes; text that is not base64url decodes to nothing.
    static func base64url(_ text: String) -> [UInt8] {
        Array(text.utf8).withUnsafeBytes { Base64URL.decode($0) } ?? []
    }

    public static func verifyMessage(_ tc: MessageVectors.VerifyCase, in file: MessageVectors) -> [String] {
        guard let message = BodySpec.bytes(of: tc.message) else { return ["tcId \(tc.tcId): unknown message formula"] }
        let got = Outcome {
            try file.key(tc.key).verifyMessage(message, signature: Self.base64url(tc.signature), context: tc.context)
            return ""
        }
        return compare(got, Outcome(result: tc.result, expected: "", error: tc.error), tc.tcId)
    }

    /// Cases and problems per vector file.
    public struct Report: Sendable {
        public var cases: [String: Int] = [:]
        public var problems: [String] = []
        public var total: Int { cases.values.reduce(0, +) }
    }

    /// Every case of every vector file in `directory`.
    public static func all(in directory: URL = VectorFile.sourceDirectory) async throws -> Report {
        var report = Report()
        func add(_ file: String, _ count: Int, _ problems: [String]) {
            report.cases[file, default: 0] += count
            report.problems += problems.map { "\(file) \($0)" }
        }
        let urls: CanonicalURLVectors = try VectorFile.load(CanonicalURLVectors.fileName, from: directory)
        add(CanonicalURLVectors.fileName, urls.tests.count + urls.pairs.count,
            urls.tests.flatMap(canonicalURL) + urls.pairs.flatMap(canonicalPair))
        let whashes: WHashVectors = try VectorFile.load(WHashVectors.fileName, from: directory)
        add(WHashVectors.fileName, whashes.tests.count, whashes.tests.flatMap(whash))
        let tokens: WTokenVectors = try VectorFile.load(WTokenVectors.fileName, from: directory)
        var tokenProblems = tokens.sign.flatMap { sign($0, in: tokens) }
        for tc in tokens.verify { tokenProblems += await verify(tc, in: tokens) }
        add(WTokenVectors.fileName, tokens.sign.count + tokens.verify.count, tokenProblems)
        let jwks: JWKVectors = try VectorFile.load(JWKVectors.fileName, from: directory)
        add(JWKVectors.fileName, jwks.tests.count + jwks.sets.count, jwks.tests.flatMap(jwk) + jwks.sets.flatMap(jwkSet))
        let messages: MessageVectors = try VectorFile.load(MessageVectors.fileName, from: directory)
        add(MessageVectors.fileName, messages.sign.count + messages.verify.count,
            messages.sign.flatMap { signMessage($0, in: messages) } + messages.verify.flatMap { verifyMessage($0, in: messages) })
        return report
    }
}
