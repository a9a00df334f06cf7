import ArgumentParser
import Foundation
import SignCore

@main
struct SignTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signtool",
        abstract: "Sign and verify HTTP requests with SignCore (\(SignCoreVersion.spec)).",
        subcommands: [Keygen.self, Hash.self, Sign.self, Verify.self, Vectors.self, Demo.self]
    )
}

/// Prints one line to standard error and exits with status 1.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("signtool: \(message)\n".utf8))
    Foundation.exit(1)
}

/// Runs `body`; any error becomes one line on standard error and exit status 1.
func orFail<T>(_ body: () throws -> T) -> T {
    do { return try body() } catch let error as SignCoreError { fail(error.description) } catch {
        fail(error.localizedDescription)
    }
}

func readFile(_ path: String) -> Data {
    guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
    return data
}

func readText(_ path: String) -> String {
    guard let text = String(data: readFile(path), encoding: .utf8) else { fail("\(path) is not UTF-8 text") }
    return text
}

func parseMethod(_ token: String) -> RequestMethod { orFail { try RequestMethod(token: token) } }

extension SignatureAlgorithm: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument.lowercased() {
        case "hmac", "hs256": self = .hmacSHA256
        case "ed25519", "eddsa": self = .ed25519
        case "p256", "p-256", "es256": self = .p256
        default: return nil
        }
    }

    public static var allValueStrings: [String] { ["hmac", "ed25519", "p256"] }
}

/// The request a command works on: method, URL and optional body file.
struct RequestArguments: ParsableArguments {
    @Argument(help: "GET, HEAD, OPTIONS, DELETE, POST, PUT or PATCH")
    var method: String

    @Argument(help: "The absolute request URL, as sent (sign, hash) or as received (verify).")
    var url: String

    @Option(help: "File holding the body, bytes exactly as sent; default: empty.")
    var body: String?

    var bodyBytes: [UInt8] { body.map { [UInt8](readFile($0)) } ?? [] }
}
