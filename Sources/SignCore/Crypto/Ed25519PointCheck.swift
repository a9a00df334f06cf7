/// Validation of Ed25519 public-key encodings with the semantics of libsodium's
/// `crypto_core_ed25519_is_valid_point` (SPEC §6.1), in dependency-free Swift: the swift-crypto
/// backend's check, since swift-crypto validates no point (tested and fuzzed against libsodium).
///
/// Intended for public data only: it is NOT constant time. Field elements are 4
/// little-endian 64-bit limbs modulo p = 2^255 - 19, kept below 2^256 and fully
/// reduced only for comparisons; points use extended twisted Edwards coordinates
/// (RFC 8032 §5.1.4). Only wrapping or overflow-reporting arithmetic is used.
@_spi(Fuzzing)
public enum Ed25519PointCheck {
    /// Whether `encoding` (exactly 32 bytes, else false) is the canonical encoding (y < p, the sign bit ignored for this test) of a point on the curve, in the prime-order subgroup, and not of small order.
    public static func isValid(_ encoding: UnsafeRawBufferPointer) -> Bool {
        guard encoding.count == 32 else { return false }
        func limb(_ i: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(encoding[8 * i + $1]) << UInt64(8 * $1) } }
        let y = F(limb(0), limb(1), limb(2), limb(3) & 0x7fff_ffff_ffff_ffff), sign = limb(3) >> 63
        // RFC 8032 §5.1.3 step 1: y must be canonical (libsodium ignores the sign bit here).
        guard !y.isAtLeastP, let point = P.decode(y: y, sign: sign) else { return false }
        let p2 = point + point, p4 = p2 + p2    // small order: [8]P is the identity
        return !(p4 + p4).isIdentity && point.times(L).isIdentity
    }

    /// The prime order L = 2^252 + 27742317777372353535851937790883648493 (RFC 8032 §5.1), little-endian limbs.
    private static let L: [UInt64] = [0x5812_631a_5cf5_d3ed, 0x14de_f9de_a2f7_9cd6, 0, 0x1000_0000_0000_0000]

    /// An element of GF(p), p = 2^255 - 19, as a not necessarily reduced value l0 + l1·2^64 + ... below 2^256.
    private struct F {
        var l0, l1, l2, l3: UInt64
        init(_ l0: UInt64, _ l1: UInt64, _ l2: UInt64, _ l3: UInt64) { (self.l0, self.l1, self.l2, self.l3) = (l0, l1, l2, l3) }

        static let zero = F(0, 0, 0, 0), one = F(1, 0, 0, 0)
        /// d = -121665/121666 (RFC 8032 §5.1); the inverse is x^(p-2).
        static let d = (zero - F(121_665, 0, 0, 0)) * F(121_666, 0, 0, 0).pow([0xffff_ffff_ffff_ffeb, .max, .max, 0x7fff_ffff_ffff_ffff])
        /// sqrt(-1) = 2^((p-1)/4) (RFC 8032 §5.1.3 step 3).
        static let sqrtM1 = F(2, 0, 0, 0).pow([0xffff_ffff_ffff_fffb, .max, .max, 0x1fff_ffff_ffff_ffff])

        /// x + y + c; c becomes the carry out.
        @inline(__always) static func adc(_ x: UInt64, _ y: UInt64, _ c: inout UInt64) -> UInt64 {
            let (s1, o1) = x.addingReportingOverflow(y), (s2, o2) = s1.addingReportingOverflow(c)
            c = (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
            return s2
        }
        /// x - y - b; b becomes the borrow out.
        @inline(__always) static func sbb(_ x: UInt64, _ y: UInt64, _ b: inout UInt64) -> UInt64 {
            let (s1, o1) = x.subtractingReportingOverflow(y), (s2, o2) = s1.subtractingReportingOverflow(b)
            b = (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
            return s2
        }
        /// acc + x·y + c (< 2^128): acc becomes the low word, c the high word.
        @inline(__always) static func mac(_ acc: inout UInt64, _ x: UInt64, _ y: UInt64, _ c: inout UInt64) {
            let (h, l) = x.multipliedFullWidth(by: y)
            let (s1, o1) = l.addingReportingOverflow(acc), (s2, o2) = s1.addingReportingOverflow(c)
            (acc, c) = (s2, h &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0))
        }

        /// r + c·2^256, folded with 2^256 ≡ 38 (mod p) until it fits in 256 bits.
        init(_ r0: UInt64, _ r1: UInt64, _ r2: UInt64, _ r3: UInt64, carry: UInt64) {
            self.init(r0, r1, r2, r3)
            var c = carry
            while c != 0 {
                let k = c &* 38   // c <= 38 here
                c = 0
                self = F(F.adc(l0, k, &c), F.adc(l1, 0, &c), F.adc(l2, 0, &c), F.adc(l3, 0, &c))
            }
        }

        static func + (a: F, b: F) -> F {
            var c: UInt64 = 0
            return F(adc(a.l0, b.l0, &c), adc(a.l1, b.l1, &c), adc(a.l2, b.l2, &c), adc(a.l3, b.l3, &c), carry: c)
        }

        static func - (a: F, b: F) -> F {
            var c: UInt64 = 0, r = F(sbb(a.l0, b.l0, &c), sbb(a.l1, b.l1, &c), sbb(a.l2, b.l2, &c), sbb(a.l3, b.l3, &c))
            while c != 0 {   // a borrow added 2^256 ≡ 38: take 38 away again
                c = 0
                r = F(sbb(r.l0, 38, &c), sbb(r.l1, 0, &c), sbb(r.l2, 0, &c), sbb(r.l3, 0, &c))
            }
            return r
        }

        static func * (a: F, b: F) -> F {
            var (t0, t1, t2, t3, t4, t5, t6, t7) = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            var c: UInt64 = 0   // schoolbook 512-bit product, one row per limb of a
            mac(&t0, a.l0, b.l0, &c); mac(&t1, a.l0, b.l1, &c); mac(&t2, a.l0, b.l2, &c); mac(&t3, a.l0, b.l3, &c); (t4, c) = (c, 0)
            mac(&t1, a.l1, b.l0, &c); mac(&t2, a.l1, b.l1, &c); mac(&t3, a.l1, b.l2, &c); mac(&t4, a.l1, b.l3, &c); (t5, c) = (c, 0)
            mac(&t2, a.l2, b.l0, &c); mac(&t3, a.l2, b.l1, &c); mac(&t4, a.l2, b.l2, &c); mac(&t5, a.l2, b.l3, &c); (t6, c) = (c, 0)
            mac(&t3, a.l3, b.l0, &c); mac(&t4, a.l3, b.l1, &c); mac(&t5, a.l3, b.l2, &c); mac(&t6, a.l3, b.l3, &c); (t7, c) = (c, 0)
            mac(&t0, t4, 38, &c); mac(&t1, t5, 38, &c); mac(&t2, t6, 38, &c); mac(&t3, t7, 38, &c)   // low + 38·high
            return F(t0, t1, t2, t3, carry: c)
        }

        var isAtLeastP: Bool { (l3, l2, l1, l0) >= (0x7fff_ffff_ffff_ffff, .max, .max, 0xffff_ffff_ffff_ffed) }
        /// The unique representative in [0, p) (at most two subtractions of p from a value below 2^256).
        var reduced: F {
            var r = self, b: UInt64 = 0
            while r.isAtLeastP { r = F(F.sbb(r.l0, 0xffff_ffff_ffff_ffed, &b), F.sbb(r.l1, .max, &b), F.sbb(r.l2, .max, &b), F.sbb(r.l3, 0x7fff_ffff_ffff_ffff, &b)) }
            return r
        }
        static func == (a: F, b: F) -> Bool { let (x, y) = (a.reduced, b.reduced); return (x.l0, x.l1, x.l2, x.l3) == (y.l0, y.l1, y.l2, y.l3) }

        /// self^e (e in little-endian limbs) by left-to-right square-and-multiply.
        func pow(_ e: [UInt64]) -> F {
            var r = F.one
            for i in (0..<256).reversed() {
                r = r * r
                if (e[i / 64] >> UInt64(i % 64)) & 1 == 1 { r = r * self }
            }
            return r
        }
    }

    /// A point (X : Y : Z : T) in extended coordinates, x = X/Z, y = Y/Z, xy = T/Z (RFC 8032 §5.1.4).
    private struct P {
        var x, y, z, t: F
        static let k = F.d + F.d

        /// Recovers x from y and its sign bit (RFC 8032 §5.1.3 steps 2-4). Like libsodium,
        /// x = 0 with the sign bit set is not rejected (such points have small order).
        static func decode(y: F, sign: UInt64) -> P? {
            let yy = y * y, u = yy - F.one, v = F.d * yy + F.one
            let v3 = v * v * v, uv3 = u * v3
            var x = uv3 * (uv3 * v3 * v).pow([0xffff_ffff_ffff_fffd, .max, .max, 0x0fff_ffff_ffff_ffff])   // (p-5)/8
            let vxx = v * x * x
            if vxx == F.zero - u { x = x * F.sqrtM1 } else if !(vxx == u) { return nil }
            if x.reduced.l0 & 1 != sign { x = F.zero - x }
            return P(x: x, y: y, z: F.one, t: x * y)
        }

        /// Complete unified addition add-2008-hwcd-3 for a = -1, also used for doubling (RFC 8032 §5.1.4).
        static func + (p: P, q: P) -> P {
            let a = (p.y - p.x) * (q.y - q.x), b = (p.y + p.x) * (q.y + q.x)
            let c = p.t * k * q.t, zz = p.z * q.z, d = zz + zz
            let e = b - a, f = d - c, g = d + c, h = b + a
            return P(x: e * f, y: g * h, z: f * g, t: e * h)
        }

        /// [n]self (n in little-endian limbs) by double-and-add.
        func times(_ n: [UInt64]) -> P {
            var r = P(x: F.zero, y: F.one, z: F.one, t: F.zero)
            for i in (0..<256).reversed() {
                r = r + r
                if (n[i / 64] >> UInt64(i % 64)) & 1 == 1 { r = r + self }
            }
            return r
        }

        var isIdentity: Bool { x == F.zero && y == z }
    }
}
