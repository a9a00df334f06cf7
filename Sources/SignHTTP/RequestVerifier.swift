import HTTPTypes
@_spi(SignCoreTools) import SignCore

/// What checks a request's proof for a server middleware (`SignatureMiddleware`): the wtoken
/// `Verifier` (`WTokenRequestVerifier`) today, an RFC 9421 verifier or a device-key verifier in
/// the flows to come. The middleware reads the body (collected, or streamed and checked against
/// the digest the request claims), then hands the head and the body's digest here.
public protocol RequestVerifier: Sendable {
    /// How the body is digested: the whash for wtokens, another digest for another format.
    associatedtype Digest: BodyDigest

    /// Whether a GET, HEAD, OPTIONS or DELETE may carry a body that nothing signs (SPEC §3.2).
    var allowsUnsignedBody: Bool { get }

    /// The header fields (lower case) the proof carries, covers or requires: a `Connection`
    /// field may name none of them, or the request forwarded would not be the one proven.
    func protectedFields(of request: HTTPRequest) -> Set<String>

    /// The body's digest as the request claims it, which a streamed body is checked against as
    /// it arrives (`missingHeader` when it claims none; an error of the format when it is not one).
    func claimedDigest(of request: HTTPRequest) throws(SignCoreError) -> Digest.Value

    /// Checks `request` with its body's digest, as received from a client of `origin`: the
    /// identity proven, or the error refusing it.
    nonisolated(nonsending) func verify(_ request: HTTPRequest, bodyDigest: Digest.Value, origin: ServerOrigin)
        async throws(SignCoreError) -> VerifiedIdentity

    /// `verify` with the replay record left to `record`, which the caller runs only when the
    /// request is to go on (a stage after the signature, such as attestation, may refuse it
    /// first and then nothing is written). The default records at once.
    nonisolated(nonsending) func verifyDeferringRecord(_ request: HTTPRequest, bodyDigest: Digest.Value, origin: ServerOrigin)
        async throws(SignCoreError) -> (identity: VerifiedIdentity, record: DeferredRecord)

    /// `verify` for a request that brings its own key (a device registration, docs/ATTEST.md
    /// §9.4), which it may be verified under. The default refuses: a format that cannot take an
    /// offered key cannot register one.
    nonisolated(nonsending) func verify(_ request: HTTPRequest, bodyDigest: Digest.Value, origin: ServerOrigin, offeredKey: SigningKey)
        async throws(SignCoreError) -> VerifiedIdentity

    /// Whether the key that proved `identity` came from the registry of device keys, not the
    /// verifier's own key set: its requests carry a counter (docs/ATTEST.md §9.5). Default: no.
    func isDeviceKey(_ identity: VerifiedIdentity) -> Bool

    /// The verifier as a route's requirements configure it (the formats it reads, a format's
    /// own policy), asked once per request before anything is read. Default: itself.
    func configured(for route: RouteRequirements) -> Self

    /// The digest of `request`'s body, to be fed as it arrives, up to `limit` bytes (a format
    /// whose digest depends on the request, such as RFC 9530's algorithms, reads them here).
    /// Default: `Digest(limit:)`.
    func bodyDigest(for request: HTTPRequest, limit: UInt64) throws(SignCoreError) -> Digest

    /// Header fields a refusal by this verifier carries besides SPEC §7.1's (an RFC 9421 401's
    /// `Accept-Signature`). Default: none.
    func refusalFields(for error: SignCoreError, request: HTTPRequest) -> HTTPFields
}

extension RequestVerifier {
    nonisolated(nonsending) public func verify(_ request: HTTPRequest, bodyDigest: Digest.Value, origin: ServerOrigin, offeredKey: SigningKey)
        async throws(SignCoreError) -> VerifiedIdentity {
        throw SignCoreError(.invalidConfiguration, "this proof format cannot verify a request under a key it brings")
    }

    public func isDeviceKey(_ identity: VerifiedIdentity) -> Bool { false }

    public func configured(for route: RouteRequirements) -> Self { self }

    public func bodyDigest(for request: HTTPRequest, limit: UInt64) throws(SignCoreError) -> Digest { Digest(limit: limit) }

    public func refusalFields(for error: SignCoreError, request: HTTPRequest) -> HTTPFields { HTTPFields() }

    /// The digest of a whole body, as `bodyDigest` computes it.
    public func digest(ofBody body: UnsafeRawBufferPointer, for request: HTTPRequest) throws(SignCoreError) -> Digest.Value {
        var digest = try bodyDigest(for: request, limit: .max)
        try digest.append(body)
        return digest.finalize()
    }
}

/// A replay record left for later (`RequestVerifier.verifyDeferringRecord`).
public struct DeferredRecord: Sendable {
    private let body: @Sendable () async throws(SignCoreError) -> Void

    public init(_ body: @escaping @Sendable () async throws(SignCoreError) -> Void) { self.body = body }

    /// Nothing left to record.
    public static let none = DeferredRecord {}

    /// Records the request's nonce: `replayed` when it was used already.
    public func callAsFunction() async throws(SignCoreError) { try await body() }
}

extension RequestVerifier {
    nonisolated(nonsending) public func verifyDeferringRecord(_ request: HTTPRequest, bodyDigest: Digest.Value, origin: ServerOrigin)
        async throws(SignCoreError) -> (identity: VerifiedIdentity, record: DeferredRecord) {
        (try await verify(request, bodyDigest: bodyDigest, origin: origin), .none)
    }
}

/// A digest of a request body computed as it arrives, with a limit on its bytes.
public protocol BodyDigest: Sendable {
    associatedtype Value: Sendable & Equatable
    init(limit: UInt64)
    /// Refuses (`bodyTooLarge`) bytes past the limit.
    mutating func append(_ chunk: UnsafeRawBufferPointer) throws(SignCoreError)
    consuming func finalize() -> Value
    /// The error for a body whose digest is not the one claimed.
    var mismatch: SignCoreError { get }
}

extension WHash.BodyHasher: BodyDigest {
    public var mismatch: SignCoreError { SignCoreError(.whashMismatch, "the whash header does not match the request content") }
}

/// SignCore's wtoken (SPEC §5) as a `RequestVerifier`: the whash and wtoken in the fields `names`
/// gives, the `Verifier`'s checks and replay guard.
public struct WTokenRequestVerifier: RequestVerifier {
    public typealias Digest = WHash.BodyHasher
    public let verifier: Verifier
    public let names: SignHeaderNames

    public init(_ verifier: Verifier, names: SignHeaderNames = .standard) {
        self.verifier = verifier
        self.names = names
    }

    public var allowsUnsignedBody: Bool { verifier.allowsUnsignedBody }

    /// The whash and wtoken fields, the fields the token covers and those the verifier requires.
    public func protectedFields(of request: HTTPRequest) -> Set<String> {
        let required = verifier.requiredHeaders
        var protected = Set([names.whash.canonicalName, names.wtoken.canonicalName] + required.urlMethods + required.bodyMethods)
        if let token = request.headerFields[names.wtoken], let parsed = try? WToken(parsing: token) { protected.formUnion(parsed.coveredHeaders) }
        return protected
    }

    public func claimedDigest(of request: HTTPRequest) throws(SignCoreError) -> SHA256Digest {
        guard let sent = request.headerFields[names.whash] else { throw SignCoreError(.missingHeader, "the request has no whash header") }
        guard let claimed = SHA256Digest(base64url: sent) else {
            throw SignCoreError(.whashMismatch, "the whash header is not 32 bytes of base64url")
        }
        return claimed
    }

    nonisolated(nonsending) public func verify(_ request: HTTPRequest, bodyDigest: SHA256Digest, origin: ServerOrigin)
        async throws(SignCoreError) -> VerifiedIdentity {
        try await verifier.verify(ReceivedRequest(request, body: .whash(bodyDigest), origin: origin, names: names)).identity
    }

    nonisolated(nonsending) public func verify(_ request: HTTPRequest, bodyDigest: SHA256Digest, origin: ServerOrigin, offeredKey: SigningKey)
        async throws(SignCoreError) -> VerifiedIdentity {
        try await verifier.verify(ReceivedRequest(request, body: .whash(bodyDigest), origin: origin, names: names), offeredKey: offeredKey).identity
    }

    /// A key the verifier's key set does not hold came from its key cache's source: with a
    /// device registry, a registered device key.
    public func isDeviceKey(_ identity: VerifiedIdentity) -> Bool {
        verifier.keyCache != nil && verifier.keys.key(id: identity.keyID) == nil
    }

    nonisolated(nonsending) public func verifyDeferringRecord(_ request: HTTPRequest, bodyDigest: SHA256Digest, origin: ServerOrigin)
        async throws(SignCoreError) -> (identity: VerifiedIdentity, record: DeferredRecord) {
        let (verified, now) = try await verifier.verifyDeferringRecord(ReceivedRequest(request, body: .whash(bodyDigest), origin: origin, names: names))
        let verifier = self.verifier
        return (verified.identity, DeferredRecord { () async throws(SignCoreError) in try await verifier.record(verified, now: now) })
    }
}
