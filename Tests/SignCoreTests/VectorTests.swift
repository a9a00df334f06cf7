import Testing
import SignCore
import SignCoreVectors

extension CanonicalURLVectors.Case: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension CanonicalURLVectors.Pair: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension WHashVectors.Case: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension WTokenVectors.SignCase: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension WTokenVectors.VerifyCase: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }
extension JWKVectors.Case: CustomTestStringConvertible { public var testDescription: String { "tcId \(tcId): \(comment)" } }

/// Every case of every file in `Vectors/`, one test argument per case.
@Suite struct VectorTests {
    static let urls: CanonicalURLVectors = try! VectorFile.load(CanonicalURLVectors.fileName)
    static let whashes: WHashVectors = try! VectorFile.load(WHashVectors.fileName)
    static let tokens: WTokenVectors = try! VectorFile.load(WTokenVectors.fileName)
    static let jwks: JWKVectors = try! VectorFile.load(JWKVectors.fileName)

    @Test(arguments: urls.tests) func canonicalURL(_ tc: CanonicalURLVectors.Case) { #expect(VectorCheck.canonicalURL(tc) == []) }
    @Test(arguments: urls.pairs) func canonicalPair(_ tc: CanonicalURLVectors.Pair) { #expect(VectorCheck.canonicalPair(tc) == []) }
    @Test(arguments: whashes.tests) func whash(_ tc: WHashVectors.Case) { #expect(VectorCheck.whash(tc) == []) }
    @Test(arguments: tokens.sign) func sign(_ tc: WTokenVectors.SignCase) { #expect(VectorCheck.sign(tc, in: Self.tokens) == []) }
    @Test(arguments: tokens.verify) func verify(_ tc: WTokenVectors.VerifyCase) async { #expect(await VectorCheck.verify(tc, in: Self.tokens) == []) }
    @Test(arguments: jwks.tests) func jwk(_ tc: JWKVectors.Case) { #expect(VectorCheck.jwk(tc) == []) }

    @Test func coverage() {
        #expect(Self.urls.tests.count >= 40)
        #expect(Self.urls.pairs.contains { $0.result == "same" } && Self.urls.pairs.contains { $0.result == "different" })
        #expect(Set(Self.whashes.tests.map(\.method)).isSuperset(of: ["GET", "HEAD", "OPTIONS", "DELETE", "POST", "PUT", "PATCH"]))
        let negatives = Self.tokens.verify.filter { $0.result == "invalid" }
        #expect(negatives.count >= 20)
        #expect(Set(negatives.compactMap(\.error)).count >= 15)
        #expect(Self.tokens.verify.contains { $0.request.wtoken?.contains(".") == true && $0.result == "valid" && $0.comment.contains("ES256") })
    }
}
