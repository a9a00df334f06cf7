import Foundation
import Testing

/// Loads a vector file from the repository's `Vectors/` folder.
enum VectorFile {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors")

    static func load<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        return try JSONDecoder().decode(T.self, from: data)
    }
}

extension Array where Element == UInt8 {
    init?(hex: String) {
        let chars = Array(hex.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let byte = UInt8(String(decoding: chars[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        self = out
    }

    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

/// A body as the vector files give it (SPEC §8).
struct BodySpec: Decodable, Sendable {
    struct Formula: Decodable, Sendable {
        let length: Int
        let byte: String
    }

    let utf8: String?
    let hex: String?
    let formula: Formula?

    var bytes: [UInt8] {
        if let utf8 { return Array(utf8.utf8) }
        if let hex { return [UInt8](hex: hex) ?? [] }
        guard let formula, formula.byte == "i mod 251" else { return [] }
        return (0..<formula.length).map { UInt8($0 % 251) }
    }
}

struct WHashVectors: Decodable {
    struct Case: Decodable, Sendable, CustomTestStringConvertible {
        let tcId: Int
        let comment: String
        let method: String
        let url: String?
        let body: BodySpec?
        let result: String
        let expected: String?
        let error: String?
        var testDescription: String { "tcId \(tcId): \(comment)" }
    }

    let tests: [Case]
    static func load() throws -> WHashVectors { try VectorFile.load("whash.json") }
}

struct WTokenVectors: Decodable {
    struct SignCase: Decodable, Sendable, CustomTestStringConvertible {
        struct Expected: Decodable, Sendable {
            let canonicalURL: String
            let whash: String
            let targetDigest: String
            let signingInput: String
            let wtoken: String
        }

        let tcId: Int
        let comment: String
        let key: String
        let method: String
        let url: String
        let body: BodySpec?
        let created: Int64
        let lifetime: Int64
        let nonce: String
        let account: String
        let expected: Expected
        var testDescription: String { "tcId \(tcId): \(comment)" }
    }

    struct Request: Decodable, Sendable {
        let method: String
        let url: String
        let body: BodySpec?
        let whash: String?
        let wtoken: String?
    }

    struct VerifyCase: Decodable, Sendable, CustomTestStringConvertible {
        struct Expected: Decodable, Sendable, Equatable {
            let keyID: String
            let account: String
            let created: Int64
            let expires: Int64
        }

        let tcId: Int
        let comment: String
        let verifierKeys: [String]
        let now: Int64
        let skew: Int64
        let maxLifetime: Int64
        let requireWhash: Bool
        let seenNonces: [String]
        let request: Request
        let result: String
        let expected: Expected?
        let error: String?
        var testDescription: String { "tcId \(tcId): \(comment)" }
    }

    let keys: [String: [String: String]]
    let sign: [SignCase]
    let verify: [VerifyCase]

    static func load() throws -> WTokenVectors { try VectorFile.load("wtoken.json") }

    /// The JWK text of a named key.
    func jwk(_ name: String) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(keys[name] ?? [:]), as: UTF8.self)
    }
}

struct JWKVectors: Decodable {
    struct Case: Decodable, Sendable, CustomTestStringConvertible {
        struct Expected: Decodable, Sendable {
            let kid: String
            let thumbprint: String
            let alg: String
        }

        let tcId: Int
        let comment: String
        let jwk: String
        let result: String
        let expected: Expected?
        let error: String?
        var testDescription: String { "tcId \(tcId): \(comment)" }
    }

    let tests: [Case]
    static func load() throws -> JWKVectors { try VectorFile.load("jwk.json") }
}
