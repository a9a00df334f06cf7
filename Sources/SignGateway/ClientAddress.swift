import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SignCore

/// An IPv4 or IPv6 address as its bytes (4 or 16); an IPv4-mapped IPv6 address is its IPv4 one.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Parses the textual forms inet_pton accepts (no zone, no port, no brackets).
    public init?(_ text: some StringProtocol) {
        guard text.utf8.count <= 45, !text.isEmpty else { return nil }
        var v4 = in_addr(), v6 = in6_addr()
        let string = String(text)
        if inet_pton(AF_INET, string, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, string, &v6) == 1 {
            let all = withUnsafeBytes(of: &v6) { Array($0) }
            bytes = all[0..<12].elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) ? Array(all[12...]) : all
        } else {
            return nil
        }
    }

    init?(_ address: SocketAddress) {
        guard let text = address.ipAddress else { return nil }
        self.init(text)
    }

    public var isIPv6: Bool { bytes.count == 16 }

    /// The canonical text (RFC 5952 for IPv6, as inet_ntop writes it).
    public var description: String {
        var buffer = [CChar](repeating: 0, count: 64)
        var copy = bytes
        let family = isIPv6 ? AF_INET6 : AF_INET
        return copy.withUnsafeMutableBytes { raw in
            guard inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}

/// A network in CIDR notation (`10.0.0.0/8`, `::1/128`); an address alone is its /32 or /128.
public struct IPNetwork: Sendable, Hashable {
    public let address: IPAddress
    public let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(parts[0]) else { return nil }
        let bits = address.bytes.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...bits).contains(length), parts[1].allSatisfy(\.isASCII) else { return nil }
            prefixLength = length
        } else {
            prefixLength = bits
        }
        self.address = address
    }

    public func contains(_ other: IPAddress) -> Bool {
        guard other.bytes.count == address.bytes.count else { return false }
        var left = prefixLength
        for (a, b) in zip(address.bytes, other.bytes) where left > 0 {
            let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
            if a & mask != b & mask { return false }
            left -= 8
        }
        return true
    }
}

/// Sets the context's client address first thing: the TCP peer's, unless the peer is a trusted
/// proxy; then the rightmost address its `Forwarded` (RFC 7239) or, when it sent none,
/// `X-Forwarded-For` names that is not itself a trusted proxy. A list that cannot be read
/// (a name that is not an address, `unknown`, an obfuscated identifier) ends the walk at the
/// last trusted hop. Fields from anyone else are never read (and are removed upstream).
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let trusted: [IPNetwork]

    static let forwarded = HTTPField.Name("forwarded")!
    static let forwardedFor = HTTPField.Name("x-forwarded-for")!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.forwardingChain = chain(peer: context.peer.flatMap(IPAddress.init), fields: request.headers)
        return try await next(request, context)
    }

    /// The client and the hops from it to signd (the client first, the peer last), all addresses.
    func chain(peer: IPAddress?, fields: HTTPFields) -> [IPAddress] {
        guard let peer else { return [] }
        var chain = [peer]
        guard isTrusted(peer) else { return chain }
        let reported = fields[values: Self.forwarded].isEmpty
            ? fields[values: Self.forwardedFor].flatMap { $0.split(separator: ",") }.map { Self.trim($0) }
            : fields[values: Self.forwarded].flatMap { $0.split(separator: ",") }.map(Self.forValue)
        for entry in reported.reversed() {
            guard let address = entry.flatMap(IPAddress.init) else { break }
            chain.insert(address, at: 0)
            if !isTrusted(address) { break }
        }
        return chain
    }

    func isTrusted(_ address: IPAddress) -> Bool { trusted.contains { $0.contains(address) } }

    static func trim(_ text: Substring) -> String {
        String(text.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }

    /// The address of a `Forwarded` element's `for` parameter (`for=192.0.2.1`,
    /// `for="[2001:db8::1]:4711"`), or nil (absent, `unknown`, `_hidden`, not an address).
    static func forValue(_ element: Substring) -> String? {
        for pair in element.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, trim(parts[0]).lowercased() == "for" else { continue }
            var value = Substring(trim(parts[1]))
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = value.dropFirst().dropLast() }
            if value.hasPrefix("[") {
                guard let close = value.firstIndex(of: "]") else { return nil }
                return String(value[value.index(after: value.startIndex)..<close])
            }
            // An IPv4 address with a port: the part before the colon (an IPv6 one is bracketed).
            if let colon = value.firstIndex(of: ":"), value.filter({ $0 == ":" }).count == 1 { return String(value[..<colon]) }
            return String(value)
        }
        return nil
    }
}
