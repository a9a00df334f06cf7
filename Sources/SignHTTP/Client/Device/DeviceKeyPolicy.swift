import HTTPTypes
import SignAttest
@_spi(SignCoreTools) import SignCore

/// The client half of device keys (docs/ATTEST.md §9): every request carries the key's counter
/// (`signcore-counter`, covered by the signature, §9.5), and a request refused because the server
/// does not know the key (`unknownKey`, or `deviceUnknown` with advice `register`) registers it at
/// the origin's device endpoint (a registration challenge, then a registration signed by the key,
/// format `signcore`) and is sent again, signed afresh, once. A server without a device endpoint
/// leaves the refusal as it was.
///
/// The key is the client's signing key, whose key id must be its thumbprint (the default): an
/// Ed25519 or P-256 key in a file of mode 0600 (`SigningKey.loadOrCreate(file:)`), or a Secure
/// Enclave or keystore key through an `ExternalSigner`. Make the client with
/// `SigningClient(signer:device:attestation:)`.
public struct DeviceKeyPolicy: ExchangePolicy {
    /// The app id the key registers for (one the server serves).
    public var appID: String
    /// The device endpoint's path on the origin.
    public var endpoint: String
    public var counterField: HTTPField.Name
    public let counter: DeviceCounter
    /// The app's platform key (App Attest through `DCAppAttestService`), which answers device
    /// challenges with its assertions and registers with its attestation; nil: none.
    public var asserter: (any PlatformAsserter)?

    public init(appID: String, counter: DeviceCounter, endpoint: String = AttestationGate.defaultDeviceEndpoint,
                counterField: HTTPField.Name = AttestationFieldNames.counterField, asserter: (any PlatformAsserter)? = nil) {
        self.appID = appID
        self.counter = counter
        self.endpoint = endpoint
        self.counterField = counterField
        self.asserter = asserter
    }

    public func prepare(_ request: inout HTTPRequest, _ context: ExchangeContext) async throws(SignCoreError) {
        request.headerFields[counterField] = String(try counter.next())
    }

    public func decide(_ exchange: Exchange) async -> ExchangeDecision {
        guard let refusal = ReceivedRefusal(exchange.response, knownCodes: SignCoreError.Code.deviceCodes, knownAdvice: [.register]),
              refusal.code == .unknownKey || refusal.advice == .register else { return .deliver }
        // Once per request: a key refused again after registering is not registered twice.
        let first = exchange.context.values.update(Registered.self) { done -> Bool in
            defer { done = true }
            return done == nil
        }
        guard first else { return .deliver }
        do {
            guard try await register(client: exchange.client, origin: exchange.origin, via: exchange.context.direct) else { return .deliver }
        } catch {
            return .fail(error)
        }
        return .retry(after: .zero)
    }

    private enum Registered: OriginStateKey { typealias Value = Bool }

    /// Registers the client's key at `origin` (docs/ATTEST.md §9.3, §9.4): true once registered
    /// (or registered already); false when the origin has no device endpoint; throws the
    /// server's refusal of the registration.
    @discardableResult
    public func register(client: SigningClient, origin: OriginState, via transport: any DirectTransport) async throws(SignCoreError) -> Bool {
        let key = client.signer.key
        let keyID = Base64URL.encode(key.thumbprint.bytes)
        guard let challenge = try await registrationChallenge(keyID: keyID, bound: key.thumbprint.bytes, origin: origin, via: transport) else {
            return false
        }
        // The registration, signed by the key it registers.
        let jwk = try JWK.serialize(key, includePrivate: false)
        let body = Array(#"{"format":"signcore","keyId":"\#(keyID)","jwk":\#(jwk),"challenge":"\#(challenge)","appId":\#(jsonQuoted(appID))}"#.utf8)
        var request = try HTTPRequest(method: .post, urlString: origin.origin + endpoint)
        request.headerFields[.contentType] = "application/json"
        try await client.signer(for: origin).signAsync(&request, body: body, names: client.names)
        try await Self.registered(request, body: body, via: transport)
        return true
    }

    /// Registers the app's platform key at `origin` (docs/ATTEST.md §9.4, seed 003's JSON): a
    /// challenge bound to its key id, the platform's attestation over the challenge's text. True
    /// once registered; false when the origin has no device endpoint; throws its refusal.
    public func register(_ asserter: any PlatformAsserter, origin: OriginState, via transport: any DirectTransport) async throws(SignCoreError) -> Bool {
        let escaped = asserter.keyID.replacingOccurrences(of: "+", with: "%2B").replacingOccurrences(of: "/", with: "%2F")
            .replacingOccurrences(of: "=", with: "%3D")
        guard let bound = DeviceRegistration.decodeBase64(Array(asserter.keyID.utf8)), bound.count == 32 else {
            throw SignCoreError(.registrationMalformed, "an App Attest key id is the base64 of 32 bytes")
        }
        guard let challenge = try await registrationChallenge(keyID: escaped, bound: bound, origin: origin, via: transport) else { return false }
        let token = try await asserter.attestation(clientData: Array(challenge.utf8))
        let body = Array(#"{"platform":"ios","format":"\#(asserter.format.rawValue)","keyId":"\#(asserter.keyID)","challenge":"\#(challenge)","token":"\#(DeviceRegistration.base64(token))"}"#.utf8)
        var request = try HTTPRequest(method: .post, urlString: origin.origin + endpoint)
        request.headerFields[.contentType] = "application/json"
        try await Self.registered(request, body: body, via: transport)
        return true
    }

    /// A registration challenge bound to `keyID` (as the query writes it; `bound`, its 32 bytes)
    /// at `origin`, checked to be one: the platform attests nothing else. Nil when the origin has
    /// no device endpoint; its refusal when it refuses.
    private func registrationChallenge(keyID: String, bound: [UInt8], origin: OriginState,
                                       via transport: any DirectTransport) async throws(SignCoreError) -> String? {
        let asked = try HTTPRequest(method: .get, urlString: origin.origin + endpoint + "/challenge?keyId=" + keyID)
        let (issued, issuedBody) = try await Self.send(asked, body: [], via: transport)
        guard issued.status == .ok else {
            if let code = ReceivedRefusal(issued, knownCodes: SignCoreError.Code.deviceCodes)?.code { throw SignCoreError(code, "the device endpoint refused a challenge") }
            return nil
        }
        // The challenge is base64url (checked): it goes into the registration's JSON as it is.
        guard let object = try? JSONObject(bytes: issuedBody, maxBytes: 4096), case .string(let bytes)? = object["challenge"],
              let text = Optional(String(decoding: bytes, as: UTF8.self)), let challenge = try? Challenge(parsing: text),
              challenge.kind == .registration, challenge.keyThumbprint == bound,
              let canonical = try? CanonicalURL.canonicalize(origin.origin + "/"), let name = AttestationScope.origin(ofCanonicalURL: canonical),
              challenge.originDigest == AttestationScope.originDigest(name)
        else { throw SignCoreError(.registrationMalformed, "the device endpoint's challenge is not one for this key and origin") }
        return text
    }

    /// Sends a registration: 201 or 200, else the refusal as an error.
    private static func registered(_ request: HTTPRequest, body: [UInt8], via transport: any DirectTransport) async throws(SignCoreError) {
        let (response, _) = try await send(request, body: body, via: transport)
        guard response.status == .created || response.status == .ok else {
            let code = ReceivedRefusal(response, knownCodes: SignCoreError.Code.deviceCodes)?.code ?? .registrationMalformed
            throw SignCoreError(code, "the device endpoint refused the registration")
        }
    }

    private static func send(_ request: HTTPRequest, body: [UInt8], via transport: any DirectTransport) async throws(SignCoreError) -> (HTTPResponse, [UInt8]) {
        do { return try await transport.send(request, body: body) } catch let error as SignCoreError { throw error } catch {
            throw SignCoreError(.upstreamFailed, "the device endpoint could not be reached (\(type(of: error)))")
        }
    }
}

extension SigningClient {
    /// A client whose key is a registered device key (`device`), answering SignCore's 428s too
    /// when given `attestation`: its signer covers the counter's field (and the token's).
    public convenience init(signer: Signer, device: DeviceKeyPolicy, attestation: AttestationPolicy? = nil, names: SignHeaderNames = .standard,
                            maxAttempts: Int = 8) throws(SignCoreError) {
        let covered = [device.counterField.canonicalName] + (attestation.map { [$0.names.token.canonicalName] } ?? [])
        self.init(signer: try signer.covering(covered), names: names,
                  policies: [RetryPolicy(), ClockPolicy(), device] + (attestation.map { [$0] } ?? []), maxAttempts: maxAttempts)
    }

    /// The client's device policy, when it has one.
    var devicePolicy: DeviceKeyPolicy? { policies.lazy.compactMap { $0 as? DeviceKeyPolicy }.first }
}

/// An app's platform key, through the platform's own API (App Attest: `DCAppAttestService` on the
/// app's side, a hook here, since SignCore does not link DeviceCheck): its attestation at
/// registration, its assertions after.
public protocol PlatformAsserter: Sendable {
    /// `apple-app-attest`.
    var format: DeviceFormat { get }
    /// The key id the platform gave (base64 of 32 bytes).
    var keyID: String { get }
    /// `attestKey(keyID, clientDataHash: SHA-256(clientData))`: the attestation object.
    func attestation(clientData: [UInt8]) async throws(SignCoreError) -> [UInt8]
    /// `generateAssertion(keyID, clientDataHash: SHA-256(clientData))`: the assertion.
    func assertion(clientData: [UInt8]) async throws(SignCoreError) -> [UInt8]
}
