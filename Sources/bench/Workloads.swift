import CBench
import Dispatch
import SignCore

/// The requests every sign and verify row uses.
struct RequestFixture: Sendable {
    var name: String
    var size: String
    var method: RequestMethod
    var url: String
    var body: [UInt8]

    static let getURL = "https://api.example.com/v1/orders?id=42&sort=desc&q=caf%C3%A9"
    static let all = [
        RequestFixture(name: "GET", size: "\(getURL.utf8.count) B URL", method: .get, url: getURL, body: []),
        RequestFixture(name: "POST", size: "1 KiB", method: .post, url: "https://api.example.com/v1/orders", body: pattern(1 << 10)),
        RequestFixture(name: "POST", size: "1 MiB", method: .post, url: "https://api.example.com/v1/orders", body: pattern(1 << 20)),
    ]

    /// What the whash covers: the canonical URL (GET) or the body (POST).
    var content: [UInt8] {
        get throws { method == .get ? try CanonicalURL.canonicalBytes(Array(url.utf8)) : body }
    }
}

/// Deterministic filler bytes (byte i = i mod 251, as in the vectors).
func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8($0 % 251) } }

/// A URL built to be slow to canonicalise: upper-case scheme and host, default port, escapes
/// that decode and re-encode, dot segments, non-ASCII, and 240 query pairs in reverse order.
let hostileURL: String = {
    var url = "HTTPS://API.Example.COM:443/a/./b/../%7Euser/caf%C3%A9/na%C3%AFve/%e2%82%ac/x+y/(1)/"
    url += String(repeating: "seg%20ment/", count: 20)
    url += "?"
    for i in stride(from: 239, through: 0, by: -1) {
        url += "k%C3%A9y\(i)=v+a%2Fl%20ue\(i)&"
    }
    return url
}()

/// One signature algorithm: the engine's keys and the same keys prepared for the floor.
final class AlgorithmFixture: @unchecked Sendable {
    let name: String
    let key: SigningKey
    let verifier: Verifier
    private let hmac: OpaquePointer?
    /// The HMAC key without SignCore's signing-input prefix: RFC 9421 signs the base alone.
    private var rawHMAC: OpaquePointer?
    private var edSecret: [UInt8] = [], edPublic: [UInt8] = []
    private let p256: OpaquePointer?

    /// The secret bytes: the HMAC secret, the Ed25519 seed or the P-256 scalar.
    let seed: [UInt8]

    init(_ algorithm: SignatureAlgorithm, id: String? = nil) throws {
        let seed = pattern(32).map { $0 &+ UInt8(algorithm.rawValue.utf8.count) &* 7 }
        self.seed = seed
        name = algorithm.rawValue
        switch algorithm {
        case .hmacSHA256:
            key = try .hmac(secret: seed, id: id)
            let prefix = try Self.signingInputPrefix(key)
            hmac = seed.withUnsafeBytes { s in prefix.withUnsafeBytes { bench_hmac_key_new(s.baseAddress, s.count, $0.baseAddress, $0.count) } }
            rawHMAC = seed.withUnsafeBytes { bench_hmac_key_new($0.baseAddress, $0.count, nil, 0) }
            p256 = nil
        case .ed25519:
            key = try .ed25519(seed: seed)
            var secret = [UInt8](repeating: 0, count: 64), publicKey = [UInt8](repeating: 0, count: 32)
            let rc = seed.withUnsafeBytes { s in
                publicKey.withUnsafeMutableBytes { p in secret.withUnsafeMutableBytes { bench_ed25519_keypair(s.baseAddress, p.baseAddress, $0.baseAddress) } }
            }
            guard rc == 0 else { throw BenchError("libsodium refused the Ed25519 seed") }
            edSecret = secret
            edPublic = publicKey
            hmac = nil
            p256 = nil
        case .p256:
            key = try .p256(privateKey: seed)
            p256 = seed.withUnsafeBytes { bench_p256_key_new($0.baseAddress) }
            hmac = nil
        }
        verifier = try Verifier(keys: try KeySet([key.publicOnly()]), replayGuard: try Self.replayGuard())
    }

    /// A replay guard big enough for every token the fastest row verifies within a token lifetime
    /// (10 s, `signer()`): 48 million nonces, 4.8 M verifies a second on two threads. Its tables
    /// grow only with what they hold. (8 million was full within a filtered run's 2-thread row.)
    static func replayGuard() throws -> InMemoryReplayGuard { try InMemoryReplayGuard(capacity: 48_000_000, maxShare: 1) }

    /// The bytes every signing input under `key` starts with (SPEC §4.2: the fixed text, the
    /// algorithm and the key id, each length-prefixed), which the engine absorbs once per key.
    static func signingInputPrefix(_ key: SigningKey) throws -> [UInt8] {
        let zero = SHA256Digest(bytes: [UInt8](repeating: 0, count: 32))!
        let input = try SigningInput.bytes(algorithm: key.algorithm, keyID: key.id, target: zero, whash: zero,
                                           created: 0, lifetime: 1, nonce: Nonce.random(), account: "")
        return Array(input.prefix(18 + 1 + key.algorithm.rawValue.utf8.count + 1 + key.id.utf8.count))
    }

    deinit {
        bench_hmac_key_free(hmac)
        bench_hmac_key_free(rawHMAC)
        bench_p256_key_free(p256)
    }

    /// A signer whose tokens live 10 s: long enough for a sample, short enough that the
    /// replay guard reaches a steady state of expiring nonces, as a server's does.
    func signer() throws -> Signer { try Signer(key: key, lifetime: 10) }

    /// Seconds of verifies that bring the replay guard to its steady state before an HMAC
    /// verify row is measured (0 in quick runs): one token lifetime and one second more, so
    /// that seconds of expiry are dropped and their tables reused as in a server that has run
    /// a while (the guard at scale measures the filling separately).
    nonisolated(unsafe) static var warmUpSeconds = 11.0
    /// When this fixture's guard was last brought to its steady state (uptime, ns).
    private var warmedAt: UInt64?

    /// Brings this fixture's guard to its steady state before a GET row measures it (HMAC only:
    /// the curves' verifies are too slow for their guard to leave the caches), unless it was
    /// warmed a moment ago (the two sides of a 2-thread row share it). Between the rows that
    /// use it the guard sits idle until every second in it has expired and their tables are
    /// released: a row measured then would pay for faulting in fresh ones as it fills.
    func warmUpGuard(_ request: RequestFixture) throws {
        guard key.algorithm == .hmacSHA256, request.name == "GET" else { return }
        if let warmedAt, DispatchTime.now().uptimeNanoseconds - warmedAt < 1_000_000_000 { return }
        let signer = try signer()
        let requests: @Sendable (Int) throws -> [ReceivedRequest] = { count in try Catalogue.signedRequests(signer, request, count: count) }
        try Self.warmUp([(verifier, requests)])
        warmedAt = DispatchTime.now().uptimeNanoseconds
    }

    /// A verifier and the fresh requests it is given, in batches.
    typealias Side = (verifier: Verifier, requests: @Sendable (Int) throws -> [ReceivedRequest])

    /// Verifies batches of fresh requests for `warmUpSeconds`, the sides in turn, as a row
    /// measures them: each guard fills at the rate it is measured at, and none sits idle long
    /// enough for its seconds to expire.
    static func warmUp(_ sides: [Side]) throws {
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(warmUpSeconds * 1e9)
        while DispatchTime.now().uptimeNanoseconds < end {
            for side in sides {
                for received in try side.requests(10_000) { _ = try side.verifier.verifySynchronously(received) }
            }
        }
    }

    /// The floor of a whole sign of `request`: SHA-256 of its content, then the MAC or signature
    /// over the signing input the engine builds for it.
    func floorSign(_ request: RequestFixture) throws -> Timed {
        let (content, input, _) = try floorInputs(request)
        return floorSign(content: content, input: input, prefixed: true)
    }

    /// SHA-256 of `content`, then the MAC or signature of `input` (`prefixed`: with SignCore's
    /// signing-input prefix for an HMAC key, as the engine's wtoken input has it).
    func floorSign(content: [UInt8], input: [UInt8], prefixed: Bool) -> Timed {
        { [self] iterations in
            let hmac = prefixed ? self.hmac : rawHMAC
            var failures = 0
            let seconds = content.withUnsafeBytes { c in
                input.withUnsafeBytes { i in
                    withUnsafeTemporaryAllocation(byteCount: 64, alignment: 16) { out in
                        time(iterations) {
                            let rc: Int32 = switch key.algorithm {
                            case .hmacSHA256: bench_floor_sign_hmac(hmac, c.baseAddress, c.count, i.baseAddress, i.count, out.baseAddress)
                            case .ed25519: edSecret.withUnsafeBytes { bench_floor_sign_ed25519($0.baseAddress, c.baseAddress, c.count, i.baseAddress, i.count, out.baseAddress) }
                            case .p256: bench_floor_sign_p256(p256, c.baseAddress, c.count, i.baseAddress, i.count, out.baseAddress)
                            }
                            if rc != 0 { failures += 1 }
                        }
                    }
                }
            }
            precondition(failures == 0, "floor sign failed")
            return seconds
        }
    }

    /// The floor of a whole verify: the same hashing, then the compare or signature check.
    func floorVerify(_ request: RequestFixture) throws -> Timed {
        let (content, input, signature) = try floorInputs(request)
        return try floorVerify(content: content, input: input, signature: signature, prefixed: true, what: request.name)
    }

    /// SHA-256 of `content`, then the check of `signature` over `input` (`prefixed` as in `floorSign`).
    func floorVerify(content: [UInt8], input: [UInt8], signature: [UInt8], prefixed: Bool, what: String) throws -> Timed {
        let prepared = PreparedSignature(key.algorithm == .p256 ? signature : nil)
        let check: @Sendable (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Int32 = { [self] c, i in
            let hmac = prefixed ? self.hmac : rawHMAC
            return signature.withUnsafeBytes { s in
                switch key.algorithm {
                case .hmacSHA256: bench_floor_verify_hmac(hmac, c.baseAddress, c.count, i.baseAddress, i.count, s.baseAddress)
                case .ed25519: edPublic.withUnsafeBytes { bench_floor_verify_ed25519($0.baseAddress, c.baseAddress, c.count, i.baseAddress, i.count, s.baseAddress) }
                case .p256: bench_floor_verify_p256(p256, c.baseAddress, c.count, i.baseAddress, i.count, prepared.pointer)
                }
            }
        }
        let valid = content.withUnsafeBytes { c in input.withUnsafeBytes { i in check(c, i) } }
        guard valid == 0 else { throw BenchError("the floor does not accept the engine's signature for \(name) \(what)") }
        return { iterations in
            var failures = 0
            let seconds = content.withUnsafeBytes { c in
                input.withUnsafeBytes { i in time(iterations) { if check(c, i) != 0 { failures += 1 } } }
            }
            precondition(failures == 0, "floor verify failed")
            return seconds
        }
    }

    /// The content, the signing input and the engine's signature for one fixed token.
    private func floorInputs(_ request: RequestFixture) throws -> (content: [UInt8], input: [UInt8], signature: [UInt8]) {
        let signer = try signer()
        let nonce = Nonce.random(), created = SystemClock.seconds()
        let headers = try signer.sign(method: request.method, url: request.url, body: request.body, created: created, nonce: nonce)
        let token = try WToken(parsing: headers.wtoken)
        let canonical = try CanonicalURL.canonicalBytes(Array(request.url.utf8))
        let target = canonical.withUnsafeBytes { SigningInput.targetDigest(method: request.method, canonicalURL: $0) }
        let whash = try WHash.compute(method: request.method, url: request.url, body: request.body)
        let input = try SigningInput.bytes(algorithm: key.algorithm, keyID: key.id, target: target, whash: whash,
                                       created: created, lifetime: signer.lifetime, nonce: nonce, account: signer.account)
        return (try request.content, input, token.signature)
    }
}

/// An ECDSA signature parsed once into OpenSSL's form, for the P-256 verify floor.
final class PreparedSignature: @unchecked Sendable {
    let pointer: OpaquePointer?
    init(_ signature: [UInt8]?) {
        pointer = signature.flatMap { s in s.withUnsafeBytes { bench_p256_signature_new($0.baseAddress) } }
    }
    deinit { bench_p256_signature_free(pointer) }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
