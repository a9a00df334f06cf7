import Testing
import SignCore
import SignCoreVectors

extension CanonicalURLVectors.Case: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension CanonicalURLVectors.Pair: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension WHashVectors.Case: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension WTokenVectors.SignCase: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension WTokenVectors.VerifyCase: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension JWKVectors.Case: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension MessageVectors.SignCase: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension MessageVectors.VerifyCase: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension JWKVectors.SetCase: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }

/// Every case of every file in `Vectors/`, one test argument per case.
@Suite struct VectorTests {
    static func urls() throws -> CanonicalURLVectors { try VectorFile.load(CanonicalURLVectors.fileName) }
    static func whashes() throws -> WHashVectors { try VectorFile.load(WHashVectors.fileName) }
    static func tokens() throws -> WTokenVectors { try VectorFile.load(WTokenVectors.fileName) }
    static func jwks() throws -> JWKVectors { try VectorFile.load(JWKVectors.fileName) }
    static func messages() throws -> MessageVectors { try VectorFile.load(MessageVectors.fileName) }

    @Test(arguments: try urls().tests) func canonicalURL(_ tc: CanonicalURLVectors.Case) { #expect(VectorCheck.canonicalURL(tc) == []) }
    @Test(arguments: try urls().pairs) func canonicalPair(_ tc: CanonicalURLVectors.Pair) { #expect(VectorCheck.canonicalPair(tc) == []) }
    @Test(arguments: try whashes().tests) func whash(_ tc: WHashVectors.Case) { #expect(VectorCheck.whash(tc) == []) }
    @Test(arguments: try tokens().sign) func sign(_ tc: WTokenVectors.SignCase) throws { #expect(VectorCheck.sign(tc, in: try Self.tokens()) == []) }
    /// The check CryptoKit's hedged Ed25519 gets (everything but the signature compared, the
    /// signature verified), run here too so that it is known to pass and to fail.
    @Test func hedgedEd25519SignCheck() throws {
        let file = try Self.tokens()
        let eddsa = file.sign.filter { $0.expected != nil && (try? file.key($0.key).algorithm) == .ed25519 }
        #expect(!eddsa.isEmpty)
        for tc in eddsa { #expect(VectorCheck.sign(tc, in: file, deterministicEd25519: false) == []) }
        var wrong = try #require(eddsa.first)
        wrong.created += 1  // another creation time: the token no longer matches
        #expect(VectorCheck.sign(wrong, in: file, deterministicEd25519: false) != [])
    }
    @Test(arguments: try tokens().verify) func verify(_ tc: WTokenVectors.VerifyCase) async throws { #expect(await VectorCheck.verify(tc, in: try Self.tokens()) == []) }
    @Test(arguments: try jwks().tests) func jwk(_ tc: JWKVectors.Case) { #expect(VectorCheck.jwk(tc) == []) }
    @Test(arguments: try jwks().sets) func jwkSet(_ tc: JWKVectors.SetCase) { #expect(VectorCheck.jwkSet(tc) == []) }

    @Test(arguments: try messages().sign) func signMessage(_ tc: MessageVectors.SignCase) throws {
        #expect(VectorCheck.signMessage(tc, in: try Self.messages()) == [])
        // Where Ed25519 is hedged (CryptoKit), the check still holds: the input matches, the signature verifies.
        #expect(VectorCheck.signMessage(tc, in: try Self.messages(), deterministicEd25519: false) == [])
    }
    @Test(arguments: try messages().verify) func verifyMessage(_ tc: MessageVectors.VerifyCase) throws {
        #expect(VectorCheck.verifyMessage(tc, in: try Self.messages()) == [])
    }

    @Test func coverage() throws {
        let urls = try Self.urls(), tokens = try Self.tokens()
        #expect(urls.tests.count >= 40)
        #expect(urls.pairs.contains { $0.result == "same" } && urls.pairs.contains { $0.result == "different" })
        #expect(Set(try Self.whashes().tests.map(\.method)).isSuperset(of: ["GET", "HEAD", "OPTIONS", "DELETE", "POST", "PUT", "PATCH"]))
        let negatives = tokens.verify.filter { $0.result == "invalid" }
        #expect(negatives.count >= 20)
        #expect(Set(negatives.compactMap(\.error)).count >= 15)
        #expect(tokens.verify.contains { $0.request.wtoken?.contains(".") == true && $0.result == "valid" && $0.comment.contains("ES256") })
    }
}
