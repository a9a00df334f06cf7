extension Unmanaged {
    /// Calls `body` with the object, taking no reference (the caller knows something else holds
    /// it): `_withUnsafeGuaranteedRef` with a typed throw.
    func withObject<R, E: Error>(_ body: (Instance) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = _withUnsafeGuaranteedRef { object in
            do throws(E) { return .success(try body(object)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
