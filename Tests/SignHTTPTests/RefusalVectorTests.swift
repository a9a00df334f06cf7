import Foundation
import HTTPTypes
import SignCore
import SignHTTP
import Testing

/// `Vectors/refusal.json` (SPEC §7.1): for every error code, the status, every header field and
/// the problem document SignHTTP's `Refusal` answers with, as the Python reference computes them.
@Suite struct RefusalVectorTests {
    struct File: Decodable, Sendable {
        let numberOfTests: Int
        let tests: [Case]
    }

    struct Case: Decodable, Sendable, CustomTestStringConvertible {
        struct Expected: Decodable, Sendable {
            let status: Int
            let headers: [String: String]
            let problem: [String: JSONValue]
        }

        let tcId: Int
        let comment: String
        let name: String
        let detail: String
        let keyID: String?
        let retryAfter: Int?
        let expected: Expected

        var testDescription: String { "tcId \(tcId): \(comment)" }
    }

    /// A JSON value, compared by value (member order and number spelling do not matter).
    enum JSONValue: Decodable, Equatable, Sendable {
        case string(String), number(Double), bool(Bool), null
        case array([JSONValue]), object([String: JSONValue])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() { self = .null }
            else if let value = try? container.decode(Bool.self) { self = .bool(value) }
            else if let value = try? container.decode(Double.self) { self = .number(value) }
            else if let value = try? container.decode(String.self) { self = .string(value) }
            else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
            else { self = .object(try container.decode([String: JSONValue].self)) }
        }
    }

    /// `Vectors/` of the source tree: Tests/SignHTTPTests/ is two levels below the package.
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Vectors")

    static func file() throws -> File {
        try JSONDecoder().decode(File.self, from: Data(contentsOf: directory.appendingPathComponent("refusal.json")))
    }

    /// SPEC §7's codes and the flows' (docs/ATTEST.md §6, §9.9, §10.8).
    static let codes = SignCoreError.Code.allCases + SignCoreError.Code.attestationCodes + SignCoreError.Code.deviceCodes
        + SignCoreError.Code.rateLimitCodes

    @Test(arguments: try file().tests) func refusal(_ tc: Case) throws {
        let code = try #require(Self.codes.first { $0.name == tc.name })
        let refusal = Refusal(SignCoreError(code, tc.detail, keyID: tc.keyID), retryAfter: tc.retryAfter ?? 1)
        #expect(refusal.response.status.code == tc.expected.status)
        #expect(tc.expected.problem["title"] == .string(refusal.response.status.reasonPhrase))
        for (name, value) in tc.expected.headers {
            #expect(refusal.response.headerFields[try #require(HTTPField.Name(name))] == value, "\(name)")
        }
        // Every field the response carries is one the vector names: nothing else.
        #expect(refusal.response.headerFields.count == tc.expected.headers.count)
        let problem = try JSONDecoder().decode([String: JSONValue].self, from: Data(refusal.body))
        #expect(problem == tc.expected.problem)
    }

    /// Every code has a case, so a new code cannot go without its refusal pinned.
    @Test func everyCodeIsCovered() throws {
        let file = try Self.file()
        #expect(file.tests.count == file.numberOfTests)
        let named = Set(file.tests.map(\.name))
        for code in Self.codes { #expect(named.contains(code.name), "\(code.name)") }
    }
}
