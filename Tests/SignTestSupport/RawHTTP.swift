import Foundation

/// Sends `request` byte for byte to 127.0.0.1:`port` and returns what the server answered until
/// it closed the connection or `timeout` passed: for requests no HTTP client would send (two
/// `Host` lines, a `#` in a target, a host with a path), the way an attacker sends them. The
/// request should carry `Connection: close` so the answer ends with the connection. The socket
/// is served on a thread of its own: a blocking call on Swift's cooperative pool could starve
/// the very server under test.
public func rawHTTP(port: Int, _ request: String, timeout: Duration = .seconds(10)) async throws -> String {
    try await rawHTTP(port: port, segments: [request], timeout: timeout)
}

/// The same, sending `segments` one by one with `pause` between them (each may reach the server
/// in a read of its own), then, with `halfClose`, shutting the socket's sending side as a client
/// that has sent all it will does; then reads the answer to the end.
/// With `readLimit`, stops reading once it has that many bytes and closes the connection: a
/// client that goes away in the middle of an answer. With `reset`, the socket is closed with a
/// reset, not a FIN: a client that aborts (a FIN alone is a half-close, and its requests are
/// answered).
public func rawHTTP(port: Int, segments: [String], pause: Duration = .milliseconds(100), halfClose: Bool = false,
                    readLimit: Int = .max, reset: Bool = false, timeout: Duration = .seconds(10)) async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(with: Result {
                try blockingRawHTTP(port: port, segments: segments, pause: pause, halfClose: halfClose, readLimit: readLimit, reset: reset,
                                    timeout: timeout)
            })
        }.start()
    }
}

private func blockingRawHTTP(port: Int, segments: [String], pause: Duration, halfClose: Bool, readLimit: Int, reset: Bool,
                             timeout: Duration) throws -> String {
    #if canImport(Darwin)
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #else
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #endif
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    defer {
        if reset {
            var abort = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, socklen_t(MemoryLayout<linger>.size))
        }
        close(fd)
    }
    var seconds = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard connected else { throw POSIXError(.ECONNREFUSED) }
    #if canImport(Darwin)
    let noSignal: Int32 = 0
    #else
    let noSignal = Int32(MSG_NOSIGNAL)  // a server that closes early fails this request, not the process
    #endif
    for (index, segment) in segments.enumerated() {
        if index > 0 { Thread.sleep(forTimeInterval: Double(pause.components.attoseconds) / 1e18 + Double(pause.components.seconds)) }
        let bytes = Array(segment.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, noSignal) }
            guard n > 0 else { throw POSIXError(.EPIPE) }
            sent += n
        }
    }
    #if canImport(Darwin)
    if halfClose { shutdown(fd, SHUT_WR) }
    #else
    if halfClose { shutdown(fd, Int32(SHUT_WR)) }
    #endif
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16_384)
    while answer.count < readLimit {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        answer += buffer[..<n]
    }
    return String(decoding: answer, as: UTF8.self)
}

/// The status code of a raw HTTP/1.1 answer, or nil when there is none.
public func statusCode(of answer: String) -> Int? {
    let parts = answer.split(separator: " ", maxSplits: 2)
    guard parts.count >= 2, parts[0].hasPrefix("HTTP/1.") else { return nil }
    return Int(parts[1])
}

/// A client that connects to 127.0.0.1:`port` and sends `bytes` one at a time, one every
/// `interval` (nothing at all when `bytes` is empty), until the server closes the connection;
/// returns how long the server kept it open, or nil if it was still open after `limit`.
public func slowClient(port: Int, bytes: String, interval: Duration, limit: Duration) async -> Duration? {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: blockingSlowClient(port: port, bytes: Array(bytes.utf8), interval: interval, limit: limit)) }.start()
    }
}

private func blockingSlowClient(port: Int, bytes: [UInt8], interval: Duration, limit: Duration) -> Duration? {
    #if canImport(Darwin)
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    let noSignal: Int32 = 0
    #else
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    let noSignal = Int32(MSG_NOSIGNAL)
    #endif
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard connected else { return .zero }
    let clock = ContinuousClock()
    let start = clock.now
    var sent = 0
    var buffer = [UInt8](repeating: 0, count: 4096)
    while clock.now - start < limit {
        if sent < bytes.count {
            let n = bytes[sent...].prefix(1).withUnsafeBytes { send(fd, $0.baseAddress, 1, noSignal) }
            if n < 0 { return clock.now - start }
            sent += 1
        }
        Thread.sleep(forTimeInterval: Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds))
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return clock.now - start }
    }
    return nil
}
