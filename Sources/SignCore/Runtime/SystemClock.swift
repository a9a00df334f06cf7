#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Wall-clock seconds since the Unix epoch.
public enum SystemClock {
    /// The coarse clock where there is one: it is read without a counter query and is at most a
    /// few milliseconds behind, far below the one-second resolution of a token.
    @Sendable public static func seconds() -> Int64 {
        var now = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_REALTIME_COARSE, &now)
        #else
        clock_gettime(CLOCK_REALTIME, &now)
        #endif
        return Int64(now.tv_sec)
    }

    /// Wall-clock milliseconds since the Unix epoch, from the precise clock (the times of
    /// challenges and attestation tokens, ATTEST.md §1).
    @Sendable public static func milliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
