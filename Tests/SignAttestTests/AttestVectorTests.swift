import Foundation
import SignAttest
import SignCore
import Testing

/// `Vectors/attest.json` (docs/ATTEST.md §8), every case, refusals included: the same file the
/// Python reference checks, so the two implementations agree byte for byte.
@Suite struct AttestVectorTests {
    static let file: VectorFile = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/attest.json")
        do { return try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: url)) } catch { fatalError("attest.json: \(error)") }
    }()

    struct VectorFile: Decodable {
        let keys: [String: [String: String]]
        let challenge: [ChallengeCase]
        let redeem: [RedeemCase]
        let token: [TokenCase]
        let check: [CheckCase]

        func key(_ name: String) throws -> SigningKey {
            let json = try JSONSerialization.data(withJSONObject: try #require(keys[name]), options: [.sortedKeys])
            return try JWK.parseKey(String(decoding: json, as: UTF8.self))
        }

        func keySet(_ one: String?, _ many: [String]?) throws -> AttestationKeys {
            try AttestationKeys((many ?? [try #require(one)]).map(key))
        }
    }

    struct ChallengeCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?
        let serverKey: String?, serverKeys: [String]?
        let type: Int, difficulty: Int, count: Int, levels: Int, issuedAt: UInt64, ttl: Int, minElapsed: Int
        let clientKey: String, origin: String, random: String, solve: Bool?
        let expected: [String: String]?
    }

    struct RedeemCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?, retryAfter: UInt64?
        let serverKeys: [String], body: String?, bodyHex: String?, clientKey: String, origin: String, now: UInt64, skew: UInt64?
        let redeemed: [String]?
        let expected: Expected?
        struct Expected: Decodable { let id: String, levels: UInt16 }
    }

    struct TokenCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?
        let serverKey: String?, serverKeys: [String]?
        let levels: Int, issuedAt: UInt64, ttl: Int, clientKey: String, origin: String, tokenID: String, now: UInt64
        let expected: [String: String]?
    }

    struct CheckCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?
        let serverKeys: [String], field: String, clientKey: String, covered: [String]?, origin: String, now: UInt64, skew: UInt64?
        let required: UInt16
        let expected: Expected?
        struct Expected: Decodable { let levels: UInt16, issuedAt: UInt64, expires: UInt64, tokenID: String }
    }

    static func origin(_ url: String) throws -> String {
        try #require(AttestationScope.origin(ofCanonicalURL: try CanonicalURL.canonicalize(url)))
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = [], index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    /// The outcome's error name, or nil when it succeeded.
    static func outcome<T>(_ body: () throws(SignCoreError) -> T) -> (T?, String?) {
        do { return (try body(), nil) } catch { return (nil, error.code.name) }
    }

    @Test func challengeCases() throws {
        let file = Self.file
        #expect(file.challenge.count >= 29)
        for test in file.challenge {
            let context = "tcId \(test.tcId): \(test.comment)"
            guard let kind = UInt8(exactly: test.type), let levels = UInt16(exactly: test.levels) else {
                // Not expressible in the typed API: a value outside its field is refused by the type.
                #expect(test.error == "invalidConfiguration", "\(context)")
                continue
            }
            let client = try file.key(test.clientKey)
            let origin = try Self.origin(test.origin)
            let (made, error) = Self.outcome { () throws(SignCoreError) -> Challenge in
                let keys: AttestationKeys
                do { keys = try file.keySet(test.serverKey, test.serverKeys) } catch { throw error as? SignCoreError ?? SignCoreError(.invalidKey, "") }
                return try Challenge(kind: .init(rawValue: kind), difficulty: test.difficulty, count: test.count,
                                     levels: AttestationLevels(rawValue: levels), issuedAt: test.issuedAt, ttl: test.ttl, minElapsed: test.minElapsed,
                                     keyThumbprint: AttestationScope.keyThumbprint(of: client),
                                     originDigest: AttestationScope.originDigest(origin), random: Self.bytes(hex: test.random),
                                     key: try keys.issuingChallengeKey())
            }
            guard test.result == "valid" else {
                #expect(error == test.error, "\(context)")
                continue
            }
            let challenge = try #require(made, "\(context): \(error ?? "")")
            let expected = try #require(test.expected)
            #expect(Self.hex(challenge.keyThumbprint) == expected["keyThumbprint"], "\(context)")
            #expect(Self.hex(challenge.originDigest) == expected["originDigest"], "\(context)")
            #expect(Self.hex(challenge.body) == expected["body"], "\(context)")
            #expect(Self.hex(challenge.tag) == expected["tag"], "\(context)")
            #expect(Self.hex(challenge.id.bytes) == expected["id"], "\(context)")
            #expect(Self.hex(ProofOfWork.prefix(of: challenge).bytes) == expected["prefix"], "\(context)")
            #expect(challenge.text == expected["challenge"], "\(context)")
            #expect(try Challenge(parsing: challenge.text) == challenge, "\(context)")
            if test.solve == true {
                let answer = ProofOfWork.smallestAnswer(for: challenge)
                #expect(Base64URL.encode(answer) == expected["answer"], "\(context)")
                #expect(ProofOfWork.isValid(answer, for: challenge), "\(context)")
            }
        }
    }

    @Test func redeemCases() async throws {
        let file = Self.file
        #expect(file.redeem.count >= 132)
        for test in file.redeem {
            let context = "tcId \(test.tcId): \(test.comment)"
            let store = InMemoryRedemptionStore()
            for id in test.redeemed ?? [] {
                _ = try await store.redeem(try #require(SHA256Digest(bytes: Self.bytes(hex: id))), expiresAt: .max, now: 0)
            }
            let body = test.bodyHex.map(Self.bytes(hex:)) ?? Array((test.body ?? "").utf8)
            let thumbprint = AttestationScope.keyThumbprint(of: try file.key(test.clientKey))
            let origin = try Self.origin(test.origin)
            var error: String?
            var token: AttestationToken?
            do {
                let attestor = try Attestor(keys: try file.keySet(nil, test.serverKeys), redemptions: store, skew: test.skew ?? 5000)
                token = try await attestor.redeem(body, keyThumbprint: thumbprint, origin: origin, now: test.now)
            } catch let failure as SignCoreError { error = failure.code.name }
            guard test.result == "valid" else {
                #expect(error == test.error, "\(context)")
                if let retryAfter = test.retryAfter {
                    let challenge = try AttestRequest(body: body).challenge
                    #expect(challenge.secondsUntilRedeemable(now: test.now) == retryAfter, "\(context)")
                }
                continue
            }
            let issued = try #require(token, "\(context): \(error ?? "")")
            let expected = try #require(test.expected)
            #expect(issued.levels.rawValue == expected.levels, "\(context)")
            let id = try AttestRequest(body: body).challenge.id
            #expect(Self.hex(id.bytes) == expected.id, "\(context)")
            #expect(try await !store.redeem(id, expiresAt: .max, now: test.now), "\(context): the id is recorded")
            #expect(issued.issuedAt == test.now && issued.keyThumbprint == thumbprint, "\(context)")
        }
    }

    @Test func tokenCases() throws {
        let file = Self.file
        for test in file.token {
            let context = "tcId \(test.tcId): \(test.comment)"
            guard let levels = UInt16(exactly: test.levels) else {
                #expect(test.error == "invalidConfiguration", "\(context)")
                continue
            }
            let client = try file.key(test.clientKey)
            let origin = try Self.origin(test.origin)
            let (made, error) = Self.outcome { () throws(SignCoreError) -> AttestationToken in
                let keys: AttestationKeys
                do { keys = try file.keySet(test.serverKey, test.serverKeys) } catch { throw error as? SignCoreError ?? SignCoreError(.invalidKey, "") }
                return try AttestationToken(levels: AttestationLevels(rawValue: levels), issuedAt: test.issuedAt, ttl: test.ttl,
                                            keyThumbprint: AttestationScope.keyThumbprint(of: client),
                                            originDigest: AttestationScope.originDigest(origin), tokenID: Self.bytes(hex: test.tokenID),
                                            key: try keys.issuingTokenKey())
            }
            guard test.result == "valid" else {
                #expect(error == test.error, "\(context)")
                continue
            }
            let token = try #require(made, "\(context): \(error ?? "")")
            let expected = try #require(test.expected)
            #expect(Self.hex(token.body) == expected["body"], "\(context)")
            #expect(token.text == expected["token"], "\(context)")
            #expect(String(decoding: AttestResponse(token: token, now: test.now).body, as: UTF8.self) == expected["response"], "\(context)")
        }
    }

    @Test func checkCases() throws {
        let file = Self.file
        #expect(file.check.count >= 77)
        for test in file.check {
            let context = "tcId \(test.tcId): \(test.comment)"
            let thumbprint = AttestationScope.keyThumbprint(of: try file.key(test.clientKey))
            let origin = try Self.origin(test.origin)
            let attestor = try Attestor(keys: try file.keySet(nil, test.serverKeys), redemptions: InMemoryRedemptionStore(),
                                        skew: test.skew ?? 5000)
            let (checked, error) = Self.outcome { () throws(SignCoreError) -> AttestationToken in
                try attestor.checkToken(test.field, keyThumbprint: thumbprint, coveredHeaders: test.covered ?? ["attest-token"],
                                        origin: origin, now: test.now, required: AttestationLevels(rawValue: test.required))
            }
            guard test.result == "valid" else {
                #expect(error == test.error, "\(context)")
                continue
            }
            let token = try #require(checked, "\(context): \(error ?? "")")
            let expected = try #require(test.expected)
            #expect(token.levels.rawValue == expected.levels && token.issuedAt == expected.issuedAt, "\(context)")
            #expect(token.expiresAt == expected.expires && Self.hex(token.tokenID) == expected.tokenID, "\(context)")
        }
    }
}
