import SignCore

/// Fixed keys, clock and requests, so that every run is reproducible from its input alone.
public enum Fuzz {
    public static let now: Int64 = 1_790_000_010
    public static let created: Int64 = 1_790_000_000

    /// An HMAC key from a fixed secret.
    public static let key: SigningKey = {
        do { return try SigningKey.hmac(secret: Array(repeating: 7, count: 32), id: "fuzz-key") } catch { fatalError("fixed key: \(error)") }
    }()

    public static func verifier(required: [String] = []) -> Verifier {
        do {
            return try Verifier(keys: try KeySet([key]), replayGuard: try InMemoryReplayGuard(capacity: 16), maxLifetime: 300,
                                requiredHeaders: try RequiredHeaders(urlMethods: required, bodyMethods: required), clock: { now })
        } catch {
            fatalError("fixed verifier: \(error)")
        }
    }

    /// The input split at every 0x00 byte into at most `count` parts (missing parts are empty).
    public static func parts(_ input: UnsafeRawBufferPointer, _ count: Int) -> [[UInt8]] {
        var parts: [[UInt8]] = [[]]
        for byte in input {
            if byte == 0, parts.count < count { parts.append([]) } else { parts[parts.count - 1].append(byte) }
        }
        while parts.count < count { parts.append([]) }
        return parts
    }

    public static func string(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// Header fields from "Name: value" lines separated by LF (a value may hold any other byte).
    public static func fields(_ bytes: [UInt8]) -> [HeaderField] {
        bytes.split(separator: 0x0A, omittingEmptySubsequences: true).map { line in
            let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
            let value = colon < line.endIndex ? line[(colon + 1)...] : []
            return HeaderField(string(Array(line[..<colon])), string(Array(value)))
        }
    }

    /// Stops the run: a property the fuzzer found broken (libFuzzer saves the input).
    public static func broken(_ what: String) -> Never { fatalError("property broken: \(what)") }
}
