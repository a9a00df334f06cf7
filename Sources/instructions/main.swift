import CSignShim
import SignCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// A single-threaded driver for `valgrind --tool=callgrind` (scripts/instructions): it runs one
// operation `count` times inside a `measured…` function, the only code callgrind collects in, so the
// setup (keys, tokens signed in advance) is not counted, and ends with `_exit`, releasing nothing
// (an async function's caller resumes inside its frame, so a release would be counted).
// scripts/instructions runs it for two counts and divides the difference, which cancels what
// is left of fixed costs. Valgrind cannot run `bench`, whose concurrency starts worker
// threads; this driver is synchronous and starts none.

let usage = "usage: instructions sign|verify|verify-short-ids|canonicalize COUNT | sha256-path"
let arguments = CommandLine.arguments

// The short-message SHA-256 padding the engine runs (the shim's own or OpenSSL's: `short` or
// `library`), for the report. It is fixed unless a program sets it, so every count of the same
// binary takes the same path.
if arguments.count == 2, arguments[1] == "sha256-path" {
    guard sc_init() == 0 else {
        print("instructions: libsodium could not be initialised")
        exit(70)
    }
    print(sc_sha256_short_path() != 0 ? "short" : "library")
    exit(0)
}

guard arguments.count == 3, let count = Int(arguments[2]), count > 0 else {
    print(usage)
    exit(64)
}

let url = "https://api.example.com/v1/orders?id=42&sort=desc&q=caf%C3%A9"  // the bench's GET
let secret = (0..<32).map { UInt8($0 &* 7 &+ 1) }

/// Simulated seconds: the verify runs move it on by one every `perSecond` tokens, so tokens
/// expire and the replay guard runs in its steady state (expiry going on, no growth) while
/// it is counted.
nonisolated(unsafe) var simulatedNow: Int64 = 1_790_000_000
let perSecond = 500, lifetime: Int64 = 10
let simulatedClock: @Sendable () -> Int64 = { simulatedNow }

/// Warm-up tokens verified before the count: twice a lifetime's worth.
let warmUp = 2 * perSecond * Int(lifetime)

func makeVerifier(_ keys: [SigningKey]) throws -> Verifier {
    try Verifier(keys: KeySet(keys.map { try $0.publicOnly() }),
                 replayGuard: InMemoryReplayGuard(capacity: 1_000_000, maxShare: 1), clock: simulatedClock)
}

/// Token `index` is created at the simulated second it is verified in.
func signedRequests(_ signers: [Signer], _ count: Int) throws -> [ReceivedRequest] {
    try (0..<count).map { index in
        let headers = try signers[index % signers.count].sign(method: .get, url: url, created: second(of: index), nonce: .random())
        return ReceivedRequest(method: "GET", url: String(decoding: Array(url.utf8), as: UTF8.self),
                               whash: headers.whash, wtoken: headers.wtoken)
    }
}

func second(of index: Int) -> Int64 { 1_790_000_000 + Int64(index / perSecond) }

/// Verifies `requests[range]`, moving the clock on as it goes. (Each request is copied out of
/// the array for the call, so scripts/instructions counts only inside `verifySynchronously`.)
@inline(__always)
func verifyAll(_ verifier: Verifier, _ requests: [ReceivedRequest], _ range: Range<Int>) throws {
    for index in range {
        simulatedNow = second(of: index)
        _ = try verifier.verifySynchronously(requests[index])
    }
}

/// What the count must not see released: kept until the process ends.
nonisolated(unsafe) var keptAlive: [Any] = []

// Each operation's loop is its own function whose name starts with `measured`: the only code
// callgrind collects in (with everything it calls, and an async function's resumptions).

@inline(never)
func measuredSign(_ signer: Signer, _ count: Int) throws {
    for _ in 0..<count { _ = try signer.sign(method: .get, url: url) }
}

/// `verifySynchronously`: `verify`'s checks and in-process replay record, with no `await`
/// (an async main would hand the work to an executor thread).
@inline(never)
func measuredVerify(_ verifier: Verifier, _ requests: [ReceivedRequest]) throws {
    try verifyAll(verifier, requests, warmUp..<requests.count)
}

@inline(never)
func measuredCanonicalize(_ input: UnsafeRawBufferPointer, into out: inout [UInt8], _ count: Int) throws {
    for _ in 0..<count {
        out.removeAll(keepingCapacity: true)
        try CanonicalURL.write(input, into: &out)
    }
}

do {
    switch arguments[1] {
    case "sign":
        try measuredSign(try Signer(key: .hmac(secret: secret), lifetime: 60), count)
    case "verify", "verify-short-ids":
        // verify: one key with the default (thumbprint) id; verify-short-ids: 1000 keys with
        // ids of a few characters, tokens spread over all of them.
        let keys: [SigningKey] = arguments[1] == "verify"
            ? [try .hmac(secret: secret)]
            : try (0..<1000).map { i in try .hmac(secret: secret.map { $0 ^ UInt8(i & 0xFF) } + [UInt8(i >> 8)], id: "k\(i)") }
        let verifier = try makeVerifier(keys)
        let requests = try signedRequests(keys.map { try Signer(key: $0, lifetime: lifetime) }, warmUp + count)
        keptAlive = [verifier, requests]
        try verifyAll(verifier, requests, 0..<warmUp)
        try measuredVerify(verifier, requests)
    case "canonicalize":
        var out = [UInt8]()
        out.reserveCapacity(256)
        try Array(url.utf8).withUnsafeBytes { try measuredCanonicalize($0, into: &out, count) }
    default:
        print(usage)
        exit(64)
    }
} catch {
    print("instructions: \(error)")
    exit(70)
}
_exit(0)  // nothing released, no exit handlers
