import Foundation

/// Runs scripts/device-fixtures (an independent implementation of App Attest and Play Integrity
/// artefacts, in Python, with pyattest's verdicts; scripts/setup installs what it needs) with
/// `request`, and returns what it printed.
public func deviceFixtures(_ request: [String: Any]) async throws -> Data {
    let json = try JSONSerialization.data(withJSONObject: request)
    return try await offThePool { try deviceFixturesBlocking(json) }
}

/// The same, blocking its thread (for tests that run no server).
public func deviceFixturesBlocking(_ json: Data) throws -> Data {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/device-fixtures")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", script.path]
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    input.fileHandleForWriting.write(json)
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw DeviceFixturesFailure(status: process.terminationStatus) }
    return data
}

public struct DeviceFixturesFailure: Error, CustomStringConvertible {
    public let status: Int32
    public var description: String { "scripts/device-fixtures exited \(status) (python3 with cryptography, cbor2 and pyattest: scripts/setup)" }
}
