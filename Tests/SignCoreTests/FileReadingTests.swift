import Foundation
import Testing
@testable import SignCore

/// Key files and body files: read whole, errors named by path and never by content.
@Suite struct FileReadingTests {
    let folder = NSTemporaryDirectory() + "signcore-files-\(UUID().uuidString)"

    init() throws { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }

    func write(_ name: String, _ bytes: [UInt8]) -> String {
        let path = folder + "/" + name
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    @Test func keyFilesLoadAndRefuseClearly() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let key = try SigningKey.hmac(secret: Array(repeating: 3, count: 32), id: "file-key")
        let good = write("keys.jwks", Array(try JWK.serialize([key], includePrivate: true).utf8))
        #expect(try KeySet(jwksFile: good).ids == ["file-key"])
        let secretText = try JWK.serialize(key, includePrivate: true)
        let cases: [(String, SignCoreError.Code)] = [
            (folder + "/missing.jwks", .invalidConfiguration),
            (write("huge.jwks", Array(repeating: UInt8(ascii: " "), count: KeySet.maxFileSize + 1)), .invalidConfiguration),
            (folder, .invalidConfiguration),  // a directory
            (write("broken.jwks", Array(secretText.utf8.dropLast())), .invalidKey),
        ]
        for (path, expected) in cases {
            do {
                _ = try KeySet(jwksFile: path)
                Issue.record("\(path) loaded")
            } catch {
                #expect(error.code == expected || (expected == .invalidKey && error.code != .invalidConfiguration), "\(path): \(error.detail)")
                #expect(!error.detail.contains("AwMD"), "no key material in the message")  // base64url of the secret's bytes
            }
        }
    }

    @Test func bodyFilesHashAsTheirBytes() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let (whash, count) = try WHash.ofFile(atPath: write("body.bin", bytes))
        #expect(whash == WHash.ofBody(bytes) && count == 200_000)
        #expect(try WHash.ofFile(atPath: write("empty.bin", [])).whash == WHash.ofEmptyBody)
        #expect(throws: SignCoreError.self) { _ = try WHash.ofFile(atPath: folder + "/missing.bin") }
        #expect(throws: SignCoreError.self) { _ = try WHash.ofFile(atPath: folder) }  // reading a directory fails
    }
}
