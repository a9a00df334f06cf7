/// Remembers the nonces of accepted tokens until they expire, so each token is accepted once
/// (SPEC §5, step 10). Entries are (key id, nonce, expiry): a nonce seen under one key never
/// blocks the same nonce under another, so nobody who sees a victim's token can get it refused
/// by spending its nonce first under a key of their own (as DPoP keys `jti` per sender key); a
/// replay repeats its token's signed expiry, so a guard may look for it under that expiry alone
/// (and may, like the PostgreSQL guard, also refuse the nonce under another expiry).
/// Implementations shared by a fleet of verifiers (a database) sit behind this same protocol.
public protocol ReplayGuard: Sendable {
    /// Records `nonce` of the key `keyID` as used until `expires` (seconds). Throws `replayed`
    /// when the entry is already recorded and not yet expired; `overloaded` when it cannot record
    /// it (a guard never forgets an unexpired nonce to make room); `expired` when `expires` is
    /// not after a time up to which the guard has already forgotten entries (the clock stepped
    /// back: the token could be a replay the guard can no longer recognise).
    func record(keyID: String, nonce: Nonce, expires: Int64, now: Int64) async throws(SignCoreError)
}
