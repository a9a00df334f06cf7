import Foundation
import HTTPTypes
@_spi(SignCoreTools) import SignCore
import SignHTTP
import SignHTTPSignatures

/// RFC 9421's rows (docs/HTTPSIG.md): signing and verifying a request beside the crypto floor of
/// the same work (SHA-256 of the content for `Content-Digest`, then the MAC or signature of the
/// base), and beside PyPI's http-message-signatures 3.0.0 doing the same in the same run (the
/// reference peer: it verifies one signed request again and again, with no replay guard; ours
/// verifies fresh requests and records each nonce).
enum HTTPSignatureBench {
    static let getPath = "/v1/orders/12345?expand=items&limit=50"
    static let body = (0..<1024).map { UInt8(truncatingIfNeeded: $0) }

    static func cases() throws -> [BenchCase] {
        var cases: [BenchCase] = []
        for algorithm in SignatureAlgorithm.allCases {
            for post in [false, true] where !post || algorithm == .ed25519 {
                let size = post ? "1 KiB body" : "\(getPath.utf8.count) B path"
                let name = "\(algorithm.rawValue) \(post ? "POST" : "GET")"
                cases.append(BenchCase(operation: "RFC 9421 sign \(name)", size: size, target: nil) {
                    let fixture = try AlgorithmFixture(algorithm, id: "bench")
                    let (content, base, _) = try floorInputs(fixture, post: post)
                    return (sign(fixture.key, post: post), fixture.floorSign(content: content, input: base, prefixed: false))
                })
                cases.append(BenchCase(operation: "RFC 9421 verify \(name)", size: size, target: nil) {
                    let fixture = try AlgorithmFixture(algorithm, id: "bench")
                    let (content, base, signature) = try floorInputs(fixture, post: post)
                    return (try verify(fixture, post: post),
                            try fixture.floorVerify(content: content, input: base, signature: signature, prefixed: false, what: name))
                })
            }
        }
        // The reference peer, for the same requests: Python's time as the floor column.
        for (algorithm, peerName) in [(SignatureAlgorithm.hmacSHA256, "hmac-sha256"), (.ed25519, "ed25519")] {
            for post in [false, true] {
                let name = "\(algorithm.rawValue) \(post ? "POST" : "GET")"
                for verb in ["sign", "verify"] {
                    cases.append(BenchCase(operation: "RFC 9421 \(verb) \(name) vs Python", size: post ? "1 KiB body" : "\(getPath.utf8.count) B path",
                                           target: nil, floorNote: "http-message-signatures 3.0.0") {
                        let fixture = try AlgorithmFixture(algorithm, id: "bench")
                        let peer = try PythonPeer(verb, algorithm: peerName, post: post, secret: fixture.seed)
                        return (verb == "sign" ? sign(fixture.key, post: post) : try verify(fixture, post: post), peer.timed)
                    })
                }
            }
        }
        return cases
    }

    static func request(post: Bool) -> HTTPRequest {
        HTTPRequest(method: post ? .post : .get, scheme: "https", authority: "api.example.com", path: post ? "/v1/orders" : getPath,
                    headerFields: [.contentType: "application/json"])
    }

    /// `MessageSigner.sign` of the request: `Content-Digest` of the body for a POST, the base, the signature, the fields.
    static func sign(_ key: SigningKey, post: Bool) -> Timed {
        let signer = MessageSigner(key: key)
        let template = request(post: post)
        return { iterations in
            await parallel(workers: 1) { _ in
                for _ in 0..<iterations {
                    var request = template
                    do throws(SignCoreError) { try await signer.sign(&request, body: post ? body : []) } catch { fatalError("sign failed: \(error)") }
                }
            }
        }
    }

    /// `MessageSignatureVerifier.verify` of freshly signed requests (their `Content-Digest`
    /// computed over the body as a server does), each nonce recorded in the replay guard.
    static func verify(_ fixture: AlgorithmFixture, post: Bool) throws -> Timed {
        let checker = MessageSignatureVerifier(fixture.verifier)
        let signer = MessageSigner(key: fixture.key)
        let origin = ServerOrigin(scheme: "https")
        let content = post ? body : []
        return { iterations in
            var batch: [HTTPRequest] = []
            batch.reserveCapacity(iterations)
            for _ in 0..<iterations {
                var request = request(post: post)
                do throws(SignCoreError) { try await signer.sign(&request, body: content) } catch { fatalError("sign failed: \(error)") }
                batch.append(request)
            }
            let signed = batch
            return await parallel(workers: 1) { _ in
                for request in signed {
                    do throws(SignCoreError) {
                        var digest = try checker.bodyDigest(for: request, limit: .max)
                        let appended: Result<Void, SignCoreError> = content.withUnsafeBytes { bytes in
                            Result { () throws(SignCoreError) in try digest.append(bytes) }
                        }
                        try appended.get()
                        _ = try await checker.verify(request, bodyDigest: digest.finalize(), origin: origin)
                    } catch { fatalError("verify failed: \(error)") }
                }
            }
        }
    }

    /// The content hashed, the base and its signature for one signed request.
    static func floorInputs(_ fixture: AlgorithmFixture, post: Bool) throws -> (content: [UInt8], base: [UInt8], signature: [UInt8]) {
        let (base, signature) = try BlockingSign.run {
            var request = request(post: post)
            try await MessageSigner(key: fixture.key).sign(&request, body: post ? body : [])
            let fields = try SignatureFields(request.headerFields)
            guard let entry = fields.entries.first, let signature = entry.signature else { throw BenchError("no signature") }
            let base = try SignatureBase.make(entry.parameters, message: MessageComponents(request: try .init(request, origin: ServerOrigin(scheme: "https"))))
            return (base, signature)
        }
        return (post ? body : [], base, signature)
    }
}

/// Runs an async closure to completion from synchronous code (the bench's case makers are synchronous).
enum BlockingSign {
    static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let value = try await body()
                result.withLock { $0 = .success(value) }
            } catch { result.withLock { $0 = .failure(error) } }
            done.signal()
        }
        done.wait()
        guard let outcome = result.withLock({ $0 }) else { throw BenchError("no result") }
        return try outcome.get()
    }
}

/// scripts/httpsig-peer-bench, started once per row: each sample is a line with an iteration
/// count, answered with the seconds its loop took.
final class PythonPeer: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe(), output = Pipe()
    private let lock = NSLock()

    init(_ verb: String, algorithm: String, post: Bool, secret: [UInt8]) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/httpsig-peer-bench")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, verb, algorithm, post ? "POST" : "GET", Base64URL.encode(secret)]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    var timed: Timed {
        { [self] iterations in lock.withLock { exchange(iterations) } }
    }

    private func exchange(_ iterations: Int) -> Double {
        input.fileHandleForWriting.write(Data("\(iterations)\n".utf8))
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line += byte
        }
        guard let seconds = Double(String(decoding: line, as: UTF8.self)) else { fatalError("the Python peer did not answer (is http-message-signatures installed?)") }
        return seconds
    }
}
