import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import SignCore

/// A request body that did not all arrive with its head, handed to the request's task as it is
/// read: the connection stops reading past 8 chunks held and reads on once the task has taken
/// them down to 2 (SwiftNIO's async sequence producer, high and low watermarks).
enum InboundBody {
    typealias Producer = NIOThrowingAsyncSequenceProducer<ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, Delegate>
    typealias Source = Producer.Source

    struct Delegate: NIOAsyncSequenceProducerDelegate {
        let connection: NIOLoopBound<HTTP1Connection>
        let exchange: NIOLoopBound<HTTP1Connection.Exchange>

        func produceMore() {
            connection.eventLoop.execute { connection.value.bodyDemanded(exchange.value) }
        }

        func didTerminate() {
            connection.eventLoop.execute { connection.value.bodyAbandoned(exchange.value) }
        }
    }

    /// The body, read once: SwiftNIO's producer traps on a second reader, so a second read of
    /// the body (a middleware reading what another already took) fails instead.
    struct Chunks: AsyncSequence, Sendable {
        let producer: Producer
        let taken = NIOLockedValueBox(false)

        func makeAsyncIterator() -> Iterator {
            let first = taken.withLockedValue { taken in
                defer { taken = true }
                return !taken
            }
            return Iterator(base: first ? producer.makeAsyncIterator() : nil)
        }

        struct Iterator: AsyncIteratorProtocol {
            var base: Producer.AsyncIterator?

            mutating func next() async throws -> ByteBuffer? {
                guard let base else { throw SignCoreError(.invalidInput, "the request body was read already") }
                return try await base.next()
            }
        }
    }

    static func make(connection: NIOLoopBound<HTTP1Connection>, exchange: NIOLoopBound<HTTP1Connection.Exchange>)
        -> (source: Source, sequence: Chunks) {
        let made = Producer.makeSequence(backPressureStrategy: .init(lowWatermark: 2, highWatermark: 8), finishOnDeinit: true,
                                         delegate: Delegate(connection: connection, exchange: exchange))
        return (made.source, Chunks(producer: made.sequence))
    }
}

/// Writes a response for the request's task, on the connection's event loop: at once when the
/// task runs there (signd's tasks do), else by a hop to it. The head of a body of known length
/// waits for the body (or the end), so that a whole answer leaves in one write; that of a streamed
/// body goes at once (`writeHead`), before the body's first chunk has arrived.
struct ResponseChannelWriter: ResponseBodyWriter, Sendable {
    let connection: NIOLoopBound<HTTP1Connection>
    let exchange: NIOLoopBound<HTTP1Connection.Exchange>
    /// The response's head, until it has been written.
    var head: HTTPResponse?

    mutating func writeHead() async throws {
        guard let head else { return }
        self.head = nil
        try await perform { connection, exchange in try connection.write(.head(head), for: exchange) }
    }

    mutating func write(_ buffer: ByteBuffer) async throws {
        let head = self.head
        self.head = nil
        try await perform { connection, exchange in
            if let head { _ = try connection.write(.head(head), for: exchange) }
            return try connection.write(.body(buffer), for: exchange)
        }
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        let head = self.head
        try await perform { connection, exchange in
            if let head { _ = try connection.write(.head(head), for: exchange) }
            return try connection.write(.end(trailingHeaders), for: exchange)
        }
    }

    /// After the response's task: a response it did not end closes the connection.
    func closeUnlessEnded() async {
        try? await perform { connection, exchange in
            connection.closeUnlessEnded(exchange)
            return nil
        }
    }

    private func perform(_ operation: @escaping @Sendable (HTTP1Connection, HTTP1Connection.Exchange) throws -> EventLoopFuture<Void>?)
        async throws {
        let loop = connection.eventLoop
        if loop.inEventLoop {
            if let wait = try operation(connection.value, exchange.value) { try await wait.get() }
            return
        }
        let (connection, exchange) = (self.connection, self.exchange)
        try await loop.flatSubmit {
            do {
                return try operation(connection.value, exchange.value) ?? loop.makeSucceededVoidFuture()
            } catch {
                return loop.makeFailedFuture(error)
            }
        }.get()
    }
}

/// The `Date` of signd's responses (RFC 9110 §6.6.1), formatted once a second.
enum HTTPDate {
    private static let cached = NIOLockedValueBox<(second: Int, text: String)>((-1, ""))

    static func now() -> String {
        let second = time(nil)
        return cached.withLockedValue { cached in
            if cached.second != second { cached = (second, format(second)) }
            return cached.text
        }
    }

    /// IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ second: Int) -> String {
        var time = time_t(second)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

