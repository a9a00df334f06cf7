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

/// Zeroes an array that held secret material.
@_spi(SignCoreTools)
public func wipeSecret(_ bytes: inout [UInt8]) { wipe(&bytes) }

/// The bytes of a secret written as base64 in a file (either alphabet, padded or not, white
/// space around it): the file read into wiped memory, the text normalised there, decoded in
/// constant time. The caller wipes the result (`wipeSecret`). `invalidConfiguration` when the
/// file cannot be read or does not hold base64; the message names the path, never the content.
@_spi(SignCoreTools)
public func readSecretBase64(file path: String) throws(SignCoreError) -> [UInt8] {
    try JWK.withFile(path) { (bytes) throws(SignCoreError) -> [UInt8] in
        try withHeapBuffer(byteCount: bytes.count, wiped: true) { (text) throws(SignCoreError) -> [UInt8] in
            var count = 0
            for byte in bytes where byte != 0x20 && byte != 0x0A && byte != 0x0D && byte != 0x09 && byte != UInt8(ascii: "=") {
                text[count] = byte == UInt8(ascii: "+") ? UInt8(ascii: "-") : byte == UInt8(ascii: "/") ? UInt8(ascii: "_") : byte
                count += 1
            }
            // Decoded into wiped memory too, and copied out only when valid: a failed decode leaves nothing.
            return try withHeapBuffer(byteCount: count, wiped: true) { (out) throws(SignCoreError) -> [UInt8] in
                var writer = ByteWriter(out)
                guard Base64URL.decodedLength(count) != nil,
                      Base64URL.decodeSecret(UnsafeRawBufferPointer(rebasing: text[..<count]), into: &writer) else {
                    throw SignCoreError(.invalidConfiguration, "the file \(path) does not hold base64")
                }
                return Array(writer.written)
            }
        }
    }
}
