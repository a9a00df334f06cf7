internal import CSignBytes

/// Zeroes memory that held secret material (libsodium's `sodium_memzero` where it is linked,
/// else a write the compiler cannot remove).
func wipe(_ memory: UnsafeMutableRawBufferPointer) {
    sc_memzero(memory.baseAddress, memory.count)
}

/// Zeroes an array that held secret material.
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { wipe($0) }
}

/// Calls `body` with `byteCount` bytes of heap memory (at least one), wiped before it is freed
/// when `wiped` (secrets, documents that hold them); never on the stack, so an input of any
/// size is safe.
func withHeapBuffer<R, E: Error>(byteCount: Int, wiped: Bool, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(byteCount, 1), alignment: 16)
    defer {
        if wiped { wipe(buffer) }
        buffer.deallocate()
    }
    return try body(UnsafeMutableRawBufferPointer(rebasing: buffer[..<byteCount]))
}

/// Bytes owned by an object, wiped before they are freed: a document whose lifetime is an
/// object's (a parsed key document) rather than one call's.
final class WipedStorage {
    let memory: UnsafeMutableRawBufferPointer

    init(byteCount: Int) {
        memory = .allocate(byteCount: max(byteCount, 1), alignment: 16)
    }

    deinit {
        wipe(memory)
        memory.deallocate()
    }
}

/// A secret's file for the modules that hold other secrets than keys (a Play Integrity
/// decryption key): `body` gets the file's bytes in memory that is wiped after, and may wipe the
/// arrays it derives with `wipeSecret`.
@_spi(SignCoreTools)
public func withSecretFile<R>(_ path: String, _ body: (UnsafeRawBufferPointer) throws(SignCoreError) -> R) throws(SignCoreError) -> R {
    try JWK.withFile(path, body)
}

/// Zeroes an array that held secret material.
@_spi(SignCoreTools)
public func wipeSecret(_ bytes: inout [UInt8]) { wipe(&bytes) }
