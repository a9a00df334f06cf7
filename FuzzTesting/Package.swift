// swift-tools-version:6.0
// libFuzzer targets for every SignCore parser. Build and run with scripts/fuzz;
// CI replays the crashers in Crashers/ and runs each target briefly.
import PackageDescription

let fuzzers = ["FuzzCanonicalURL", "FuzzCanonicalPaths", "FuzzToken", "FuzzVerify", "FuzzJWK", "FuzzCoveredHeaders", "FuzzBase64", "FuzzEd25519Point"]

let package = Package(
    name: "FuzzTesting",
    dependencies: [.package(name: "SignCore", path: "..")],
    targets: [
        .target(name: "FuzzCommon", dependencies: [.product(name: "SignCore", package: "SignCore")]),
    ] + fuzzers.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzCommon", .product(name: "SignCore", package: "SignCore")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    },
    swiftLanguageModes: [.v6]
)
