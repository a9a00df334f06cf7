internal import CSignBytes

/// A token's fields as `encodeToken` writes them (SPEC §4.1), pointing at the caller's bytes.
typealias TokenParts = sc_token_parts

/// Writes the token of `parts` at `output`, which has room for `WToken.maxLength` bytes or the
/// fields' `WToken.encodedLength`, and returns its length.
@inline(__always)
func encodeToken(_ parts: inout TokenParts, into output: UnsafeMutableRawPointer?) -> Int {
    sc_token_encode(&parts, output)
}

/// A wtoken parsed in place, without allocating: the fixed-size fields decoded, the key id and
/// account kept as byte ranges of the header bytes they were parsed from (the verifier's path).
struct TokenFields {
    var keyID: Range<Int>
    var created: Int64
    var lifetime: Int64
    var nonce: Nonce
    /// The 6 hint bytes, then 2 zero bytes.
    var targetHint: UInt64 = 0
    /// The account's base64url text; validated here, decoded again where it is used.
    var accountText: Range<Int>
    /// The covered header names (§4.3), validated; empty when none.
    var headersText: Range<Int>
    /// How many names `headersText` lists.
    var coveredCount: Int
    /// The signature, 32 or 64 bytes, in fixed storage.
    var signature: SignatureStorage = (0, 0, 0, 0, 0, 0, 0, 0)
    var signatureByteCount: Int

    /// `deferringKeyIDAlphabet`: a well-formed token's key id is checked for its length only, not
    /// its characters; the verifier finds the id among its keys, whose ids are valid, and calls
    /// `isKeyIDAlphabet` only when none matches. A token refused for any reason is parsed again
    /// in full, so the refusal is the first in SPEC order either way.
    init(parsing text: UnsafeRawBufferPointer, deferringKeyIDAlphabet: Bool = false) throws(SignCoreError) {
        guard text.count <= WToken.maxLength else { throw SignCoreError(.headerTooLarge, "the wtoken is longer than 1024 bytes") }
        // The fixed-size fields in one pass in the shim; the checks report in SPEC order.
        var parsed = sc_token_fields()
        let result = Int(sc_token_parse(text.baseAddress, text.count, WToken.maxCreated, WToken.maxLifetime,
                                        Int32(SigningKey.maxKeyIDLength), deferringKeyIDAlphabet ? 0 : 1, &parsed))
        if deferringKeyIDAlphabet, result != Int(SC_TOKEN_OK) { throw Self.refusal(parsing: text) }
        let starts = parsed.starts
        func field(_ n: Int) -> Range<Int> {
            withUnsafeBytes(of: starts) { raw in
                let starts = raw.bindMemory(to: Int32.self)
                return Int(starts[n])..<(Int(starts[n + 1]) - 1)
            }
        }
        switch result {
        case Int(SC_TOKEN_VERSION):
            if parsed.fields > 1, Self.isVersionField(text[field(0)]) {
                throw SignCoreError(.unsupportedVersion, "the wtoken version is not v3")
            }
            throw Self.malformed("the wtoken does not start with v3.")
        case Int(SC_TOKEN_FIELD_COUNT): throw Self.malformed("the wtoken must have 9 fields")
        case Int(SC_TOKEN_KEY_ID): throw Self.keyIDMalformed
        case Int(SC_TOKEN_CREATED): throw Self.malformed("the created field is not a decimal number of seconds")
        case Int(SC_TOKEN_LIFETIME): throw Self.malformed("the lifetime field is not a number of seconds from 1 to 86400")
        case Int(SC_TOKEN_NONCE): throw Self.malformed("the nonce field is not 16 bytes of base64url")
        case Int(SC_TOKEN_TARGET): throw Self.malformed("the target field is not 6 bytes of base64url")
        default: break
        }
        keyID = field(1)
        created = parsed.created
        lifetime = parsed.lifetime
        nonce = Nonce(words: (parsed.nonce.0, parsed.nonce.1))
        targetHint = parsed.target
        let account = field(6)
        let accountValid = account.isEmpty || Base64URL.decodedLength(account.count).map { $0 <= WToken.maxAccountBytes } == true
            && withUnsafeTemporaryAllocation(byteCount: WToken.maxAccountBytes, alignment: 1) { scratch in
                var out = ByteWriter(scratch)
                return Base64URL.decode(UnsafeRawBufferPointer(rebasing: text[account]), into: &out)
                    && UTF8Validation.isValid(out.written)
            }
        accountText = account
        headersText = field(7)
        let headers = UnsafeRawBufferPointer(rebasing: text[headersText])
        guard accountValid, CoveredHeaders.isValidField(headers) else {
            if deferringKeyIDAlphabet { throw Self.refusal(parsing: text) }
            guard accountValid else { throw Self.malformed("the account field is not base64url of at most 256 bytes of UTF-8") }
            throw Self.malformed("the headers field is not 0-16 sorted lower-case header names joined by commas")
        }
        coveredCount = headers.isEmpty ? 0 : 1 + headers.reduce(0) { $0 + ($1 == UInt8(ascii: ",") ? 1 : 0) }
        guard result == Int(SC_TOKEN_OK) else {
            throw Self.malformed("the signature field is not 32 or 64 bytes of base64url")
        }
        signature = parsed.signature
        signatureByteCount = Int(parsed.signature_length)
    }

    /// The refusal of a token the deferring parse found malformed, from a full parse: the first
    /// in SPEC order, a bad key id before any later field. (Out of line: the hot path stays small.)
    @inline(never)
    private static func refusal(parsing text: UnsafeRawBufferPointer) -> SignCoreError {
        do {
            _ = try TokenFields(parsing: text)
        } catch {
            return error
        }
        return malformed("the wtoken is malformed")  // unreachable: both parses refuse the same tokens
    }

    /// Whether the key id's characters are base64url (see `deferringKeyIDAlphabet`).
    func isKeyIDAlphabet(in text: UnsafeRawBufferPointer) -> Bool { Base64URL.isAlphabet(UnsafeRawBufferPointer(rebasing: text[keyID])) }

    static var keyIDMalformed: SignCoreError { malformed("the key id field is not 1-64 base64url characters") }

    /// The account's bytes appended to `out` (validated by the parse).
    func appendAccount(in text: UnsafeRawBufferPointer, to out: inout ByteWriter) {
        _ = Base64URL.decode(UnsafeRawBufferPointer(rebasing: text[accountText]), into: &out)
    }

    var accountByteCount: Int { Base64URL.decodedLength(accountText.count) ?? 0 }

    /// The account's bytes (none when the field is empty), for `body`.
    func withAccount<R>(in text: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if accountText.isEmpty { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return withUnsafeTemporaryAllocation(byteCount: WToken.maxAccountBytes, alignment: 1) { scratch in
            var out = ByteWriter(scratch)
            appendAccount(in: text, to: &out)
            return body(out.written)
        }
    }

    /// The covered header names' field.
    func headers(in text: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: text[headersText])
    }

    /// The account as a string; small accounts (up to 15 bytes) need no allocation.
    func account(in text: UnsafeRawBufferPointer) -> String {
        if accountText.isEmpty { return "" }
        return String(unsafeUninitializedCapacity: accountByteCount) { buffer in
            var out = ByteWriter(UnsafeMutableRawBufferPointer(buffer))
            appendAccount(in: text, to: &out)
            return out.count
        }
    }

    /// A version field (§4.1): `v` and 1–3 decimal digits without a leading zero (`v1`, `v2`,
    /// `v10`); any other first field is `malformedToken`.
    private static func isVersionField(_ field: Slice<UnsafeRawBufferPointer>) -> Bool {
        let digits = field.dropFirst()
        guard field.first == UInt8(ascii: "v"), (1...3).contains(digits.count), digits.first != UInt8(ascii: "0") else { return false }
        return digits.allSatisfy { (0x30...0x39).contains($0) }
    }

    private static func malformed(_ detail: String) -> SignCoreError { SignCoreError(.malformedToken, detail) }
}
