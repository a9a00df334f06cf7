import Foundation
import Testing
@_spi(SignCoreTools) @testable import SignCore

/// The lock and atomic word that stand in for the Synchronization module (macOS 15 / iOS 18):
/// no update lost when threads race on them.
@Suite struct LockingTests {
    final class Shared: Sendable {
        let counter = Locked(0), word = AtomicWord(0), casWord = AtomicWord(0)
    }

    @Test func lockedAndAtomicUpdatesAreNeverLost() async {
        let shared = Shared()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<20_000 {
                        shared.counter.withLock { $0 += 1 }
                        shared.word.add(1)
                        var current = shared.casWord.load()
                        while true {
                            let (exchanged, seen) = shared.casWord.compareExchange(expected: current, desired: current + 2)
                            if exchanged { break }
                            current = seen
                        }
                    }
                }
            }
        }
        #expect(shared.counter.withLock { $0 } == 160_000)
        #expect(shared.word.load() == 160_000)
        #expect(shared.casWord.load() == 320_000)
        #expect(shared.word.exchange(-1) == 160_000 && shared.word.load() == -1)
    }

    /// Four threads racing: on a machine of fewer cores (CI has two) holders are preempted while
    /// others want the lock, so the contended path (spin, then sleep in the kernel) runs too.
    /// (Threads blocked in the lock cannot be cancelled: a lost wake fails the wait's deadline.)
    @Test func threadsOutnumberingTheCoresLoseNoUpdate() {
        let shared = Shared()
        let done = DispatchGroup()
        for _ in 0..<4 {
            done.enter()
            Thread {
                for _ in 0..<100_000 { shared.counter.withLock { $0 += 1 } }
                done.leave()
            }.start()
        }
        guard done.wait(timeout: .now() + 60) == .success else {
            Issue.record("a thread never got the lock")  // reading the counter could block too
            return
        }
        #expect(shared.counter.withLock { $0 } == 400_000)
    }

    /// Threads that find the lock held for long sleep (the lock word says a thread waits), and
    /// each release wakes the next: three sleepers at once, so a wake taken as "no waiter left"
    /// strands one. Each sees the holder's write.
    @Test func sleepingWaitersAreWokenOneAfterAnother() {
        let shared = Shared()
        let acquired = DispatchSemaphore(value: 0)
        Thread {
            shared.counter.withLock { value in
                shared.word.store(1)  // held
                usleep(100_000)
                value = 7
            }
        }.start()
        while shared.word.load() == 0 { usleep(100) }
        for _ in 0..<3 {
            Thread {
                shared.counter.withLock { value in
                    if value >= 7 { shared.casWord.add(1) }
                    value += 1
                    usleep(10_000)  // the others stay asleep meanwhile
                }
                acquired.signal()
            }.start()
        }
        for _ in 0..<3 { #expect(acquired.wait(timeout: .now() + 10) == .success) }
        #expect(shared.casWord.load() == 3)
    }

    @Test func lockedHoldsNoncopyableValuesAndRethrowsTypedErrors() {
        struct Unique: ~Copyable { var value = 1 }
        let unique = Locked(Unique())
        #expect(unique.withLock { $0.value += 1; return $0.value } == 2)
        #expect(throws: SignCoreError(.overloaded, "full")) {
            try unique.withLock { (_) throws(SignCoreError) in throw SignCoreError(.overloaded, "full") }
        }
    }
}
