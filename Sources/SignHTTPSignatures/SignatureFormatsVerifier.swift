import HTTPTypes
import SignCore
import SignHTTP

/// Both proof formats behind one middleware or gateway (docs/HTTPSIG.md §5.4): each route reads
/// the formats its requirements name (`RouteSignatureFormat`, wtokens alone by default), with one
/// key set, one clock and one replay guard. A request is verified in the one format it carries;
/// one that carries both on a route reading both is refused (`signatureFormatsMixed`); a format
/// the route does not read is ignored, as if absent.
public struct SignatureFormatsVerifier: RequestVerifier {
    public typealias Digest = FormatDigest
    public let wtoken: WTokenRequestVerifier
    public private(set) var httpSignature: MessageSignatureVerifier
    /// The formats read (as the route configures them).
    public private(set) var formats: SignatureFormats

    /// - Parameter directories: Web Bot Auth's key directories, for routes of agent coverage (docs/HTTPSIG.md §7.3).
    public init(_ verifier: Verifier, names: SignHeaderNames = .standard, formats: SignatureFormats = .wtoken,
                policy: HTTPSignaturePolicy = HTTPSignaturePolicy(), directories: KeyDirectories? = nil) {
        wtoken = WTokenRequestVerifier(verifier, names: names)
        httpSignature = MessageSignatureVerifier(verifier, policy: policy, directories: directories)
        self.formats = formats
    }

    public func configured(for route: RouteRequirements) -> SignatureFormatsVerifier {
        var configured = self
        configured.formats = route[RouteSignatureFormat.self].formats
        configured.httpSignature = httpSignature.configured(for: route)
        return configured
    }

    enum Format { case wtoken, httpSignature }

    /// The format `request` is verified in (docs/HTTPSIG.md §5.4).
    func format(of request: HTTPRequest) throws(SignCoreError) -> Format {
        let carriesHTTPSignature = SignatureFields.isPresent(in: request.headerFields)
        let carriesWToken = request.headerFields[wtoken.names.wtoken] != nil
        switch (formats.contains(.wtoken), formats.contains(.httpSignature)) {
        case (true, true):
            guard !(carriesWToken && carriesHTTPSignature) else {
                throw SignCoreError(.signatureFormatsMixed, "the request carries a wtoken and an RFC 9421 signature")
            }
            return carriesHTTPSignature ? .httpSignature : .wtoken
        case (true, false): return .wtoken
        case (false, true): return .httpSignature
        case (false, false): throw SignCoreError(.signatureNotFound, "the route reads no signature format this path allows")
        }
    }

    public var allowsUnsignedBody: Bool { formats.contains(.wtoken) && wtoken.allowsUnsignedBody }

    public func protectedFields(of request: HTTPRequest) -> Set<String> {
        wtoken.protectedFields(of: request).union(httpSignature.protectedFields(of: request))
    }

    public func claimedDigest(of request: HTTPRequest) throws(SignCoreError) -> FormatDigest.Value {
        switch try format(of: request) {
        case .wtoken: .whash(try wtoken.claimedDigest(of: request))
        case .httpSignature: .content(try httpSignature.claimedDigest(of: request))
        }
    }

    public func bodyDigest(for request: HTTPRequest, limit: UInt64) throws(SignCoreError) -> FormatDigest {
        switch try format(of: request) {
        case .wtoken: .whash(try wtoken.bodyDigest(for: request, limit: limit))
        case .httpSignature: .content(try httpSignature.bodyDigest(for: request, limit: limit))
        }
    }

    nonisolated(nonsending) public func verify(_ request: HTTPRequest, bodyDigest: FormatDigest.Value, origin: ServerOrigin)
        async throws(SignCoreError) -> VerifiedIdentity {
        switch (try format(of: request), bodyDigest) {
        case (.wtoken, .whash(let digest)): try await wtoken.verify(request, bodyDigest: digest, origin: origin)
        case (.httpSignature, .content(let digest)): try await httpSignature.verify(request, bodyDigest: digest, origin: origin)
        default: throw Self.digestOfAnotherFormat
        }
    }

    nonisolated(nonsending) public func verifyDeferringRecord(_ request: HTTPRequest, bodyDigest: FormatDigest.Value, origin: ServerOrigin)
        async throws(SignCoreError) -> (identity: VerifiedIdentity, record: DeferredRecord) {
        switch (try format(of: request), bodyDigest) {
        case (.wtoken, .whash(let digest)): try await wtoken.verifyDeferringRecord(request, bodyDigest: digest, origin: origin)
        case (.httpSignature, .content(let digest)): try await httpSignature.verifyDeferringRecord(request, bodyDigest: digest, origin: origin)
        default: throw Self.digestOfAnotherFormat
        }
    }

    /// A device registers with a wtoken (docs/ATTEST.md §9.4).
    nonisolated(nonsending) public func verify(_ request: HTTPRequest, bodyDigest: FormatDigest.Value, origin: ServerOrigin, offeredKey: SigningKey)
        async throws(SignCoreError) -> VerifiedIdentity {
        guard case .whash(let digest) = bodyDigest, try format(of: request) == .wtoken else { throw Self.digestOfAnotherFormat }
        return try await wtoken.verify(request, bodyDigest: digest, origin: origin, offeredKey: offeredKey)
    }

    public func isDeviceKey(_ identity: VerifiedIdentity) -> Bool { identity.format == "wtoken" && wtoken.isDeviceKey(identity) }

    public func refusalFields(for error: SignCoreError, request: HTTPRequest) -> HTTPFields {
        formats.contains(.httpSignature) ? httpSignature.refusalFields(for: error, request: request) : HTTPFields()
    }

    private static var digestOfAnotherFormat: SignCoreError {
        SignCoreError(.invalidConfiguration, "a body digest of one format was handed to the other")
    }
}

/// The body digest of the format a request carries: the whash's or RFC 9530's.
public enum FormatDigest: BodyDigest {
    case whash(WHash.BodyHasher)
    case content(ContentDigest.Hasher)

    public enum Value: Sendable, Equatable {
        case whash(SHA256Digest)
        case content(ContentDigest)
    }

    public init(limit: UInt64) { self = .whash(WHash.BodyHasher(limit: limit)) }

    public mutating func append(_ chunk: UnsafeRawBufferPointer) throws(SignCoreError) {
        switch self {
        case .whash(var hasher):
            try hasher.append(chunk)
            self = .whash(hasher)
        case .content(var hasher):
            try hasher.append(chunk)
            self = .content(hasher)
        }
    }

    public consuming func finalize() -> Value {
        switch self {
        case .whash(let hasher): .whash(hasher.finalize())
        case .content(let hasher): .content(hasher.finalize())
        }
    }

    public var mismatch: SignCoreError {
        switch self {
        case .whash(let hasher): hasher.mismatch
        case .content(let hasher): hasher.mismatch
        }
    }
}
