/// A request body: the bytes, or the whash of bytes that were streamed through
/// `WHash.BodyHasher` or are held elsewhere (`.whash(WHash.ofBody(buffer))`: no copy) (SPEC §3.2).
public enum RequestBody: Sendable {
    case bytes([UInt8])
    case whash(SHA256Digest)

    /// The body's whash if `method` is body-class; nil for a URL-class method, whose whash is
    /// its canonical URL's. A plain digest, unlike the body, costs nothing to pass around.
    func whash(for method: RequestMethod) -> SHA256Digest? {
        guard method.contentClass == .body else { return nil }
        switch self {
        case .bytes(let bytes): return WHash.ofBody(bytes)
        case .whash(let digest): return digest
        }
    }

    /// Whether there are no body bytes (a streamed body: its whash is that of no bytes).
    var isEmpty: Bool {
        switch self {
        case .bytes(let bytes): bytes.isEmpty
        case .whash(let digest): digest == WHash.ofEmptyBody
        }
    }
}
