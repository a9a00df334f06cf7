/// The header fields a verifier requires tokens to cover, per method class (SPEC §5 step 7):
/// for instance `content-type` for POST, PUT and PATCH.
public struct RequiredHeaders: Sendable, Equatable {
    /// Names required on GET, HEAD, OPTIONS and DELETE (lower case, sorted).
    public let urlMethods: [String]
    /// Names required on POST, PUT and PATCH (lower case, sorted).
    public let bodyMethods: [String]

    /// Throws `invalidConfiguration` for a name that a token cannot cover.
    public init(urlMethods: [String] = [], bodyMethods: [String] = []) throws(SignCoreError) {
        do {
            self.urlMethods = try CoveredHeaders.normalizedNames(urlMethods)
            self.bodyMethods = try CoveredHeaders.normalizedNames(bodyMethods)
        } catch {
            throw SignCoreError(.invalidConfiguration, error.detail)
        }
    }

    public static let none = RequiredHeaders(names: [], [])

    private init(names url: [String], _ body: [String]) {
        urlMethods = url
        bodyMethods = body
    }

    func names(for method: RequestMethod) -> [String] { method.contentClass == .url ? urlMethods : bodyMethods }
}
