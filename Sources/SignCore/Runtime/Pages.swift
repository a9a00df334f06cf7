internal import CSignBytes

/// Zeroed memory straight from the kernel, on a 2 MiB boundary with transparent huge pages
/// asked for (a large table probed at random then misses the TLB far less); nil for a length
/// of 0 or when the kernel refuses. Give it back with `freePages` and the same length.
func zeroedPages(_ length: Int) -> UnsafeMutableRawPointer? { sc_pages_zeroed(length) }

func freePages(_ pages: UnsafeMutableRawPointer?, _ length: Int) { sc_pages_free(pages, length) }
