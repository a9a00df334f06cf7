import SignCore

/// The signature base (RFC 9421 §2.5): one line `"<identifier>": <value>` per covered component,
/// in order, then `"@signature-params": <parameters>`, lines joined by LF with none after the
/// last. This is what a key signs (`SigningKey.signSignatureBase`).
public enum SignatureBase {
    /// The base for `parameters` over `message`. Refuses a component the message lacks or cannot
    /// give (`componentMissing`, `componentInvalid`), a value holding a byte below 0x20 or 0x7F
    /// (§2.5 step 2.4.2: nothing can break a line), and a base over `SigningKey.maxSignatureBaseBytes`
    /// (`signatureFieldsMalformed`).
    public static func make(_ parameters: SignatureParameters, message: MessageComponents) throws(SignCoreError) -> [UInt8] {
        var base: [UInt8] = []
        base.reserveCapacity(256)
        for component in parameters.components {
            let value = try message.value(of: component)
            guard !value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else {
                throw ComponentIdentifier.invalid("a component value holds a control byte")
            }
            component.append(to: &base)
            base.append(UInt8(ascii: ":"))
            base.append(UInt8(ascii: " "))
            base += value.utf8
            base.append(0x0A)
        }
        base += "\"@signature-params\": ".utf8
        base += try parameters.serializedBytes()
        guard base.count <= SigningKey.maxSignatureBaseBytes else { throw tooLarge }
        return base
    }

    private static var tooLarge: SignCoreError {
        SignCoreError(.signatureFieldsMalformed, "a signature base is at most \(SigningKey.maxSignatureBaseBytes) bytes")
    }
}
