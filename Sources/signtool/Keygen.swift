import ArgumentParser
import Foundation
import SignCore

struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate a key: the private JWK to --out (mode 0600) or standard output.",
        discussion: "Every option and output file is checked before the key is generated; on any failure nothing is left written.")

    @Argument(help: "hmac | ed25519 | p256")
    var algorithm: SignatureAlgorithm

    @Option(help: "Key id (1-64 characters of A-Z a-z 0-9 - _); default: the RFC 7638 thumbprint.")
    var kid: String?

    @Option(help: "Write the private JWK to this new file, readable by its owner only (0600).")
    var out: String?

    @Option(help: "Also write the public JWK Set (for verifiers) to this new file, mode 0644 (not for hmac: its secret is the key).")
    var publicOut: String?

    @Flag(help: "Replace an existing --out or --public-out: the new file is written beside it and renamed over it (a symlink there is replaced, not followed).")
    var force = false

    func validate() throws {
        if algorithm == .hmacSHA256, publicOut != nil {
            throw ValidationError("an HMAC key has no public part: give verifiers the private JWK itself")
        }
        if force, out == nil, publicOut == nil { throw ValidationError("--force applies to --out and --public-out") }
        for (name, path) in [("--out", out), ("--public-out", publicOut)] where path == "-" || path == "" {
            throw ValidationError("\(name) needs a file name (omit --out to print the private key)")
        }
        if let out, let publicOut, standardized(out) == standardized(publicOut) {
            throw ValidationError("--out and --public-out must be different files")
        }
    }

    func run() {
        var files: [OutputFile] = []
        do {
            // The files exist (empty, with their final modes) before the key does.
            let privateFile = try out.map { (path) throws(CLIFailure) in try OutputFile(path: path, mode: 0o600, replace: force) }
            files += privateFile.map { [$0] } ?? []
            let publicFile = try publicOut.map { (path) throws(CLIFailure) in try OutputFile(path: path, mode: 0o644, replace: force) }
            files += publicFile.map { [$0] } ?? []

            let key = try SigningKey.generate(algorithm, id: kid)
            let privateJWK = try JWK.serialize(key, includePrivate: true)
            let publicJWKS = try publicFile.map { _ in try JWK.serialize([key.publicOnly()], includePrivate: false) }
            if let privateFile {
                try privateFile.write(Array((privateJWK + "\n").utf8))
                try privateFile.commit()  // the private key first: a public key is never published without it
            }
            if let publicFile, let publicJWKS {
                try publicFile.write(Array((publicJWKS + "\n").utf8))
                try publicFile.commit()
            }
            if privateFile == nil { print(privateJWK) }
        } catch {
            files.forEach { $0.discard() }
            switch error {
            case let failure as CLIFailure: fail(failure.message, failure.status)
            case let error as SignCoreError: fail(error.description)
            default: fail("\(error)", .internalError)
            }
        }
    }
}

/// `path` absolute and without `.`/`..` components, to tell whether two options name one file.
private func standardized(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }
