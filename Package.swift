// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "SignCore",
    products: [
        .library(name: "SignCore", targets: ["SignCore"]),
        .library(name: "SignHTTP", targets: ["SignHTTP"]),
        .executable(name: "signtool", targets: ["signtool"]),
        .executable(name: "bench", targets: ["bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        // Thin C calls into libsodium and OpenSSL libcrypto (Debian: libsodium-dev, libssl-dev).
        .target(
            name: "CSignShim",
            linkerSettings: [.linkedLibrary("sodium"), .linkedLibrary("crypto")]
        ),
        // The engine: canonical form, whash, wtoken, keys, signer, verifier, replay guard.
        .target(name: "SignCore", dependencies: ["CSignShim"]),
        // HTTP at both ends on swift-http-types: requests in and out, refusals as responses.
        .target(name: "SignHTTP", dependencies: ["SignCore", .product(name: "HTTPTypes", package: "swift-http-types")]),
        // Loads and checks the JSON vectors of Vectors/ (Foundation allowed: not the hot path).
        .target(name: "SignCoreVectors", dependencies: ["SignCore"]),
        .executableTarget(
            name: "signtool",
            dependencies: ["SignCore", "SignCoreVectors", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // The benchmark's crypto floors (raw libsodium/OpenSSL) and its allocation counter.
        .target(name: "CBench", dependencies: ["CSignShim"], linkerSettings: [.linkedLibrary("sodium"), .linkedLibrary("crypto")]),
        .executableTarget(
            name: "bench",
            dependencies: ["SignCore", "CBench", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // A single-threaded driver that valgrind can run: instructions per operation (scripts/instructions).
        .executableTarget(name: "instructions", dependencies: ["SignCore"]),
        .testTarget(
            name: "SignHTTPTests",
            dependencies: ["SignHTTP", "SignCore", .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .testTarget(
            name: "SignCoreTests",
            dependencies: ["SignCore", "SignCoreVectors", "CSignShim"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
