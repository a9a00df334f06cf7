import Foundation
import Testing
@testable import SignCore

/// Every case of whash.json, wtoken.json and jwk.json (canonical_url.json: CanonicalURLTests).
@Suite struct VectorTests {
    @Test(arguments: try WHashVectors.load().tests)
    func whash(_ tc: WHashVectors.Case) throws {
        do {
            let method = try HTTPMethod(token: tc.method)
            let digest = try WHash.compute(method: method, url: tc.url ?? "", body: tc.body?.bytes ?? [])
            #expect(tc.result == "valid")
            #expect(digest.description == tc.expected)
            if method.contentClass == .body {
                // The incremental hasher, fed in uneven chunks, agrees with the one-shot value.
                var hasher = WHash.BodyHasher()
                let body = tc.body?.bytes ?? []
                var offset = 0, chunk = 1
                while offset < body.count {
                    let end = min(body.count, offset + chunk)
                    try hasher.append(Array(body[offset..<end]))
                    offset = end
                    chunk = chunk * 7 + 3
                }
                #expect(hasher.finalize() == digest)
            }
        } catch {
            #expect(tc.result == "invalid")
            #expect(error.code.name == tc.error)
        }
    }

    @Test(arguments: try WTokenVectors.load().sign)
    func sign(_ tc: WTokenVectors.SignCase) throws {
        let vectors = try WTokenVectors.load()
        let key = try JWK.parseKey(try vectors.jwk(tc.key))
        let method = try HTTPMethod(token: tc.method)
        let body = tc.body?.bytes ?? []
        let nonce = try #require([UInt8](hex: tc.nonce).flatMap { Nonce(bytes: $0) })

        let canonical = try CanonicalURL.canonicalize(tc.url)
        #expect(canonical == tc.expected.canonicalURL)
        let whash = try WHash.compute(method: method, url: tc.url, body: body)
        #expect(whash.description == tc.expected.whash)
        let target = Array(canonical.utf8).withUnsafeBytes { SigningInput.targetDigest(method: method, canonicalURL: $0) }
        #expect(target.bytes.hex == tc.expected.targetDigest)
        var input = [UInt8]()
        SigningInput.write(algorithm: key.algorithm, keyID: key.id, target: target, whash: whash, created: tc.created,
                           lifetime: tc.lifetime, nonce: nonce, account: tc.account, into: &input)
        #expect(input.hex == tc.expected.signingInput)

        let signer = try Signer(key: key, lifetime: tc.lifetime, account: tc.account)
        let headers = try signer.sign(method: method, url: tc.url, body: body, created: tc.created, nonce: nonce)
        #expect(headers.whash == tc.expected.whash)
        #expect(headers.wtoken == tc.expected.wtoken)
    }

    @Test(arguments: try WTokenVectors.load().verify)
    func verify(_ tc: WTokenVectors.VerifyCase) async throws {
        let vectors = try WTokenVectors.load()
        var keys = KeySet()
        for name in tc.verifierKeys { try keys.add(try JWK.parseKey(try vectors.jwk(name))) }
        let guardian = InMemoryReplayGuard()
        for hex in tc.seenNonces {
            let nonce = try #require([UInt8](hex: hex).flatMap { Nonce(bytes: $0) })
            try guardian.record(nonce: nonce, expires: .max, now: 0)
        }
        let now = tc.now
        let verifier = Verifier(keys: keys, replayGuard: guardian, skew: tc.skew, maxLifetime: tc.maxLifetime,
                                requireWhashHeader: tc.requireWhash, clock: { now })
        let request = ReceivedRequest(method: tc.request.method, url: tc.request.url, body: .bytes(tc.request.body?.bytes ?? []),
                                      whash: tc.request.whash, wtoken: tc.request.wtoken)
        do {
            let verified = try await verifier.verify(request)
            #expect(tc.result == "valid")
            let got = WTokenVectors.VerifyCase.Expected(keyID: verified.keyID, account: verified.account,
                                                        created: verified.created, expires: verified.expires)
            #expect(got == tc.expected)
        } catch {
            #expect(tc.result == "invalid")
            #expect(error.code.name == tc.error)
        }
    }

    @Test(arguments: try JWKVectors.load().tests)
    func jwk(_ tc: JWKVectors.Case) throws {
        do {
            let key = try JWK.parseKey(tc.jwk)
            #expect(tc.result == "valid")
            #expect(key.id == tc.expected?.kid)
            #expect(key.algorithm.rawValue == tc.expected?.alg)
            let thumbprint = JWK.thumbprint(algorithm: key.algorithm, publicKey: key.publicKey, hmacSecret: key.exportSecret() ?? [])
            #expect(thumbprint == tc.expected?.thumbprint)
        } catch {
            #expect(tc.result == "invalid")
            #expect(error.code.name == tc.error)
        }
    }

    @Test func vectorCounts() throws {
        let tokens = try WTokenVectors.load()
        let negatives = tokens.verify.filter { $0.result == "invalid" }
        #expect(negatives.count >= 20)
        #expect(Set(negatives.compactMap(\.error)).count >= 15)
        #expect(try WHashVectors.load().tests.count >= 7)
    }
}
