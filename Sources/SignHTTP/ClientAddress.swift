import Foundation
import HTTPTypes

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
            guard (1...3).contains(parts[1].utf8.count), parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let length = Int(parts[1]), (0...bits).contains(length) else { return nil }
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

extension IPAddress {
    /// The part of the address a rate limit keys on (docs/ATTEST.md §10.2): an IPv4 address whole,
    /// an IPv6 address's /64 prefix (one subscriber's network: a host there has 2^64 addresses).
    public var rateLimitKey: String {
        guard isIPv6 else { return description }
        return IPAddress(bytes: Array(bytes[0..<8]) + [UInt8](repeating: 0, count: 8)).description + "/64"
    }

    init(bytes: [UInt8]) { self.bytes = bytes }
}

/// The proxies whose word on a client's address is taken (docs/SIGND.md): the TCP peer's address,
/// unless the peer is a trusted proxy; then the rightmost address that is not itself a trusted
/// proxy in the one field the proxies write (`X-Forwarded-For`, or RFC 7239 `Forwarded`: proxies
/// that write one pass a client's other one through untouched). A list that cannot be read (a
/// name that is not an address, `unknown`, an obfuscated identifier, a malformed element) ends the
/// walk at the last trusted hop, and so does the 32nd hop. Fields from anyone else are never read.
public struct TrustedProxies: Sendable {
    public enum Field: String, Sendable, CaseIterable {
        case xForwardedFor = "x-forwarded-for"
        case forwarded
    }

    public let trusted: [IPNetwork]
    /// Which field the trusted proxies write.
    public let field: Field

    public static let forwarded = HTTPField.Name("forwarded")!
    public static let forwardedFor = HTTPField.Name("x-forwarded-for")!
    /// The most hops read from a trusted proxy's list.
    static let maxHops = 32

    public init(_ trusted: [IPNetwork], field: Field = .xForwardedFor) {
        self.trusted = trusted
        self.field = field
    }

    /// The client's address: the first of `chain`.
    public func clientAddress(peer: IPAddress?, fields: HTTPFields) -> IPAddress? { chain(peer: peer, fields: fields).first }

    /// The client and the hops from it to this server (the client first, the peer last), all addresses.
    public func chain(peer: IPAddress?, fields: HTTPFields) -> [IPAddress] {
        guard let peer else { return [] }
        var reversed = [peer]
        guard isTrusted(peer) else { return reversed }
        let reported: [String?] = switch field {
        case .xForwardedFor: fields[values: Self.forwardedFor].flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { Self.address(in: Self.trim($0)) }
        case .forwarded: fields[values: Self.forwarded].flatMap { Self.forValues($0) ?? Self.trailingForValues($0) }
        }
        for entry in reported.reversed() {
            guard reversed.count <= Self.maxHops, let address = entry.flatMap(IPAddress.init) else { break }
            reversed.append(address)
            if !isTrusted(address) { break }
        }
        return reversed.reversed()
    }

    public func isTrusted(_ address: IPAddress) -> Bool { trusted.contains { $0.contains(address) } }

    static func trim(_ text: Substring) -> String {
        String(text.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }

    /// The `for` address of each element of a `Forwarded` field value (RFC 7239 §4: elements by
    /// `,`, pairs by `;`, each value a token or a quoted-string, in which `,` `;` `=` are text),
    /// nil for an element without one or whose `for` is no address (`unknown`, `_hidden`); nil
    /// for the whole value when it does not parse.
    static func forValues(_ value: String) -> [String?]? {
        var elements: [String?] = []
        var current: String?
        var bytes = Array(value.utf8)[...]
        func skipSpace() { while let b = bytes.first, b == 0x20 || b == 0x09 { bytes.removeFirst() } }
        while true {
            skipSpace()
            // name
            var name: [UInt8] = []
            while let b = bytes.first, b != UInt8(ascii: "="), b != UInt8(ascii: ";"), b != UInt8(ascii: ","), b != 0x20, b != 0x09 {
                name.append(b); bytes.removeFirst()
            }
            skipSpace()
            if !name.isEmpty {
                guard bytes.first == UInt8(ascii: "=") else { return nil }
                bytes.removeFirst()
                skipSpace()
                var text: [UInt8] = []
                if bytes.first == UInt8(ascii: "\"") {
                    bytes.removeFirst()
                    var closed = false
                    while let b = bytes.first {
                        bytes.removeFirst()
                        if b == UInt8(ascii: "\\") {
                            guard let escaped = bytes.first else { return nil }
                            text.append(escaped); bytes.removeFirst()
                        } else if b == UInt8(ascii: "\"") {
                            closed = true; break
                        } else {
                            text.append(b)
                        }
                    }
                    guard closed else { return nil }
                } else {
                    while let b = bytes.first, b != UInt8(ascii: ";"), b != UInt8(ascii: ","), b != 0x20, b != 0x09 {
                        guard b > 0x20, b < 0x7F, b != UInt8(ascii: "\""), b != UInt8(ascii: "=") else { return nil }
                        text.append(b); bytes.removeFirst()
                    }
                    guard !text.isEmpty else { return nil }
                }
                if String(decoding: name, as: UTF8.self).lowercased() == "for" {
                    guard current == nil else { return nil }  // one `for` per element
                    current = address(in: String(decoding: text, as: UTF8.self))
                }
                skipSpace()
            }
            guard let b = bytes.first else { elements.append(current); return elements }
            bytes.removeFirst()
            if b == UInt8(ascii: ",") { elements.append(current); current = nil } else if b != UInt8(ascii: ";") { return nil }
        }
    }

    /// The `for` addresses of the elements at the end of a `Forwarded` value whose start does not
    /// parse (a client's unclosed quote), after an unreadable one: the elements the proxies
    /// appended are still read, from the right, and the walk stops where the client's begin.
    static func trailingForValues(_ value: String) -> [String?] {
        // Only the last hops are read anyway: the tails after the last maxHops + 1 commas, the
        // longest first (so no value makes this quadratic).
        let commas = value.indices.filter { value[$0] == "," }.suffix(maxHops + 1)
        for comma in commas {
            if let tail = forValues(String(value[value.index(after: comma)...])) { return [nil] + tail }
        }
        return [nil]
    }

    /// The address of a `for` value: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]:4711`, `[2001:db8::1]`.
    static func address(in value: String) -> String? {
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return nil }
            return String(value[value.index(after: value.startIndex)..<close])
        }
        if let colon = value.firstIndex(of: ":"), value.filter({ $0 == ":" }).count == 1 { return String(value[..<colon]) }
        return value
    }
}
