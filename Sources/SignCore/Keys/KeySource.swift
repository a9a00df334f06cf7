/// Keys a verifier looks up by id when its key set does not hold them: per-device keys in a
/// database, say. The verifier calls it through a `KeyCache`, never per request.
public protocol KeySource: Sendable {
    /// The key with this id, or nil when there is none. Throws `unavailable` (or another
    /// `SignCoreError`) when the source cannot answer; the request is then refused, never let
    /// through.
    func key(id: String) async throws(SignCoreError) -> SigningKey?
}
