#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension WHash {
    /// The whash of a file's bytes as a body (SPEC §3.3), read in 64 KiB chunks in constant
    /// memory: a client hashes an upload once, then streams it. Throws `invalidInput` when
    /// the file cannot be read (the message names the path).
    public static func ofFile(atPath path: String) throws(SignCoreError) -> (whash: SHA256Digest, byteCount: UInt64) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SignCoreError(.invalidInput, "cannot open the body file \(path)") }
        defer { close(fd) }
        var hasher = BodyHasher()
        try withHeapBuffer(byteCount: 1 << 16, wiped: false) { (chunk) throws(SignCoreError) in
            while true {
                let n = read(fd, chunk.baseAddress, chunk.count)
                if n == 0 { break }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw SignCoreError(.invalidInput, "cannot read the body file \(path)")
                }
                hasher.update(UnsafeRawBufferPointer(rebasing: chunk[..<n]))
            }
        }
        let count = hasher.byteCount
        return (hasher.finalize(), count)
    }
}
