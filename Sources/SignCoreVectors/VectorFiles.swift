import Foundation
import SignCore

/// The JSON vector files of `Vectors/` (docs/SPEC.md §8) as Swift values.
public enum VectorFile {
    /// `Vectors/` of the source tree this module was built from.
    public static let sourceDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors")

    public static func load<T: Decodable>(_ name: String, from directory: URL = sourceDirectory, as type: T.Type = T.self) throws -> T {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        return try JSONDecoder().decode(T.self, from: data)
    }

    /// A key of a file's `keys`, parsed from its JWK (an empty document when the name is unknown).
    static func key(_ jwk: [String: String]?) throws -> SigningKey {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try JWK.parseKey(String(decoding: try encoder.encode(jwk ?? [:]), as: UTF8.self))
    }
}

/// A body as the vector files give it: `utf8`, `hex`, or a `formula`.
public struct BodySpec: Decodable, Sendable {
    public struct Formula: Decodable, Sendable {
        public let length: Int
        public let byte: String
    }

    public let utf8: String?
    public let hex: String?
    public let formula: Formula?

    /// The body bytes; nil for bad hex or a formula this code does not know.
    public var bytes: [UInt8]? {
        if let utf8 { return Array(utf8.utf8) }
        if let hex { return [UInt8](hex: hex) }
        guard let formula else { return [] }
        guard formula.byte == "i mod 251" else { return nil }
        return (0..<formula.length).map { UInt8($0 % 251) }
    }

    /// The bytes of an optional body: no body is an empty body, an unreadable one is nil.
    public static func bytes(of spec: BodySpec?) -> [UInt8]? { spec.map { $0.bytes } ?? [] }
}

public struct CanonicalURLVectors: Decodable, Sendable {
    public struct Case: Decodable, Sendable {
        public let tcId: Int
        public let comment: String
        public let input: String?
        public let inputHex: String?
        public let result: String
        public let expected: String?
        public let error: String?
    }

    public struct Pair: Decodable, Sendable {
        public let tcId: Int
        public let comment: String
        public let a: String
        public let b: String
        public let result: String
    }

    public let tests: [Case]
    public let pairs: [Pair]
    public static let fileName = "canonical_url.json"
}

public struct WHashVectors: Decodable, Sendable {
    public struct Case: Decodable, Sendable {
        public let tcId: Int
        public let comment: String
        public let method: String
        public let url: String?
        public let body: BodySpec?
        public let result: String
        public let expected: String?
        public let error: String?
    }

    public let tests: [Case]
    public static let fileName = "whash.json"
}

public struct WTokenVectors: Decodable, Sendable {
    public struct SignCase: Decodable, Sendable {
        public struct Expected: Decodable, Sendable {
            public let canonicalURL: String
            public let whash: String
            public let targetDigest: String
            public let signingInput: String
            /// Hex of the covered headers' digest (SPEC §4.3), when the token covers any.
            public let headersDigest: String?
            public let wtoken: String
        }

        public let tcId: Int
        public let comment: String
        public let key: String
        public let method: String
        public let url: String
        public let body: BodySpec?
        /// `var`: a test derives a case that must fail from one that passes.
        public var created: Int64
        public let lifetime: Int64
        public let nonce: String
        public let account: String
        /// Names the signer covers, as configured (any case, any order).
        public let coveredHeaders: [String]?
        /// The request's header fields, `[name, value]` in order.
        public let headers: [[String]]?
        /// Whether the signer allows an unsigned body on a URL-class method (absent: false).
        public let allowUnsignedBody: Bool?
        public let result: String
        public let expected: Expected?
        public let error: String?
    }

    public struct Request: Decodable, Sendable {
        public let method: String
        public let url: String
        public let body: BodySpec?
        public let whash: String?
        public let wtoken: String?
        /// The request's header fields, `[name, value]` in order.
        public let headers: [[String]]?
    }

    /// An entry the replay guard already holds: key id, nonce, and the expiry of the token it
    /// recorded (SPEC §5 step 10).
    public struct Seen: Decodable, Sendable {
        public let kid: String
        public let nonce: String
        public let expires: Int64
    }

    public struct RequiredHeaders: Decodable, Sendable {
        public let url: [String]?
        public let body: [String]?
    }

    public struct VerifyCase: Decodable, Sendable {
        public struct Expected: Decodable, Sendable, Equatable {
            public let keyID: String
            public let account: String
            public let created: Int64
            public let expires: Int64
        }

        public let tcId: Int
        public let comment: String
        public let verifierKeys: [String]
        public let now: Int64
        /// Absent: the default (30, 300, true).
        public let skew: Int64?
        public let maxLifetime: Int64?
        public let requireWhash: Bool?
        public let requiredHeaders: RequiredHeaders?
        /// Whether the verifier allows an unsigned body on a URL-class method (absent: false).
        public let allowUnsignedBody: Bool?
        public let seen: [Seen]?
        public let request: Request
        public let result: String
        public let expected: Expected?
        public let error: String?
    }

    public let keys: [String: [String: String]]
    public let sign: [SignCase]
    public let verify: [VerifyCase]
    public static let fileName = "wtoken.json"

    /// The named key, parsed from its JWK.
    public func key(_ name: String) throws -> SigningKey { try VectorFile.key(keys[name]) }
}

/// `message.json` (SPEC §10): message signatures under a context.
public struct MessageVectors: Decodable, Sendable {
    public struct SignCase: Decodable, Sendable {
        public struct Expected: Decodable, Sendable {
            /// Hex; absent past 4096 bytes, where `signingInputSHA256` gives its SHA-256.
            public let signingInput: String?
            public let signingInputSHA256: String?
            /// base64url; ES256: one that verifies (randomised).
            public let signature: String
        }

        public let tcId: Int
        public let comment: String
        public let key: String
        public let context: String
        public let message: BodySpec?
        public let result: String
        public let expected: Expected?
        public let error: String?
    }

    public struct VerifyCase: Decodable, Sendable {
        public let tcId: Int
        public let comment: String
        public let key: String
        public let context: String
        public let message: BodySpec?
        public let signature: String
        public let result: String
        public let error: String?
    }

    public let keys: [String: [String: String]]
    public let sign: [SignCase]
    public let verify: [VerifyCase]
    public static let fileName = "message.json"

    /// The named key, parsed from its JWK.
    public func key(_ name: String) throws -> SigningKey { try VectorFile.key(keys[name]) }
}

public struct JWKVectors: Decodable, Sendable {
    public struct Case: Decodable, Sendable {
        public struct Expected: Decodable, Sendable {
            public let kid: String
            public let thumbprint: String
            public let alg: String
        }

        public let tcId: Int
        public let comment: String
        public let jwk: String
        /// Spaces (0x20) that follow `jwk` in the document (a document of 1 MiB without 1 MiB of text).
        public let trailingSpaces: Int?
        public let result: String
        public let expected: Expected?
        public let error: String?

        /// The document as parsed: `jwk` and its trailing spaces.
        public var document: String { jwk + String(repeating: " ", count: trailingSpaces ?? 0) }
    }

    public struct SetCase: Decodable, Sendable {
        public let tcId: Int
        public let comment: String
        public let jwks: String
        /// Spaces (0x20) that follow `jwks` in the document.
        public let trailingSpaces: Int?
        public let result: String
        public let kids: [String]?
        public let error: String?

        /// The document as parsed: `jwks` and its trailing spaces.
        public var document: String { jwks + String(repeating: " ", count: trailingSpaces ?? 0) }
    }

    public let tests: [Case]
    public let sets: [SetCase]
    public static let fileName = "jwk.json"
}

extension Array where Element == UInt8 {
    /// Bytes from lower- or upper-case hex; nil for anything else.
    public init?(hex: String) {
        let chars = Array(hex.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let byte = UInt8(String(decoding: chars[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        self = out
    }

    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for byte in self { out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
