import ArgumentParser
import Foundation
import SignCore

struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate a key: the private JWK to --out (mode 0600) or standard output.")

    @Argument(help: "hmac | ed25519 | p256")
    var algorithm: SignatureAlgorithm

    @Option(help: "Key id (1-64 characters of A-Z a-z 0-9 - _); default: the RFC 7638 thumbprint.")
    var kid: String?

    @Option(help: "Write the private JWK to this new file, readable by its owner only (0600).")
    var out: String?

    @Flag(help: "Replace --out if it exists (it is truncated and set to 0600 before writing).")
    var force = false

    @Option(help: "Also write the public JWK Set (for verifiers) to this file (not for hmac: its secret is the key).")
    var publicOut: String?

    func validate() throws {
        if algorithm == .hmacSHA256, publicOut != nil {
            throw ValidationError("an HMAC key has no public part: give verifiers the private JWK itself")
        }
        if force, out == nil { throw ValidationError("--force applies to --out") }
    }

    func run() {
        let key = orFail { try SigningKey.generate(algorithm, id: kid) }
        let privateJWK = orFail { try JWK.serialize(key, includePrivate: true) }
        if let publicOut {
            let document = orFail { try JWK.serialize([key.publicOnly()], includePrivate: false) }
            write(document, to: publicOut, mode: 0o644, replace: true)
        }
        if let out { write(privateJWK, to: out, mode: 0o600, replace: force) } else { print(privateJWK) }
    }

    /// Writes `text` and a newline to a file created with `mode` (never wider, even briefly);
    /// an existing file is refused unless `replace`.
    private func write(_ text: String, to path: String, mode: mode_t, replace: Bool) {
        let flags = O_WRONLY | O_CREAT | (replace ? O_TRUNC : O_EXCL)
        let fd = open(path, flags, mode)
        guard fd >= 0 else {
            let reason = errno == EEXIST ? "it exists (pass --force to replace it)" : String(cString: strerror(errno))
            fail("cannot write \(path): \(reason)", .cannotWrite)
        }
        defer { close(fd) }
        guard fchmod(fd, mode) == 0 else { fail("cannot set the mode of \(path): \(String(cString: strerror(errno)))", .cannotWrite) }
        let bytes = Array((text + "\n").utf8)
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { fail("cannot write \(path): \(String(cString: strerror(errno)))", .cannotWrite) }
    }
}
