import Foundation
import HTTPTypes
import RawStructuredFieldValues
import SignCore
import SignHTTP

/// RFC 9530 `Content-Digest` (docs/HTTPSIG.md §4): the digest of the content as sent, a
/// dictionary of algorithm → byte sequence. This profile computes and checks `sha-256` and
/// `sha-512`; the others (`md5`, `sha`, the checksums) are ignored, and a field that lists none
/// it checks is refused.
public struct ContentDigest: Sendable, Equatable {
    public enum Algorithm: String, Sendable, CaseIterable {
        case sha256 = "sha-256"
        case sha512 = "sha-512"

        var byteCount: Int { self == .sha256 ? 32 : 64 }
    }

    /// The digests, in the order the field lists them (each algorithm once).
    public var digests: [(Algorithm, [UInt8])]
    /// Whether any content was digested: a verifier requires `content-digest` covered when there was.
    /// (Not part of equality: a claimed digest has no count.)
    public var hadContent: Bool

    public static let field = HTTPField.Name("content-digest")!

    public init(digests: [(Algorithm, [UInt8])], hadContent: Bool = true) {
        self.digests = digests
        self.hadContent = hadContent
    }

    public static func == (a: ContentDigest, b: ContentDigest) -> Bool {
        a.digests.count == b.digests.count
            && zip(a.digests, b.digests).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }  // digests of public bytes: nothing secret to time
    }

    /// `Content-Digest` of `body` with `algorithms`.
    public static func of(_ body: [UInt8], algorithms: [Algorithm] = [.sha256]) -> ContentDigest {
        var hasher = Hasher(algorithms: algorithms, limit: .max)
        body.withUnsafeBytes { hasher.update($0) }
        return hasher.finalize()
    }

    /// The field value: `sha-256=:…:` (members in this value's order).
    public var fieldValue: String {
        digests.map { "\($0.0.rawValue)=:\(Data($0.1).base64EncodedString()):" }.joined(separator: ", ")
    }

    /// The digests a request claims, for the algorithms checked here (docs/HTTPSIG.md §4.2):
    /// nil when it has no `Content-Digest`. `contentDigestUnsupported` when the field is no
    /// dictionary, is over 8 KiB, a member of a checked algorithm is no byte sequence of its
    /// length, or it lists no algorithm checked here.
    public static func claimed(in fields: HTTPFields) throws(SignCoreError) -> ContentDigest? {
        let lines = fields[values: field]
        guard !lines.isEmpty else { return nil }
        let value = lines.joined(separator: ", ")
        guard value.utf8.count <= 8 << 10 else { throw unsupported("Content-Digest is over 8 KiB") }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue() else { throw unsupported("Content-Digest is not a structured dictionary") }
        var digests: [(Algorithm, [UInt8])] = []
        for (name, member) in dictionary {
            guard let algorithm = Algorithm(rawValue: name) else { continue }
            guard case .item(let item) = member, case .undecodedByteSequence(let encoded) = item.rfc9651BareItem,
                  let bytes = Data(base64Encoded: encoded), bytes.count == algorithm.byteCount else {
                throw unsupported("a Content-Digest member of sha-256 or sha-512 is not a byte sequence of its length")
            }
            digests.append((algorithm, Array(bytes)))
        }
        guard !digests.isEmpty else { throw unsupported("Content-Digest lists neither sha-256 nor sha-512") }
        return ContentDigest(digests: digests)
    }

    private static func unsupported(_ detail: String) -> SignCoreError { SignCoreError(.contentDigestUnsupported, detail) }

    /// The digests of a body computed as it arrives, for the algorithms a request claims (none
    /// when it claims none: then only whether there was content is kept), with a limit on its bytes.
    public struct Hasher: BodyDigest {
        public typealias Value = ContentDigest
        private var algorithms: [Algorithm]
        private var sha256 = SHA256Hasher()
        private var sha512 = SHA512Hasher()
        private var byteCount: UInt64 = 0
        private let limit: UInt64

        public init(limit: UInt64) { self.init(algorithms: [], limit: limit) }

        public init(algorithms: [Algorithm], limit: UInt64) {
            self.algorithms = algorithms
            self.limit = limit
        }

        public mutating func append(_ chunk: UnsafeRawBufferPointer) throws(SignCoreError) {
            guard UInt64(chunk.count) <= limit - byteCount else {
                throw SignCoreError(.bodyTooLarge, "the body is larger than the configured limit")
            }
            update(chunk)
        }

        mutating func update(_ chunk: UnsafeRawBufferPointer) {
            if algorithms.contains(.sha256) { sha256.update(chunk) }
            if algorithms.contains(.sha512) { sha512.update(chunk) }
            byteCount += UInt64(chunk.count)
        }

        public consuming func finalize() -> ContentDigest {
            let sha256 = self.sha256, sha512 = self.sha512
            return ContentDigest(digests: algorithms.map { algorithm in
                (algorithm, algorithm == .sha256 ? Array(sha256.finalize().bytes) : sha512.finalize())
            }, hadContent: byteCount > 0)
        }

        public var mismatch: SignCoreError {
            SignCoreError(.contentDigestMismatch, "the body received does not match its Content-Digest")
        }
    }
}
