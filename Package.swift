// swift-tools-version:6.1
import PackageDescription
import Foundation

// SIGNCORE_CORE_ONLY=1 leaves the server and client modules out: CI builds the core's release and swift-crypto configurations in seconds, not minutes of SwiftNIO.
let coreOnly = ProcessInfo.processInfo.environment["SIGNCORE_CORE_ONLY"].map { !$0.isEmpty && $0 != "0" } ?? false
// SIGNCORE_DEVICE_BENCH=1 (scripts/device-bench) gives the bench its device rows, which need App
// Attest and PostgreSQL: minutes of release build that CI's bench run does without.
let deviceBench = !coreOnly && (ProcessInfo.processInfo.environment["SIGNCORE_DEVICE_BENCH"].map { !$0.isEmpty && $0 != "0" } ?? false)

// The crypto backend (Sources/SignCore/Crypto): libsodium + OpenSSL through CSignShim by default on
// Linux; swift-crypto (CryptoKit on Apple platforms, BoringSSL elsewhere) on Apple platforms always,
// and on Linux with the trait: `swift build --traits SwiftCryptoBackend`.
let apple: [Platform] = [.macOS, .iOS, .tvOS, .watchOS, .visionOS, .macCatalyst]
let swiftCryptoTrait = "SwiftCryptoBackend"
let backendSettings: [SwiftSetting] = [
    .define("SIGNCORE_SWIFT_CRYPTO", .when(platforms: apple)),
    .define("SIGNCORE_SWIFT_CRYPTO", .when(traits: [swiftCryptoTrait])),
]
// libsodium and OpenSSL are Linux's (Debian: libsodium-dev, libssl-dev): the shim and the tools
// measured against them (bench, instructions) are declared only when the manifest runs on Linux,
// so nothing of them stands in the way of a build on an Apple platform.
#if os(Linux)
let onLinux = true
#else
let onLinux = false
#endif

var core: [Target] = [
    // Portable C, no third-party header: constant-time compare and wipe, atomics, byte tables
    // and finders, base64url decoding of public text.
    .target(name: "CSignBytes"),
    // The engine: canonical form, whash, wtoken, keys, signer, verifier, replay guard.
    .target(
        name: "SignCore",
        // swift-crypto under either condition (with the trait on, SwiftPM warns of a duplicate
        // product and keeps one entry, which is enough on every platform).
        dependencies: ["CSignBytes",
                       .product(name: "Crypto", package: "swift-crypto", condition: .when(platforms: apple)),
                       .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: [swiftCryptoTrait]))]
            + (onLinux ? [.target(name: "CSignShim", condition: .when(platforms: [.linux]))] : []),
        swiftSettings: backendSettings
    ),
    // HTTP at both ends on swift-http-types: requests in and out, refusals as responses.
    .target(name: "SignHTTP", dependencies: ["SignCore", "SignAttest", .product(name: "HTTPTypes", package: "swift-http-types"),
                                             .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers")]),
    // RFC 9421 HTTP Message Signatures and RFC 9530 Content-Digest on SignCore's keys, replay
    // guard and errors (docs/HTTPSIG.md): a `RequestVerifier` beside the wtoken's.
    .target(name: "SignHTTPSignatures", dependencies: ["SignCore", "SignHTTP", .product(name: "HTTPTypes", package: "swift-http-types"),
                                                       .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers")]),
    .testTarget(name: "SignHTTPSignaturesTests", dependencies: ["SignHTTPSignatures", "SignHTTP", "SignCore",
                                                                .product(name: "HTTPTypes", package: "swift-http-types")],
                exclude: ["Fixtures"]),
    // Challenges, proof of work and attestation tokens (docs/ATTEST.md): wire formats and checks on
    // SignCore alone, stores behind protocols; no server package.
    .target(name: "SignAttest", dependencies: ["SignCore"]),
    .testTarget(name: "SignAttestTests", dependencies: ["SignAttest", "SignCore"]),
    // Loads and checks the JSON vectors of Vectors/ (Foundation allowed: not the hot path).
    .target(name: "SignCoreVectors", dependencies: ["SignCore"]),
    .executableTarget(
        name: "signtool",
        dependencies: ["SignCore", "SignAttest", "SignCoreVectors", .product(name: "ArgumentParser", package: "swift-argument-parser")]
    ),
    .testTarget(
        name: "SignHTTPTests",
        dependencies: ["SignHTTP", "SignAttest", "SignCore", .product(name: "HTTPTypes", package: "swift-http-types")]
    ),
    .testTarget(
        name: "SignCoreTests",
        dependencies: ["SignCore", "SignCoreVectors", "CSignBytes",
                       .product(name: "Crypto", package: "swift-crypto", condition: .when(platforms: apple)),
                       .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: [swiftCryptoTrait]))]
            + (onLinux ? [.target(name: "CSignShim", condition: .when(platforms: [.linux]))] : []),
        swiftSettings: backendSettings
    ),
]
if onLinux {
    core += [
        // Thin C calls into libsodium and OpenSSL libcrypto: the default backend's C half.
        .target(name: "CSignShim", dependencies: ["CSignBytes"], linkerSettings: [.linkedLibrary("sodium"), .linkedLibrary("crypto")]),
        // The benchmark's crypto floors (raw libsodium/OpenSSL) and its allocation counter.
        .target(name: "CBench", dependencies: ["CSignShim", "CSignBytes"], linkerSettings: [.linkedLibrary("sodium"), .linkedLibrary("crypto")]),
        .executableTarget(
            name: "bench",
            // The device rows (App Attest, the counter window on PostgreSQL) only with SIGNCORE_DEVICE_BENCH.
            dependencies: ["SignCore", "SignAttest", "SignHTTP", "SignHTTPSignatures", "CBench", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "HTTPTypes", package: "swift-http-types")]
                + (deviceBench ? ["SignDevice", "SignPostgres", .product(name: "PostgresNIO", package: "postgres-nio"),
                                  .product(name: "Crypto", package: "swift-crypto")] : []),
            swiftSettings: deviceBench ? [.define("SIGNCORE_DEVICE_BENCH")] : []
        ),
        // A single-threaded driver that valgrind can run: instructions per operation (scripts/instructions).
        .executableTarget(name: "instructions", dependencies: ["SignCore", "CSignShim"]),
    ]
}

let hummingbird = Target.Dependency.product(name: "Hummingbird", package: "hummingbird")
let httpTypes = Target.Dependency.product(name: "HTTPTypes", package: "swift-http-types")
let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let metrics = Target.Dependency.product(name: "Metrics", package: "swift-metrics")

let servers: [Target] = [
    // Hummingbird 2 middleware: verify per route policy, identity in the request context.
    .target(name: "SignHummingbird", dependencies: ["SignCore", "SignAttest", "SignHTTP", hummingbird, httpTypes, logging, metrics,
                                                    .product(name: "NIOCore", package: "swift-nio")]),
    // The replay guard (and later stores) on PostgreSQL, shared by a fleet of verifiers.
    .target(name: "SignPostgres", dependencies: ["SignCore", "SignAttest", .product(name: "PostgresNIO", package: "postgres-nio"), logging]),
    // Signing clients: URLSession, AsyncHTTPClient, the OpenAPI runtime.
    .target(name: "SignURLSession", dependencies: ["SignCore", "SignHTTP", httpTypes,
                                                   .product(name: "HTTPTypesFoundation", package: "swift-http-types")]),
    .target(name: "SignAsyncHTTPClient", dependencies: ["SignCore", "SignHTTP", httpTypes,
                                                        .product(name: "AsyncHTTPClient", package: "async-http-client"),
                                                        .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                                                        .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras")]),
    .target(name: "SignOpenAPI", dependencies: ["SignCore", "SignHTTP", httpTypes,
                                                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime")]),
    // The platforms' device attestation (docs/ATTEST.md §9.7-§9.8): App Attest and Play Integrity,
    // with X.509 from swift-certificates and a CBOR reader of its own.
    .target(name: "SignDevice", dependencies: ["SignCore", "SignAttest", .product(name: "X509", package: "swift-certificates"),
                                               .product(name: "SwiftASN1", package: "swift-asn1"),
                                               .product(name: "Crypto", package: "swift-crypto"),
                                               .product(name: "_CryptoExtras", package: "swift-crypto")]),
    .testTarget(name: "SignDeviceTests", dependencies: ["SignDevice", "SignAttest", "SignCore", "SignTestSupport",
                                                        .product(name: "X509", package: "swift-certificates"),
                                                        .product(name: "Crypto", package: "swift-crypto")],
                resources: [.copy("Fixtures")]),
    // The verifying reverse proxy.
    .target(name: "SignGateway", dependencies: ["SignCore", "SignAttest", "SignDevice", "SignHTTP", "SignHTTPSignatures", "SignHummingbird", "SignPostgres", hummingbird, httpTypes, logging,
                                                .product(name: "X509", package: "swift-certificates"),
                                                .product(name: "HummingbirdCore", package: "hummingbird"),
                                                .product(name: "HummingbirdTLS", package: "hummingbird"), .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                                                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                                                .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "NIOTLS", package: "swift-nio"),
                                                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                                                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                                                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
                                                .product(name: "NIOHTTP2", package: "swift-nio-http2"), .product(name: "NIOHPACK", package: "swift-nio-http2"),
                                                .product(name: "PostgresNIO", package: "postgres-nio"),
                                                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                                                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                                                .product(name: "Prometheus", package: "swift-prometheus"), .product(name: "NIOPosix", package: "swift-nio")]),
    .executableTarget(name: "signd", dependencies: ["SignGateway", "SignCore", logging, .product(name: "ArgumentParser", package: "swift-argument-parser"),
                                                    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                                                    .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")]),
    // The gateway benchmark's ceiling row: a bare SwiftNIO proxy, nothing of a gateway (scripts/gateway-bench).
    .executableTarget(name: "proxy-ceiling", dependencies: [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                                                            .product(name: "NIOPosix", package: "swift-nio")]),
    // Tests by module, each naming only what it uses; the PostgreSQL server they start is shared.
    .target(name: "SignTestSupport", dependencies: [.product(name: "PostgresNIO", package: "postgres-nio"), logging, httpTypes,
                                                    .product(name: "AsyncHTTPClient", package: "async-http-client"),
                                                    .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                                                    .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio")],
            path: "Tests/SignTestSupport"),
    .testTarget(name: "SignHummingbirdTests", dependencies: [
        "SignCore", "SignAttest", "SignHTTP", "SignHTTPSignatures", "SignHummingbird", "SignTestSupport", hummingbird, .product(name: "HummingbirdTesting", package: "hummingbird"), httpTypes,
        logging, metrics, .product(name: "InMemoryLogging", package: "swift-log"), .product(name: "MetricsTestKit", package: "swift-metrics"),
        .product(name: "NIOCore", package: "swift-nio"),
    ]),
    .testTarget(name: "SignPostgresTests", dependencies: [
        "SignCore", "SignAttest", "SignPostgres", "SignTestSupport", .product(name: "PostgresNIO", package: "postgres-nio"), logging,
    ]),
    .testTarget(name: "SignClientTests", dependencies: [
        "SignCore", "SignAttest", "SignHTTP", "SignHummingbird", "SignURLSession", "SignAsyncHTTPClient", "SignOpenAPI", "SignTestSupport",
        .product(name: "Crypto", package: "swift-crypto"),
        hummingbird, .product(name: "HummingbirdTesting", package: "hummingbird"), httpTypes,
        .product(name: "HTTPTypesFoundation", package: "swift-http-types"), .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"), .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
    ]),
    .testTarget(name: "SignGatewayTests", dependencies: [
        "SignCore", "SignAttest", "SignDevice", "SignHTTP", "SignHTTPSignatures", "SignGateway", "SignURLSession", "SignAsyncHTTPClient", "SignOpenAPI", "SignTestSupport",
        hummingbird, httpTypes, logging, .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
        .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
        .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "InMemoryLogging", package: "swift-log"),
    ]),
]

var products: [Product] = [
    .library(name: "SignCore", targets: ["SignCore"]),
    .library(name: "SignHTTP", targets: ["SignHTTP"]),
    .library(name: "SignAttest", targets: ["SignAttest"]),
    .library(name: "SignHTTPSignatures", targets: ["SignHTTPSignatures"]),
    .executable(name: "signtool", targets: ["signtool"]),
] + (onLinux ? [.executable(name: "bench", targets: ["bench"])] : [])
var dependencies: [Package.Dependency] = [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0"),
    .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
]
if !coreOnly {
    products += [
        .library(name: "SignHummingbird", targets: ["SignHummingbird"]),
        .library(name: "SignPostgres", targets: ["SignPostgres"]),
        .library(name: "SignDevice", targets: ["SignDevice"]),
        .library(name: "SignURLSession", targets: ["SignURLSession"]),
        .library(name: "SignAsyncHTTPClient", targets: ["SignAsyncHTTPClient"]),
        .library(name: "SignOpenAPI", targets: ["SignOpenAPI"]),
        .executable(name: "signd", targets: ["signd"]),
    ]
    dependencies += [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
    ]
}

let package = Package(
    name: "SignCore",
    // The oldest systems every module builds for (Hummingbird 2's; SignCore alone would need less).
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1), .macCatalyst(.v17)],
    products: products,
    traits: [
        .trait(name: swiftCryptoTrait,
               description: "SignCore's crypto on swift-crypto (BoringSSL) instead of libsodium and OpenSSL on Linux; always so on Apple platforms."),
    ],
    dependencies: dependencies,
    targets: core + (coreOnly ? [] : servers),
    swiftLanguageModes: [.v6]
)
