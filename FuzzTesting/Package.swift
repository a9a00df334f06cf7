// swift-tools-version:6.0
// libFuzzer targets for every SignCore parser and SignHTTP's checks of what a server receives.
// Build and run with scripts/fuzz; CI replays the crashers in Crashers/ and runs each target briefly.
import PackageDescription

let fuzzers = ["FuzzCanonicalURL", "FuzzCanonicalPaths", "FuzzToken", "FuzzVerify", "FuzzJWK", "FuzzCoveredHeaders", "FuzzBase64", "FuzzEd25519Point"]
// The HTTP layer's targets: SignHTTP on swift-http-types' requests.
let httpFuzzers = ["FuzzReceivedRequest", "FuzzRoutePolicy", "FuzzRetryAfter", "FuzzReceivedRefusal", "FuzzForwardAuth"]
// The attestation flow's parsers (docs/ATTEST.md).
let attestFuzzers = ["FuzzChallenge", "FuzzAttestToken", "FuzzAttestRequest", "FuzzDeviceRegistration"]
// The platforms' attestation parsers (docs/ATTEST.md §9.7-§9.8): SignDevice, with swift-certificates.
let deviceFuzzers = ["FuzzCBOR", "FuzzAppAttest", "FuzzPlayIntegrity"]
// Rate limits and secondary verification (docs/ATTEST.md §10): SignAttest's answers and passes, SignHTTP's readers.
let rateFuzzers = ["FuzzRateBypass"]
// RFC 9421 and RFC 9530 (docs/HTTPSIG.md): SignHTTPSignatures' parsers and verifier.
let httpSignatureFuzzers = ["FuzzHTTPSignature"]

let package = Package(
    name: "FuzzTesting",
    dependencies: [
        .package(name: "SignCore", path: ".."),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .target(name: "FuzzCommon", dependencies: [.product(name: "SignCore", package: "SignCore")]),
    ] + fuzzers.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzCommon", .product(name: "SignCore", package: "SignCore")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    } + httpFuzzers.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzCommon", .product(name: "SignCore", package: "SignCore"), .product(name: "SignHTTP", package: "SignCore"),
                           .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    } + attestFuzzers.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzCommon", .product(name: "SignCore", package: "SignCore"), .product(name: "SignAttest", package: "SignCore")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    } + deviceFuzzers.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzCommon", .product(name: "SignCore", package: "SignCore"), .product(name: "SignAttest", package: "SignCore"),
                           .product(name: "SignDevice", package: "SignCore")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    } + rateFuzzers.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzCommon", .product(name: "SignCore", package: "SignCore"), .product(name: "SignAttest", package: "SignCore"),
                           .product(name: "SignHTTP", package: "SignCore"), .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    } + httpSignatureFuzzers.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzCommon", .product(name: "SignCore", package: "SignCore"), .product(name: "SignHTTP", package: "SignCore"),
                           .product(name: "SignHTTPSignatures", package: "SignCore"), .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    },
    swiftLanguageModes: [.v6]
)
