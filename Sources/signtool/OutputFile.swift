import Foundation

/// A failure the CLI reports as one line on standard error with its exit status.
struct CLIFailure: Error {
    let message: String
    let status: Status
}

/// A file being written, created with its final mode before anything is written to it (never
/// readable more widely, even briefly), and left in place only by `commit()`.
///
/// A new file is created at its path with `O_CREAT | O_EXCL` (an existing file or symlink is
/// refused). When replacing, the content goes to a new file beside the target (`mkstemp`), which
/// `commit()` renames over it: a symlink at the path is replaced, not followed, and a reader that
/// opened the old file never sees the new content.
final class OutputFile {
    let path: String
    private var fd: Int32
    /// The temporary file renamed over `path` on commit, when replacing.
    private let temporary: String?
    /// Committed or discarded: nothing more to undo.
    private var settled = false

    /// Creates the file (or, with `replace`, its temporary) now, so that an existing file, a
    /// missing folder or a missing permission is reported before any content exists.
    init(path: String, mode: mode_t, replace: Bool) throws(CLIFailure) {
        self.path = path
        if replace {
            var status = stat()
            if lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
                throw CLIFailure(message: "cannot write \(path): \(String(cString: strerror(EISDIR)))", status: .cannotWrite)
            }
            let url = URL(fileURLWithPath: path)
            var template = Array((url.deletingLastPathComponent().path + "/." + url.lastPathComponent + ".XXXXXX").utf8CString)
            fd = mkstemp(&template)  // mode 0600, O_EXCL
            temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        } else {
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
            temporary = nil
        }
        guard fd >= 0 else {
            let reason = errno == EEXIST ? "it exists (pass --force to replace it)" : String(cString: strerror(errno))
            throw CLIFailure(message: "cannot write \(path): \(reason)", status: .cannotWrite)
        }
        // The exact mode, whatever the umask (which can only have narrowed it).
        guard fchmod(fd, mode) == 0 else {
            let error = failure("cannot set the mode of")
            discard()
            throw error
        }
    }

    /// Writes all of `bytes`.
    func write(_ bytes: [UInt8]) throws(CLIFailure) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                Foundation.write(fd, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw failure("cannot write") }
            offset += n
        }
    }

    /// Flushes the content to disk and puts the file at its path.
    func commit() throws(CLIFailure) {
        guard fsync(fd) == 0 else { throw failure("cannot write") }
        if let temporary, rename(temporary, path) != 0 { throw failure("cannot replace") }
        settled = true
        close(fd)
        fd = -1
    }

    /// Removes what was created, unless committed.
    func discard() {
        guard !settled else { return }
        settled = true
        if fd >= 0 { close(fd) }
        fd = -1
        unlink(temporary ?? path)
    }

    private func failure(_ what: String) -> CLIFailure {
        CLIFailure(message: "\(what) \(path): \(String(cString: strerror(errno)))", status: .cannotWrite)
    }
}
