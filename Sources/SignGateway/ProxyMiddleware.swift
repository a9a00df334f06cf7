import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import SignCore
import SignHTTP
import SignHummingbird

/// Header fields signd treats specially on their way upstream.
enum GatewayFields {
    /// Fields that only signd may set: forwarding and method or URL overrides, which an upstream
    /// or a framework in front of it would believe. A client's own are removed; the `X-Forwarded-*`
    /// signd sets are added after.
    static let owned: Set<String> = [
        "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-forwarded-prefix",
        "x-forwarded-server", "x-forwarded-ssl", "x-real-ip", "x-client-ip", "true-client-ip", "x-original-url", "x-rewrite-url",
        "x-original-uri", "x-original-host", "x-original-method", "x-http-method-override", "x-http-method", "x-method-override",
        "x-forwarded-scheme", "x-forwarded-protocol", "x-forwarded-uri", "x-forwarded-path", "x-forwarded", "forwarded-for",
        "x-url-scheme", "front-end-https", "client-ip", "x-cluster-client-ip", "cf-connecting-ip", "fastly-client-ip",
        "x-original-forwarded-for", "x-envoy-original-path", "x-host",
        // CGI turns `Proxy` into HTTP_PROXY, which HTTP clients in the upstream take as their proxy (httpoxy).
        "proxy",
    ]

    /// Fields that make a framework act on another method or URL than the request's (forward
    /// auth refuses them: it cannot remove them on their way to the upstream).
    static let overrides: Set<String> = ["x-http-method-override", "x-http-method", "x-method-override", "x-original-url",
                                         "x-rewrite-url", "x-envoy-original-path"]

    /// `x_tenant` beside a covered `x-tenant`: a CGI or WSGI upstream merges the two into one
    /// variable, which the signature would then not cover.
    static func misspeltCoveredField(_ fields: HTTPFields, context: GatewayRequestContext) -> SignCoreError? {
        guard let signature = context.signature else { return nil }
        let covered = Set(signature.coveredHeaders)
        let coveredSpellings = Set(covered.map { $0.replacingOccurrences(of: "_", with: "-") })
        guard fields.contains(where: { !covered.contains($0.name.canonicalName) && coveredSpellings.contains(spelling($0.name)) }) else { return nil }
        return SignCoreError(.invalidHeader, "a field is spelt like a covered field but is not covered")
    }

    /// A field name as CGI, WSGI and many frameworks read it: case-insensitive, `_` for `-`
    /// (`signcore_account` and `Signcore-Account` both become `HTTP_SIGNCORE_ACCOUNT`).
    static func spelling(_ name: HTTPField.Name) -> String {
        name.canonicalName.contains("_") ? name.canonicalName.replacingOccurrences(of: "_", with: "-") : name.canonicalName
    }
}

/// Forwards every request that got this far to the upstream, with its path and query, and
/// streams the response back. Never calls `next`: it is the last middleware.
///
/// Forwarded fields: the client's, less hop-by-hop fields, the whash and wtoken (spent), and the
/// identity fields, which are always removed first and then set from the verified signature
/// only: a client can never name an identity itself. The verdict, `x-forwarded-host`,
/// `x-forwarded-proto`, `x-forwarded-for` and `forwarded` are set the same way. A streamed body that fails its whash aborts the upstream request before
/// its end (the connection is closed) and the client gets the refusal.
struct ProxyMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let client: UpstreamClient
    let origin: ServerOrigin
    let names: SignHeaderNames
    /// The attestation token's field, when attestation is configured: spent here like the wtoken
    /// (the upstream gets its levels in the identity fields, and could not check its key binding).
    let attestationToken: HTTPField.Name?
    let identity: IdentityFields
    /// The settings of routes without their own (`GatewayRoutes.decide` sets the route's).
    let routes: GatewayRoutes
    let metrics: GatewayMetrics
    /// Fields never forwarded, by canonical name: hop-by-hop fields, `Host`, and the spent whash,
    /// wtoken and attestation token.
    let spent: Set<String>

    init(client: UpstreamClient, origin: ServerOrigin, names: SignHeaderNames, attestationToken: HTTPField.Name?, identity: IdentityFields,
         routes: GatewayRoutes, metrics: GatewayMetrics) {
        self.client = client
        self.origin = origin
        self.names = names
        self.attestationToken = attestationToken
        self.identity = identity
        self.routes = routes
        self.metrics = metrics
        spent = Set((Self.hopByHop + [ReceivedRequest.hostField, names.whash, names.wtoken] + [attestationToken].compactMap { $0 }).map(\.canonicalName))
    }

    struct IdentityFields: Sendable {
        let keyID: HTTPField.Name
        let account: HTTPField.Name
        let algorithm: HTTPField.Name
        let verdict: HTTPField.Name
        /// The levels of the attestation token that met the route (docs/ATTEST.md).
        let attestation: HTTPField.Name
        /// Every field name only signd sets, these included, as `GatewayFields.spelling` gives it.
        let owned: Set<String>

        init(keyID: HTTPField.Name, account: HTTPField.Name, algorithm: HTTPField.Name, verdict: HTTPField.Name, attestation: HTTPField.Name) {
            self.keyID = keyID
            self.account = account
            self.algorithm = algorithm
            self.verdict = verdict
            self.attestation = attestation
            owned = GatewayFields.owned.union([keyID, account, algorithm, verdict, attestation].map(GatewayFields.spelling))
        }

        /// The five identity fields' names.
        var names: [HTTPField.Name] { [keyID, account, algorithm, verdict, attestation] }

        /// The account as the upstream reads it: its UTF-8 bytes with every byte other than a
        /// letter, a digit or `-._~@:` as `%XX` (RFC 3986), so accounts that differ arrive
        /// different (a field value would lose leading spaces, controls and invalid text).
        static func encode(account: String) -> String {
            var out = ""
            out.reserveCapacity(account.utf8.count)
            for byte in account.utf8 {
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                     UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "@"), UInt8(ascii: ":"):
                    out.unicodeScalars.append(Unicode.Scalar(byte))
                default:
                    let hex = Array("0123456789ABCDEF".unicodeScalars)
                    out.unicodeScalars.append("%")
                    out.unicodeScalars.append(hex[Int(byte >> 4)])
                    out.unicodeScalars.append(hex[Int(byte & 0xF)])
                }
            }
            return out
        }

        /// Each identity field and its value for the request, empty where it has none: the key
        /// id, algorithm and account of a verified signature, the verdict, the attestation levels.
        func values(for context: GatewayRequestContext) -> [(HTTPField.Name, String)] {
            let signature = context.signature
            return [(keyID, signature?.keyID ?? ""), (algorithm, signature?.algorithm.rawValue ?? ""),
                    (account, signature.map { Self.encode(account: $0.account) } ?? ""),
                    (verdict, Self.encode(verdict: context.signCore.verdict)),
                    (attestation, context.signCore[Attested.self].map { String($0.levels.rawValue) } ?? "")]
        }

        /// The verdict as an RFC 8941 item: `off` (the route checks nothing), `verified`,
        /// `verified;body=streamed` (the body still streams: act on nothing before its end), or
        /// on a `monitor` route `failed;error=<name>` (the request goes on unproven).
        static func encode(verdict: SignatureVerdict) -> String {
            switch verdict {
            case .unchecked: "off"
            case .verified(let streamed): streamed ? "verified;body=streamed" : "verified"
            case .failed(let code): "failed;error=\(code.name)"
            }
        }
    }

    static var forwardedHost: HTTPField.Name { HTTPField.Name("x-forwarded-host")! }
    static var forwardedProto: HTTPField.Name { HTTPField.Name("x-forwarded-proto")! }

    /// RFC 7239 `Forwarded` for the client, the host verified and the scheme; an IPv6 address and
    /// the host are quoted strings.
    static func forwarded(client: IPAddress?, host: String?, proto: String) -> String {
        var parts: [String] = []
        if let client { parts.append(client.isIPv6 ? "for=\"[\(client)]\"" : "for=\(client)") }
        if let host { parts.append("host=\"\(host)\"") }  // a validated authority: no quote or backslash
        parts.append("proto=\(proto)")
        return parts.joined(separator: ";")
    }

    /// RFC 9110 §7.6.1: connection-specific fields are not forwarded.
    static let hopByHop: [HTTPField.Name] =
        [.connection, .transferEncoding, .te, .trailer, .upgrade, .proxyAuthorization, .proxyAuthenticate, .contentLength,
         HTTPField.Name("keep-alive")!, HTTPField.Name("proxy-connection")!]


    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // Fields the Connection field names are hop-by-hop too (one the signature covers was refused
        // by SignatureMiddleware before verification).
        let listed = request.headers[values: .connection].flatMap { $0.split(separator: ",") }.compactMap {
            HTTPField.Name(String($0.trimmingCharacters(in: .whitespaces)))?.canonicalName
        }
        if let refusal = GatewayFields.misspeltCoveredField(request.headers, context: context) { return Response(Refusal(refusal)) }
        // `Host` is the upstream's own, set by UpstreamClient from the upstream URL: no host a
        // client names reaches an upstream that routes virtual hosts by it (the verified one is
        // in `x-forwarded-host`). Identity fields and the fields signd owns go under every
        // spelling a server could read as theirs.
        let removed = listed.isEmpty ? spent : spent.union(listed)
        var fields = HTTPFields(request.headers.filter { !removed.contains($0.name.canonicalName) && !identity.owned.contains(GatewayFields.spelling($0.name)) })
        for (name, value) in identity.values(for: context) where !value.isEmpty { fields[name] = value }
        let authority = origin.authority ?? request.head.authority
        if let authority { fields[Self.forwardedHost] = authority }
        fields[Self.forwardedProto] = origin.scheme
        // The client and the proxies it came through, as signd established them: never a list a
        // client wrote (`TrustedProxies.placeClient`).
        if !context.forwardingChain.isEmpty {
            fields[TrustedProxies.forwardedFor] = context.forwardingChain.map(\.description).joined(separator: ", ")
        }
        fields[TrustedProxies.forwarded] = Self.forwarded(client: context.clientAddress, host: authority, proto: origin.scheme)

        // The target as received and verified, byte for byte (`RequestTarget` checked it).
        var outgoing = HTTPRequestHead(version: .http1_1, method: NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue),
                                       uri: request.head.path ?? "/", headers: HTTPHeaders(fields))
        Self.joinCookies(&outgoing.headers)
        let length = request.headers[.contentLength].flatMap(Int64.init)
        let timeout = routes.upstreamTimeout(for: context.signCore.routeDecision)
        // The most body bytes forwarded for this request, on every route (`off` ones included).
        // An HTTP/2 request is whole only at its end (END_STREAM; RFC 9113 §8.1.1: a body past
        // its stated length is malformed): the upstream never gets it whole before then, so the
        // chunk that reaches the stated length waits for the end, and so does a head stating 0.
        var body = length != nil || request.headers[.transferEncoding] != nil
            ? UpstreamBody(request.body, limit: routes.body(for: context.signCore.routeDecision).limit,
                           completedAtEnd: context.onHTTP2Stream ? length : nil) : nil
        if context.onHTTP2Stream, length == 0, let empty = body {
            if let failure = await empty.readRest() {
                return Response(Refusal(failure as? SignCoreError ?? SignCoreError(.invalidInput, "the request body did not match its length")))
            }
            body = nil
        }
        let upload = body
        switch (upload, length) {
        case (nil, _) where ![.GET, .HEAD, .OPTIONS, .DELETE, .TRACE, .CONNECT].contains(outgoing.method):
            outgoing.headers.replaceOrAdd(name: "content-length", value: "0")
        case (nil, _): break
        case (_, let length?): outgoing.headers.replaceOrAdd(name: "content-length", value: String(length))
        case (_, nil): outgoing.headers.replaceOrAdd(name: "transfer-encoding", value: "chunked")
        }
        let started = ContinuousClock.now
        do {
            let (client, head, chunks, loop) = (client, outgoing, upload?.chunks, context.eventLoop)
            let response = try await context.onHTTP2Stream
                ? Self.cancellable(by: context.cutShort) { try await client.execute(head, body: chunks, timeout: timeout, on: loop) }
                : client.execute(head, body: chunks, timeout: timeout, on: loop)
            metrics.upstream(String(response.head.status.code), elapsed: ContinuousClock.now - started)
            var headers = HTTPFields(response.head.headers, splitCookie: false)
            for name in Self.hopByHop where name != .contentLength { headers[name] = nil }
            // A signed body still arriving when the upstream answers: its answer is relayed only once
            // the rest of the body has been read and matched the whash (an upstream that acted on a
            // tampered prefix must not look like a success to the client). The wait is bounded.
            if let upload, !upload.isComplete, context.signature != nil {
                if let failure = await readRest(of: upload, timeout: timeout) {
                    await upload.finish()
                    var refusal = Response(Refusal(failure as? SignCoreError
                        ?? SignCoreError(.invalidInput, "the request body did not arrive whole")))
                    refusal.headers[.connection] = "close"
                    return refusal
                }
            }
            // An unsigned body the upstream did not wait for: what is left of the request is never
            // read, and the connection cannot serve another.
            if let upload, !upload.isComplete { headers[.connection] = "close" }
            let status = HTTPResponse.Status(code: Int(response.head.status.code), reasonPhrase: response.head.status.reasonPhrase)
            context.upstreamAnswered.withLockedValue { $0 = true }
            // (Not for HEAD: its answer's length fields describe a body it does not carry.)
            if upload == nil, outgoing.method != .HEAD, let whole = response.body.buffer.whole() {
                return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: whole))
            }
            return Response(status: status, headers: headers, body: ResponseBody { writer in
                do {
                    try await writer.write(response.body)
                } catch {
                    await upload?.finish()
                    throw error
                }
                await upload?.finish()  // before the server reads on: the upload is the body's only reader until then
                try await writer.finish(nil)
            })
        } catch {
            await upload?.finish()
            // The client's connection cut the request short (the client gone, or its body too
            // slow): no fault of the upstream's, and nobody reads this answer.
            if context.cutShort.status != nil || Task.isCancelled {
                metrics.upstream("cancelled", elapsed: ContinuousClock.now - started)
                return Response(status: .init(code: 499, reasonPhrase: "Client Closed Request"))
            }
            if let error = error as? SignCoreError { return Response(Refusal(error)) }
            // The upstream failed or did not answer in time: nothing of the request in the log.
            // Every upstream connection busy for the connect timeout: never sent, so safe to retry.
            if error as? UpstreamFailure == .busy {
                metrics.upstream("busy", elapsed: ContinuousClock.now - started)
                return Response(Refusal(SignCoreError(.overloaded, "every connection to the upstream is busy")))
            }
            let timedOut = error as? UpstreamFailure == .timedOut
            metrics.upstream(timedOut ? "timeout" : "failed", elapsed: ContinuousClock.now - started)
            context.logger.warning("upstream request failed", metadata: ["signd.error": .string(String(describing: type(of: error))),
                                                                         "signd.timeout": .stringConvertible(timedOut)])
            return Response(Refusal(timedOut ? SignCoreError(.upstreamTimeout, "the upstream did not answer in time")
                                             : SignCoreError(.upstreamFailed, "the upstream failed or could not be reached")))
        }
    }
}

extension ProxyMiddleware {
    /// An HTTP/2 client may send `cookie` as several fields (RFC 9113 §8.2.3), and HTTPTypes keeps
    /// a cookie as such crumbs whatever the protocol: on their way to an HTTP/1.1 upstream they are
    /// one field, joined with `; ` (RFC 6265 §5.4).
    static func joinCookies(_ headers: inout HTTPHeaders) {
        let cookies = headers["cookie"]
        guard cookies.count > 1 else { return }
        headers.replaceOrAdd(name: "cookie", value: cookies.joined(separator: "; "))
    }

    /// `operation` in a task of its own, cancelled when the request is cut short: an HTTP/2
    /// stream's request task is not cancelled by a reset (RST_STREAM), and the upstream exchange of
    /// a reset stream must not go on (its place is free for another at once: CVE-2023-44487).
    static func cancellable<T: Sendable>(by cut: CutShort, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task {
            try Task.checkCancellation()  // cut before it began (`whenCut` runs at once then)
            return try await operation()
        }
        cut.whenCut { task.cancel() }
        defer { cut.whenCut(nil) }  // the task holds its result (the upstream's answer) for as long as the action lasts
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }

    /// The rest of a signed body, read within the upstream timeout; the error that ended it, or
    /// nil when it ended well.
    func readRest(of upload: UpstreamBody, timeout: TimeAmount) async -> (any Error)? {
        let seconds = Int64(timeout.nanoseconds / 1_000_000_000)
        return await withTaskGroup(of: (any Error)?.self) { group in
            group.addTask { await upload.readRest() }
            group.addTask {
                try? await Task.sleep(for: .seconds(max(1, seconds)))
                if !Task.isCancelled { upload.stopReading() }  // the other task then returns too
                return SignCoreError(.invalidInput, "the request body did not arrive in time")
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
