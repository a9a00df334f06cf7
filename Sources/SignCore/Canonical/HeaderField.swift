/// One header field of a request, as sent or received, in the order it appeared.
public struct HeaderField: Sendable, Equatable {
    public var name: String
    /// The field value; its UTF-8 bytes are what is signed.
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
