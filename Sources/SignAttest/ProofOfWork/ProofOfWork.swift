import SignCore

/// The proof of work of a challenge (ATTEST.md §3): k sub-solutions, each a counter c with
/// SHA-256(P || u8(i) || u64(c)) below 2^(256 − d), P = SHA-256("SignCore/3 pow\n" || challenge).
public enum ProofOfWork {
    /// P (ATTEST.md §3.1): over every byte of the challenge, tag included.
    public static func prefix(of challenge: Challenge) -> SHA256Digest {
        var hasher = SHA256Hasher()
        hasher.update("SignCore/3 pow\n".utf8)
        hasher.update(challenge.bytes)
        return hasher.finalize()
    }

    /// P || u8(i): the 33 bytes every try of sub-solution `i` starts with.
    static func head(prefix: SHA256Digest, index: Int) -> [UInt8] { prefix.bytes + [UInt8(index)] }

    /// The answer's bytes (ATTEST.md §3.3): the counters as u64, in order.
    public static func answer(_ counters: [UInt64]) -> [UInt8] {
        var writer = LayoutWriter(capacity: counters.count * 8)
        for counter in counters { writer.u64(counter) }
        return writer.bytes
    }

    /// Whether `answer` is exactly 8k bytes of counters each meeting d (ATTEST.md §3.2, §3.4):
    /// the prefix, then one single-block hash per sub-solution (the solver's own search, over a
    /// range of one counter).
    public static func isValid(_ answer: [UInt8], for challenge: Challenge) -> Bool {
        guard answer.count == 8 * challenge.count else { return false }
        var head = prefix(of: challenge).bytes + [0]
        let counters = LayoutReader(bytes: answer)
        for index in 0..<challenge.count {
            head[32] = UInt8(index)
            let counter = counters.u64(at: 8 * index)
            let meets = counter < .max
                ? SHA256CounterSearch.firstCounter(head: head, in: counter..<(counter + 1), leadingZeroBits: challenge.difficulty) != nil
                : SHA256CounterSearch.leadingZeroBits(of: SHA256Hasher.hash(head + answer[(8 * index)..<(8 * index + 8)])) >= challenge.difficulty
            guard meets else { return false }
        }
        return true
    }

    /// The smallest counter of each sub-solution, found on this thread (the vectors' answer; a
    /// client solves with `ProofOfWorkSolver`, on several cores).
    public static func smallestAnswer(for challenge: Challenge) -> [UInt8] {
        let prefix = prefix(of: challenge)
        let counters = (0..<challenge.count).map { index in
            // A counter of 2^64 − 1 tries is always found first: the expected work is 2^d ≤ 2^32.
            SHA256CounterSearch.firstCounter(head: head(prefix: prefix, index: index), in: 0..<UInt64.max,
                                             leadingZeroBits: challenge.difficulty) ?? 0
        }
        return answer(counters)
    }
}
