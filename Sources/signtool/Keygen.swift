import ArgumentParser
import Foundation
import SignCore

struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Generate a key and print it as a private JWK.")

    @Argument(help: "hmac | ed25519 | p256")
    var algorithm: SignatureAlgorithm

    @Option(help: "Key id (1-64 characters of A-Z a-z 0-9 - _); default: the RFC 7638 thumbprint.")
    var kid: String?

    @Option(help: "Also write the public JWK Set (for verifiers) to this file (not for hmac).")
    var publicOut: String?

    func run() {
        let key = orFail { try SigningKey.generate(algorithm, id: kid) }
        if let publicOut {
            let document = orFail { try JWK.serialize([key.publicOnly()], includePrivate: false) }
            guard FileManager.default.createFile(atPath: publicOut, contents: Data((document + "\n").utf8)) else {
                fail("cannot write \(publicOut)")
            }
        }
        print(orFail { try JWK.serialize(key, includePrivate: true) })
    }
}
