import ArgumentParser
import Foundation
import SignCore

@main
struct SignTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signtool",
        abstract: "Sign and verify HTTP requests with SignCore (\(SignCoreVersion.spec)).",
        discussion: """
            Exit status: 0 success (verify: the request was accepted); 1 verify refused the request \
            (the reason is printed); 64 usage error; 65 invalid input (a key, URL, body or header \
            value that cannot be used); 66 an input file cannot be read; 73 an output file cannot be \
            written or exists (keygen --force replaces it); 70 internal error. Errors are one line on \
            standard error; text from a token or an input is printed escaped.
            """,
        subcommands: [Keygen.self, Hash.self, Sign.self, Verify.self, Vectors.self, Demo.self]
    )

    /// Parses and runs the command; a usage error is one line on standard error (exit 64),
    /// `--help` prints the full text.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand { try await command.run() } else { try command.run() }
        } catch {
            let code = exitCode(for: error)
            guard code == .validationFailure else { exit(withError: error) }  // --help, --version, clean exits
            let message = message(for: error).split(whereSeparator: \.isNewline).first.map(String.init) ?? "invalid usage"
            fail("\(message) (see signtool help)", .usage)
        }
    }
}

/// Exit statuses (sysexits.h where one fits), so scripts can tell a refused request from a
/// broken setup.
enum Status: Int32 {
    case refused = 1
    case usage = 64
    case invalidInput = 65
    case cannotRead = 66
    case internalError = 70
    case cannotWrite = 73
}

/// Prints one line to standard error, with anything that could forge or break a line escaped,
/// and exits with `status`.
func fail(_ message: String, _ status: Status = .invalidInput) -> Never {
    FileHandle.standardError.write(Data("signtool: \(printable(message))\n".utf8))
    Foundation.exit(status.rawValue)
}

/// Runs `body`; a SignCore error becomes one line on standard error and exit status 65.
func orFail<T>(_ body: () throws -> T) -> T {
    do { return try body() } catch let error as SignCoreError { fail(error.description) } catch {
        fail("\(error)", .internalError)
    }
}

/// `text` safe to print on one terminal line: every scalar that is not a visible character or a
/// plain space (controls C0/DEL/C1, format characters such as bidirectional marks and overrides,
/// zero-width characters and the BOM, line and paragraph separators, other separators, private-use
/// and unassigned scalars) is written as `\u{XX}`, and a backslash as `\\`, so text taken from a
/// token or an input cannot start a new line, rewrite or hide part of one, or pose as the tool's
/// own output. With `quoted`, the result is wrapped in double quotes and `"` is written `\"`: a
/// field value that cannot pose as another `name=value` field.
func printable(_ text: String, quoted: Bool = false) -> String {
    var out = quoted ? "\"" : ""
    for scalar in text.unicodeScalars {
        if scalar == "\\" {
            out += "\\\\"
        } else if quoted, scalar == "\"" {
            out += "\\\""
        } else if scalar == " " || isVisible(scalar) {
            out.unicodeScalars.append(scalar)
        } else {
            out += "\\u{" + String(scalar.value, radix: 16) + "}"
        }
    }
    return quoted ? out + "\"" : out
}

/// Whether `scalar` shows as itself: a letter, mark, number, punctuation or symbol.
private func isVisible(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .control, .format, .surrogate, .privateUse, .unassigned, .spaceSeparator, .lineSeparator, .paragraphSeparator:
        return false
    default:
        return true
    }
}

/// Refuses (a usage error) more than one of `options` (name: path) reading standard input (`-`).
func atMostOneStandardInput(_ options: KeyValuePairs<String, String?>) throws {
    let readers = options.filter { $0.value == "-" }.map(\.key)
    if readers.count > 1 { throw ValidationError("only one of \(readers.joined(separator: ", ")) can be standard input ('-')") }
}

/// The bytes of a file, or of standard input for `-`; a failure names the reason.
func readBytes(_ path: String) -> [UInt8] {
    let fd = path == "-" ? STDIN_FILENO : open(path, O_RDONLY)
    guard fd >= 0 else { fail("cannot read \(path): \(String(cString: strerror(errno)))", .cannotRead) }
    defer { if fd != STDIN_FILENO { close(fd) } }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n == 0 { break }
        if n < 0 {
            if errno == EINTR { continue }
            fail("cannot read \(path): \(String(cString: strerror(errno)))", .cannotRead)
        }
        bytes += chunk[..<n]
    }
    return bytes
}

/// A key document read as bytes and wiped once parsed: the key's text never becomes a String.
func withKeyFile<T>(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> T) -> T {
    var bytes = readBytes(path)
    defer { bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
    return orFail { try bytes.withUnsafeBytes { try body($0) } }
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

/// The request a command works on: method, URL, optional body and header fields.
struct RequestArguments: ParsableArguments {
    @Argument(help: "GET, HEAD, OPTIONS, DELETE, POST, PUT or PATCH")
    var method: String

    @Argument(help: "The absolute request URL, as sent (sign, hash) or as received (verify).")
    var url: String

    @Option(help: "File holding the body, bytes exactly as sent ('-': standard input); default: empty.")
    var body: String?

    @Option(name: .customLong("header"), help: "A header field of the request, 'Name: value' (repeatable).")
    var headers: [String] = []

    var bodyBytes: [UInt8] { body.map(readBytes) ?? [] }

    var headerFields: [HeaderField] {
        headers.map { line in
            guard let colon = line.firstIndex(of: ":") else { fail("a --header must be 'Name: value'", .usage) }
            return HeaderField(String(line[..<colon]), String(line[line.index(after: colon)...]))
        }
    }
}
