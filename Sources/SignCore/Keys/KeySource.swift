/// Keys a verifier looks up by id when its key set does not hold them: per-device keys in a
/// database, say. The verifier calls it through a `KeyCache`, never per request.
public protocol KeySource: Sendable {
    /// The record of the key with this id, or nil when there is none. Throws `unavailable` (or
    /// another `SignCoreError`) when the source cannot answer; the request is then refused, never
    /// let through.
    func record(id: String) async throws(SignCoreError) -> KeyRecord?
}

/// A key as a source keeps it: the key, whether it may verify, and what the source knows of it.
public struct KeyRecord: Sendable {
    public var key: SigningKey
    public var status: Status
    /// What the source keeps with the key (a device's model, the account it belongs to, when it
    /// was registered): public text, for the flows that read it; never a secret.
    public var metadata: [String: String]

    public init(key: SigningKey, status: Status = .active, metadata: [String: String] = [:]) {
        self.key = key
        self.status = status
        self.metadata = metadata
    }

    /// Whether a key may verify. Open, as error codes are: a flow adds its own (a device
    /// suspended pending review, say) as a static member.
    public struct Status: Sendable, Hashable, CustomStringConvertible {
        public let name: String
        /// Whether tokens under a key in this status verify; a key that may not is answered as
        /// unknown (`unknownKey`).
        public let verifies: Bool

        public init(_ name: String, verifies: Bool) {
            self.name = name
            self.verifies = verifies
        }

        public var description: String { name }

        public static let active = Status("active", verifies: true)
        public static let revoked = Status("revoked", verifies: false)
    }
}
