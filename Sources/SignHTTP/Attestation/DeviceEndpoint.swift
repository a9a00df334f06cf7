import HTTPTypes
import SignAttest
@_spi(SignCoreTools) import SignCore

/// The device endpoint (docs/ATTEST.md §9.2), transport-neutral: registration challenges, and
/// registrations; and the counter every request of a registered key carries (§9.5).
extension AttestationGate {
    /// What a request to the device endpoint asks.
    public enum DeviceRoute: Sendable, Equatable {
        /// `GET {endpoint}/challenge[?keyId=…]`: a registration challenge.
        case challenge
        /// `POST {endpoint}`: a registration.
        case registration
        /// `GET {endpoint}/payload?keyId=…`: a one-time payload for seed 003's assertions.
        case payload
        /// `POST {endpoint}/assertions`: seed 003's assertion, verified.
        case assertion
    }

    /// The device endpoint's route `request` is for (its path, whatever the query); nil for
    /// any other path, and when the attestor has no devices.
    public func deviceRoute(of request: HTTPRequest) -> DeviceRoute? {
        guard attestor.devices != nil, let path = request.path else { return nil }
        let bare = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
        if bare == deviceEndpoint { return .registration }
        if bare == deviceEndpoint + "/challenge" { return .challenge }
        if bare == deviceEndpoint + "/payload" { return .payload }
        if bare == deviceEndpoint + "/assertions" { return .assertion }
        return nil
    }

    /// Answers `GET {endpoint}/challenge` (§9.3): `200 {"challenge":"…","ttl":<s>}`, bound to the
    /// key id of the query's `keyId` (base64 or base64url of 32 bytes) when it has one. Needs no
    /// signature: a key that is not registered yet asks here, and so do seed 003's apps.
    public func registrationChallenge(for request: HTTPRequest, origin: String) -> (HTTPResponse, [UInt8]) {
        let now = clock()
        do throws(SignCoreError) {
            guard request.method == .get else { throw SignCoreError(.unsupportedMethod, "a registration challenge is asked for with GET") }
            var bound: [UInt8]?
            if let text = Self.query(of: request, "keyId") {
                guard let keyID = Self.keyIDBytes(text) else {
                    throw SignCoreError(.registrationMalformed, "keyId is the base64 or base64url of a 32-byte key id")
                }
                bound = keyID
            }
            let challenge = try attestor.registrationChallenge(boundTo: bound, origin: origin, now: now)
            return Self.json(.ok, "{\"challenge\":\"\(challenge.text)\",\"ttl\":\(challenge.ttl)}")
        } catch {
            return (refusal(error, now: now).response, refusal(error, now: now).body)
        }
    }

    /// Answers `POST {endpoint}` (§9.4) with a registration body received at `origin`. A format
    /// whose key signs requests (`signcore`) must come signed by that key: `verify` checks the
    /// request under it (SPEC §5, its nonce recorded). `201` with the record for a new key, `200`
    /// for a key registered already; else the refusal.
    public func register(_ request: HTTPRequest, body: [UInt8], origin: String,
                         verify: (SigningKey) async throws(SignCoreError) -> VerifiedIdentity) async -> (HTTPResponse, [UInt8]) {
        let now = clock()
        do throws(SignCoreError) {
            guard request.method == .post else { throw SignCoreError(.unsupportedMethod, "a registration is sent with POST") }
            let registration = try DeviceRegistration(body: body)
            var signedBy: [UInt8]?
            if let key = registration.publicKey {
                do { signedBy = try await verify(key).keyThumbprint?.bytes } catch where error.code == .unknownKey {
                    // Its id is not the registered key's, nor any other key's this server knows.
                    throw SignCoreError(.deviceKeyMismatch, "the registration is not signed by the key it registers")
                }
            }
            let (record, inserted) = try await attestor.register(registration, signedBy: signedBy, origin: origin, now: now)
            let text = "{\"keyId\":\(jsonQuoted(record.keyID)),\"format\":\(jsonQuoted(record.format.rawValue)),"
                + "\"appId\":\(jsonQuoted(record.appID)),\"status\":\(jsonQuoted(record.status.name))}"
            return Self.json(inserted ? .created : .ok, text)
        } catch {
            let refusal = refusal(error, now: now)
            return (refusal.response, refusal.body)
        }
    }

    /// Answers `GET {endpoint}/payload?keyId=…` (§9.6): `200 {"payload":"…","ttl":<s>}`, a
    /// one-time payload bound to the key id (base64 or base64url of 32 bytes).
    public func assertionPayload(for request: HTTPRequest, origin: String) -> (HTTPResponse, [UInt8]) {
        let now = clock()
        do throws(SignCoreError) {
            guard request.method == .get else { throw SignCoreError(.unsupportedMethod, "a payload is asked for with GET") }
            guard let text = Self.query(of: request, "keyId"), let keyID = Self.keyIDBytes(text) else {
                throw SignCoreError(.attestationMalformed, "keyId is the base64 or base64url of a 32-byte key id")
            }
            let payload = try attestor.assertionPayload(boundTo: keyID, origin: origin, now: now)
            return Self.json(.ok, "{\"payload\":\"\(payload.text)\",\"ttl\":\(payload.ttl)}")
        } catch {
            let refusal = refusal(error, now: now)
            return (refusal.response, refusal.body)
        }
    }

    /// Answers `POST {endpoint}/assertions` (§9.6): seed 003's assertion JSON, no signature
    /// needed; `200 {"keyId":"…","format":"…","appId":"…","counter":<n>}` when it verifies.
    public func verifyAssertion(_ request: HTTPRequest, body: [UInt8], origin: String) async -> (HTTPResponse, [UInt8]) {
        let now = clock()
        do throws(SignCoreError) {
            guard request.method == .post else { throw SignCoreError(.unsupportedMethod, "an assertion is sent with POST") }
            let (record, counter) = try await attestor.verifySeedAssertion(body, origin: origin, now: now)
            return Self.json(.ok, "{\"keyId\":\(jsonQuoted(record.keyID)),\"format\":\(jsonQuoted(record.format.rawValue)),"
                + "\"appId\":\(jsonQuoted(record.appID)),\"counter\":\(counter)}")
        } catch {
            let refusal = refusal(error, now: now)
            return (refusal.response, refusal.body)
        }
    }

    /// Checks and records the counter of a request signed by a registered device key (§9.5):
    /// the `signcore-counter` field, covered by the signature, or none (0). Throws the counter's
    /// refusal, `deviceRevoked` for a key revoked since a cache read it, `headerNotCovered` and
    /// `invalidHeader` for a field the signature does not cover or that is not a counter.
    public func observeCounter(_ request: HTTPRequest, identity: VerifiedIdentity) async throws(SignCoreError) {
        guard let devices = attestor.devices else { return }
        let values = request.headerFields[values: names.counter]
        var counter: UInt64 = 0
        if !values.isEmpty {
            guard values.count == 1 else { throw SignCoreError(.invalidHeader, "the device counter field is sent more than once") }
            guard identity.coveredHeaders.contains(names.counter.canonicalName) else {
                throw SignCoreError(.headerNotCovered, "the signature does not cover the device counter")
            }
            guard let value = CounterWindow.counter(field: values[0]) else {
                throw SignCoreError(.invalidHeader, "the device counter is a decimal integer from 0 to 2^63 - 1 without leading zeros")
            }
            counter = value
        }
        try await devices.registry.observe(keyID: identity.keyID, counter: counter, now: clock())
    }

    /// A 32-byte key id in a query: base64 or base64url, padded or not, `+`, `/` and `=` possibly
    /// percent-encoded.
    static func keyIDBytes(_ text: Substring) -> [UInt8]? {
        guard text.utf8.count <= 64 else { return nil }
        let unescaped = text.replacingOccurrences(of: "%2B", with: "+").replacingOccurrences(of: "%2b", with: "+")
            .replacingOccurrences(of: "%2F", with: "/").replacingOccurrences(of: "%2f", with: "/")
            .replacingOccurrences(of: "%3D", with: "=").replacingOccurrences(of: "%3d", with: "=")
        guard let bytes = DeviceRegistration.decodeBase64(Array(unescaped.utf8)), bytes.count == 32 else { return nil }
        return bytes
    }

    /// The value of `name=` in the request's query; nil when absent.
    static func query(of request: HTTPRequest, _ name: String) -> Substring? {
        guard let path = request.path, let query = path.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        return query.split(separator: "&").first { $0.hasPrefix(name + "=") }?.dropFirst(name.count + 1)
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> (HTTPResponse, [UInt8]) {
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return (HTTPResponse(status: status, headerFields: fields), Array(text.utf8))
    }
}
