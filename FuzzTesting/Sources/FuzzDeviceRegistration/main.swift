import FuzzCommon
import SignAttest
import SignCore

/// A registration body (docs/ATTEST.md §9.4 step 1) and a `signcore-counter` value (§9.5) on any
/// bytes: read or refused with a registration's code, never a trap; a counter read writes back
/// as the same text.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeviceRegistration(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    do {
        let registration = try DeviceRegistration(body: bytes)
        if registration.challenge.kind != .registration { Fuzz.broken("a registration with another kind of challenge was read") }
        if registration.format.signsRequests, registration.publicKey?.canSign != false { Fuzz.broken("a private or missing jwk was read") }
    } catch {
        if ![.registrationMalformed, .formatNotAccepted, .bodyTooLarge].contains(error.code) { Fuzz.broken("an unexpected refusal: \(error.code.name)") }
    }
    let text = String(decoding: bytes.prefix(32), as: UTF8.self)
    if let counter = CounterWindow.counter(field: text), String(counter) != text { Fuzz.broken("a counter does not write back as read") }
    return 0
}
