import HTTPTypes
import SignCore

/// The header fields a signed request carries its whash and wtoken in (SPEC §4.6): `whash` and
/// `wtoken` by default; a deployment may rename them, and then both ends must agree.
public struct SignHeaderNames: Sendable, Equatable {
    public var whash: HTTPField.Name
    public var wtoken: HTTPField.Name

    public init(whash: HTTPField.Name, wtoken: HTTPField.Name) {
        self.whash = whash
        self.wtoken = wtoken
    }

    public static let standard = SignHeaderNames(whash: HTTPField.Name(HeaderName.whash)!, wtoken: HTTPField.Name(HeaderName.wtoken)!)
}
