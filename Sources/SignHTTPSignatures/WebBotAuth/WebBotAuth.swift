import HTTPTypes
import SignCore

/// Signing as an agent of Web Bot Auth (draft-meunier-web-bot-auth-architecture; docs/HTTPSIG.md
/// §7): `tag="web-bot-auth"`, `keyid` the key's JWK thumbprint, `@authority` and the agent's
/// `Signature-Agent` covered, a short lifetime and a nonce.
public enum WebBotAuth {
    public static let tag = "web-bot-auth"

    /// Signs `request` (its scheme, authority and path set) as the agent whose key directory is
    /// at `agent` (an https URL; nil: no `Signature-Agent`, the verifier must hold the key).
    public static func sign(_ request: inout HTTPRequest, key: SigningKey, agent: String?, label: String = "sig1", lifetime: Int64 = 60,
                            clock: @escaping @Sendable () -> Int64 = SystemClock.seconds) async throws(SignCoreError) {
        var components: [ComponentIdentifier] = [.authority]
        if let agent {
            request.headerFields[SignatureAgent.field] = SignatureAgent.fieldValue(label: label, url: agent)
            components.append(try ComponentIdentifier("signature-agent", key: label))
        }
        let signer = MessageSigner(key: key, components: components, label: label, tag: tag, keyID: key.thumbprint.description,
                                   lifetime: lifetime, clock: clock)
        let message = MessageComponents(request: try MessageComponents.RequestParts(signing: request))
        let (input, signature) = try await signer.fields(components, message: message)
        request.headerFields.append(HTTPField(name: SignatureFields.signatureInput, value: input))
        request.headerFields.append(HTTPField(name: SignatureFields.signature, value: signature))
    }
}
