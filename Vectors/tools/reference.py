#!/usr/bin/env python3
"""A second implementation of docs/SPEC.md (SignCore/3), docs/ATTEST.md (its attestation flow) and
docs/HTTPSIG.md (its RFC 9421 / RFC 9530 profile), written from the specifications alone, in Python
with hashlib/hmac, the `cryptography` package and `http_sfv` (RFC 8941 structured fields).
It generates the computed vector files (whash, wtoken, jwk, refusal, message, attest, device, ratelimit, httpsig) and checks
every vector file, including the hand-written
canonical_url.json. SignCore's Swift tests then check the Swift implementation against the
same files, so the two implementations are compared through the vectors.

    python3 Vectors/tools/reference.py generate   # rewrite whash.json, wtoken.json, jwk.json, refusal.json, message.json, attest.json,
                                                  # device.json, ratelimit.json, httpsig.json
    python3 Vectors/tools/reference.py generate message   # rewrite message.json alone
    python3 Vectors/tools/reference.py generate attest    # rewrite attest.json alone (docs/ATTEST.md)
    python3 Vectors/tools/reference.py generate device    # rewrite device.json alone (docs/ATTEST.md §9)
    python3 Vectors/tools/reference.py generate ratelimit # rewrite ratelimit.json alone (docs/ATTEST.md §10)
    python3 Vectors/tools/reference.py generate httpsig   # rewrite httpsig.json alone (docs/HTTPSIG.md)
    python3 Vectors/tools/reference.py check      # check every vector file against this code
"""
import base64, functools, hashlib, hmac, json, pathlib, struct, sys

VECTORS = pathlib.Path(__file__).resolve().parent.parent


class SpecError(Exception):
    def __init__(self, code, retry_after=None, reason=None, cause=None):
        super().__init__(code)
        self.code = code
        self.retry_after = retry_after  # ATTEST §4.3 step 4: the seconds challengeTooEarly asks the client to wait
        self.reason, self.cause = reason, cause  # ATTEST §10.5 step 6: bypassDeviceRejected's problem members


# §1.2 base64url
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text: str) -> bytes:
    if any(c not in ALPHABET for c in text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if b64u(data) != text:
        raise ValueError("non-canonical base64url")
    return data


# §2 canonical URL
UNRESERVED = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
HEX = b"0123456789abcdefABCDEF"


def normalise(component: bytes, plus_is_space: bool) -> bytes:
    out, i = bytearray(), 0
    while i < len(component):
        c = component[i]
        if c == 0x25:
            h = component[i + 1:i + 3]
            if len(h) != 2 or any(x not in HEX for x in h):
                raise SpecError("invalidURL")
            c = int(h, 16)
            i += 3
        else:
            if plus_is_space and c == 0x2B:
                c = 0x20
            i += 1
        out += bytes([c]) if c in UNRESERVED else b"%%%02X" % c
    return bytes(out)


def ipv6(text: bytes) -> bytes:
    s = text.decode("ascii", "strict") if all(b < 0x80 for b in text) else None
    if s is None or "%" in s:
        raise SpecError("invalidURL")
    tail4 = []
    if "." in s:  # dotted-quad IPv4 tail: two groups
        cut = s.rfind(":")
        parts = s[cut + 1:].split(".")
        if cut < 0 or len(parts) != 4 or any(not p.isdigit() or len(p) > 3 or (len(p) > 1 and p[0] == "0") or int(p) > 255 for p in parts):
            raise SpecError("invalidURL")
        tail4 = [int(parts[0]) << 8 | int(parts[1]), int(parts[2]) << 8 | int(parts[3])]
        s = s[:cut + 1] if s[:cut + 1].endswith("::") else s[:cut]
    if s.count("::") > 1:
        raise SpecError("invalidURL")

    def parse(part):
        if part == "":
            return []
        out = []
        for g in part.split(":"):
            if not (1 <= len(g) <= 4) or any(ch not in "0123456789abcdefABCDEF" for ch in g):
                raise SpecError("invalidURL")
            out.append(int(g, 16))
        return out

    if "::" in s:
        left, right = s.split("::")
        l, r = parse(left), parse(right) + tail4
        if len(l) + len(r) > 7:
            raise SpecError("invalidURL")
        groups = l + [0] * (8 - len(l) - len(r)) + r
    else:
        groups = parse(s) + tail4
        if len(groups) != 8:
            raise SpecError("invalidURL")
    best, best_len, k = -1, 1, 0
    while k < 8:
        if groups[k] == 0:
            j = k
            while j < 8 and groups[j] == 0:
                j += 1
            if j - k > best_len:
                best, best_len = k, j - k
            k = j
        else:
            k += 1
    if best < 0:
        return ":".join("%x" % g for g in groups).encode()
    left = ":".join("%x" % g for g in groups[:best])
    right = ":".join("%x" % g for g in groups[best + best_len:])
    return (left + "::" + right).encode()


def canonical_url(url: bytes) -> bytes:
    if not 1 <= len(url) <= 8192 or any(b < 0x20 or b == 0x7F for b in url):
        raise SpecError("invalidURL")
    try:
        url.decode("utf-8", "strict")
    except UnicodeDecodeError:
        raise SpecError("invalidURL")
    url = url.split(b"#", 1)[0]
    if b":" not in url:
        raise SpecError("invalidURL")
    scheme, rest = url.split(b":", 1)
    scheme = scheme.lower() if all(b < 0x80 for b in scheme) else scheme
    if scheme not in (b"http", b"https") or not rest.startswith(b"//"):
        raise SpecError("invalidURL")
    rest = rest[2:]
    end = min([i for i in (rest.find(b"/"), rest.find(b"?")) if i >= 0], default=len(rest))
    authority, rest = rest[:end], rest[end:]
    if b"@" in authority or not authority:
        raise SpecError("invalidURL")
    if authority.startswith(b"["):
        close = authority.find(b"]")
        if close < 0:
            raise SpecError("invalidURL")
        host = b"[" + ipv6(authority[1:close]) + b"]"
        after = authority[close + 1:]
        if after and not after.startswith(b":"):
            raise SpecError("invalidURL")
        port = after[1:] if after else None
    else:
        name, sep, port = authority.partition(b":")
        port = port if sep else None
        if not 1 <= len(name) <= 255 or any(b not in UNRESERVED for b in name):
            raise SpecError("invalidURL")
        host = name.lower()
    out = scheme + b"://" + host
    if port:
        if not port.isdigit() or not 1 <= int(port) <= 65535:
            raise SpecError("invalidURL")
        if int(port) != {b"https": 443, b"http": 80}[scheme]:
            out += b":%d" % int(port)
    path, sep, query = rest.partition(b"?")
    if not path:
        out += b"/"
    else:
        segments = path[1:].split(b"/")
        stack = []
        for k, seg in enumerate(segments):
            n = normalise(seg, False)
            last = k == len(segments) - 1
            if n in (b".", b".."):
                if n == b".." and stack:
                    stack.pop()
                if last:
                    stack.append(b"")
            else:
                stack.append(n)
        out += b"".join(b"/" + s for s in stack) or b"/"
    if sep:
        pairs = []
        for piece in query.split(b"&"):
            if not piece:
                continue
            key, _, value = piece.partition(b"=")
            pairs.append((normalise(key, True), normalise(value, True)))
        if len(pairs) > 256:
            raise SpecError("invalidURL")
        pairs.sort(key=lambda p: p[0])  # Python's sort is stable
        if pairs:
            out += b"?" + b"&".join(k + b"=" + v for k, v in pairs)
    return out


# §3 whash
URL_METHODS, BODY_METHODS = ("GET", "HEAD", "OPTIONS", "DELETE"), ("POST", "PUT", "PATCH")


def whash(method: str, url: bytes, body: bytes) -> bytes:
    if method in URL_METHODS:
        return hashlib.sha256(b"SignCore/3 whash url\n" + method.encode() + b" " + canonical_url(url)).digest()
    if method in BODY_METHODS:
        return hashlib.sha256(b"SignCore/3 whash body\n" + body).digest()
    raise SpecError("unsupportedMethod")


def body_of(spec) -> bytes:
    if spec is None:
        return b""
    if "utf8" in spec:
        return spec["utf8"].encode()
    if "hex" in spec:
        return bytes.fromhex(spec["hex"])
    f = spec["formula"]
    assert f["byte"] == "i mod 251"
    pattern = bytes(range(251))
    n = f["length"]
    return (pattern * (n // 251 + 1))[:n]


# §6 keys
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, utils
from cryptography.hazmat.primitives import hashes
from cryptography.exceptions import InvalidSignature

P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
P256_P = 2 ** 256 - 2 ** 224 + 2 ** 192 + 2 ** 96 - 1


# §6.1 Ed25519 public keys: canonical, on the curve, in the prime-order subgroup, not of small order
ED_P = 2 ** 255 - 19
ED_L = 2 ** 252 + 27742317777372353535851937790883648493
ED_D = -121665 * pow(121666, ED_P - 2, ED_P) % ED_P


def ed_add(a, b):
    (x1, y1, z1, t1), (x2, y2, z2, t2) = a, b
    A, B = (y1 - x1) * (y2 - x2) % ED_P, (y1 + x1) * (y2 + x2) % ED_P
    C, Dd = 2 * ED_D * t1 * t2 % ED_P, 2 * z1 * z2 % ED_P
    E, F, G, H = B - A, Dd - C, Dd + C, B + A
    return (E * F % ED_P, G * H % ED_P, F * G % ED_P, E * H % ED_P)


def ed_mul(k, p):
    q = (0, 1, 1, 0)
    while k:
        if k & 1:
            q = ed_add(q, p)
        p, k = ed_add(p, p), k >> 1
    return q


def ed_is_identity(p):
    x, y, z, _ = p
    return x % ED_P == 0 and (y - z) % ED_P == 0


def ed_encode(p) -> bytes:
    x, y, z, _ = p
    zi = pow(z, ED_P - 2, ED_P)
    x, y = x * zi % ED_P, y * zi % ED_P
    return (y | (x & 1) << 255).to_bytes(32, "little")


def ed_decode(b: bytes):
    """A point from its encoding, or None (RFC 8032 §5.1.3, without the checks of §6.1)."""
    y = int.from_bytes(b, "little") & ((1 << 255) - 1)
    x2 = (y * y - 1) * pow(ED_D * y * y + 1, ED_P - 2, ED_P) % ED_P
    x = pow(x2, (ED_P + 3) // 8, ED_P)
    if (x * x - x2) % ED_P:
        x = x * pow(2, (ED_P - 1) // 4, ED_P) % ED_P
    if (x * x - x2) % ED_P:
        return None
    if x & 1 != b[31] >> 7:
        x = ED_P - x
    return (x, y, 1, x * y % ED_P)


@functools.lru_cache(maxsize=None)  # pure arithmetic, and the same few keys are checked again and again
def ed25519_point_ok(b: bytes) -> bool:
    if int.from_bytes(b, "little") & ((1 << 255) - 1) >= ED_P:
        return False
    point = ed_decode(b)
    if point is None:
        return False
    return not ed_is_identity(ed_mul(8, point)) and ed_is_identity(ed_mul(ED_L, point))


class Key:
    """§6.1, checks in order: members used are strings; kty, crv; alg (algorithmMismatch); use;
    kid; key material."""
    def __init__(self, jwk: dict):
        self.jwk = jwk
        if not isinstance(jwk, dict) or any(n in jwk and not isinstance(jwk[n], str) for n in ("kty", "crv", "alg", "use", "kid", "k", "x", "y", "d")):
            raise SpecError("invalidKey")
        kty = jwk.get("kty")
        alg = {"oct": "HS256", "OKP": "EdDSA", "EC": "ES256"}.get(kty)
        if alg is None or (kty == "OKP" and jwk.get("crv") != "Ed25519") or (kty == "EC" and jwk.get("crv") != "P-256"):
            raise SpecError("invalidKey")
        self.alg = alg
        if "alg" in jwk and jwk["alg"] != alg:
            raise SpecError("algorithmMismatch")
        if "use" in jwk and jwk["use"] != "sig":
            raise SpecError("invalidKey")
        if "kid" in jwk and (not 1 <= len(jwk["kid"]) <= 64 or any(c not in ALPHABET for c in jwk["kid"])):
            raise SpecError("invalidKey")
        self.private = None
        try:
            if kty == "oct":
                self.secret = unb64u(jwk["k"])
                if not 32 <= len(self.secret) <= 1024:
                    raise SpecError("invalidKey")
                thumb = {"k": jwk["k"], "kty": "oct"}
            elif kty == "OKP":
                x = unb64u(jwk["x"])
                if len(x) != 32 or not ed25519_point_ok(x):
                    raise SpecError("invalidKey")
                self.public = ed25519.Ed25519PublicKey.from_public_bytes(x)
                if "d" in jwk:
                    d = unb64u(jwk["d"])
                    if len(d) != 32:
                        raise SpecError("invalidKey")
                    self.private = ed25519.Ed25519PrivateKey.from_private_bytes(d)
                    if self.private.public_key().public_bytes_raw() != x:
                        raise SpecError("invalidKey")
                thumb = {"crv": "Ed25519", "kty": "OKP", "x": jwk["x"]}
            else:
                x, y = unb64u(jwk["x"]), unb64u(jwk["y"])
                if len(x) != 32 or len(y) != 32:
                    raise SpecError("invalidKey")
                try:
                    self.public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + x + y)
                except ValueError:
                    raise SpecError("invalidKey")
                if "d" in jwk:
                    d = unb64u(jwk["d"])
                    if len(d) != 32 or not 1 <= int.from_bytes(d, "big") < P256_N:
                        raise SpecError("invalidKey")
                    self.private = ec.derive_private_key(int.from_bytes(d, "big"), ec.SECP256R1())
                    nums = self.private.public_key().public_numbers()
                    if (nums.x, nums.y) != (int.from_bytes(x, "big"), int.from_bytes(y, "big")):
                        raise SpecError("invalidKey")
                thumb = {"crv": "P-256", "kty": "EC", "x": jwk["x"], "y": jwk["y"]}
        except (KeyError, ValueError, TypeError):
            raise SpecError("invalidKey")
        self.thumbprint = b64u(hashlib.sha256(json.dumps(thumb, separators=(",", ":")).encode()).digest())
        self.kid = jwk.get("kid", self.thumbprint)

    def sign(self, message: bytes) -> bytes:
        if self.alg == "HS256":
            return hmac.new(self.secret, message, hashlib.sha256).digest()
        if self.alg == "EdDSA":
            return self.private.sign(message)
        # RFC 6979 deterministic nonces keep the generated file stable; verifiers cannot tell.
        r, s = utils.decode_dss_signature(self.private.sign(message, ec.ECDSA(hashes.SHA256(), deterministic_signing=True)))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    def verify(self, message: bytes, signature: bytes) -> bool:
        if self.alg == "HS256":
            return hmac.compare_digest(hmac.new(self.secret, message, hashlib.sha256).digest(), signature)
        try:
            if self.alg == "EdDSA":
                self.public.verify(signature, message)
            else:
                r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
                self.public.verify(utils.encode_dss_signature(r, s), message, ec.ECDSA(hashes.SHA256()))
            return True
        except (InvalidSignature, ValueError):
            return False


# §4 wtoken
def target_digest(method: str, canonical: bytes) -> bytes:
    if method in URL_METHODS:  # the whash already hashes the method and the canonical URL
        return hashlib.sha256(b"SignCore/3 whash url\n" + method.encode() + b" " + canonical).digest()
    return hashlib.sha256(b"SignCore/3 target\n" + method.encode() + b" " + canonical).digest()


NAME_BYTES = set(b"abcdefghijklmnopqrstuvwxyz0123456789-_")


def covered_names(names):
    """§4.3: the names a signer covers, in the token's form; invalidConfiguration otherwise."""
    out = set()
    for n in names:
        b = bytes(c | 0x20 if 0x41 <= c <= 0x5A else c for c in n.encode())
        if not 1 <= len(b) <= 64 or any(c not in NAME_BYTES for c in b) or b in (b"whash", b"wtoken"):
            raise SpecError("invalidConfiguration")
        out.add(b)
    if len(out) > 16:
        raise SpecError("invalidConfiguration")
    return sorted(out)


def canonical_line(v: bytes) -> bytes:
    """§4.3: obs-fold (OWS CR LF RWS) to one SP, other CR/LF/controls refused, trimmed."""
    out, i, n = bytearray(), 0, len(v)
    while i < n:
        c = v[i]
        if c in (0x20, 0x09, 0x0D):
            j, folded = i, False
            while True:
                while j < n and v[j] in (0x20, 0x09):
                    j += 1
                if j + 2 < n and v[j] == 0x0D and v[j + 1] == 0x0A and v[j + 2] in (0x20, 0x09):
                    folded, j = True, j + 2
                    continue
                break
            if j == i:
                raise SpecError("invalidHeader")
            out += b" " if folded else v[i:j]
            i = j
        else:
            if c < 0x20 or c == 0x7F:
                raise SpecError("invalidHeader")
            out.append(c)
            i += 1
    return bytes(out).strip(b" \t")


def header_block(names, fields):
    """§4.3: the covered fields' block; `fields` is a list of (name, value) byte pairs."""
    block = b""
    for name in names:
        values = [canonical_line(v) for (k, v) in fields if k.lower() == name]
        block += bytes([len(name)]) + name
        if values:
            value = b", ".join(values)
            if len(value) > 8192:
                raise SpecError("invalidHeader")
            block += b"\x01" + len(value).to_bytes(2, "big") + value
        else:
            block += b"\x00"
    return block


def headers_digest(names, fields):
    return hashlib.sha256(b"SignCore/3 headers\n" + header_block(names, fields)).digest()


def signing_input(alg, kid, target, wh, created, lifetime, nonce, account: bytes, names=(), digest=b"") -> bytes:
    return (b"SignCore/3 wtoken\n" + bytes([len(alg)]) + alg.encode() + bytes([len(kid)]) + kid.encode()
            + target + wh + created.to_bytes(8, "big") + lifetime.to_bytes(4, "big") + nonce
            + len(account).to_bytes(2, "big") + account + bytes([len(names)]) + (digest if names else b""))


def fields_of(pairs):
    return [(k.encode(), v.encode()) for k, v in (pairs or [])]


MAX_CREATED_DIGITS = 11  # created is at most 99999999999


def longest_token(key: Key, lifetime, account: bytes, names) -> int:
    """§4.4: the length of the longest token a signer's settings can make: `created` counted at
    its widest (11 digits), every other field as it will be written."""
    return (len("v3") + 1 + len(key.kid) + 1 + MAX_CREATED_DIGITS + 1 + len(str(lifetime)) + 1 + len(b64u(bytes(16))) + 1
            + len(b64u(bytes(6))) + 1 + len(b64u(account)) + 1 + len(b",".join(names)) + 1 + len(b64u(bytes(LENGTHS[key.alg]))))


def sign(key: Key, method, url: bytes, body: bytes, created, lifetime, nonce, account: str, covered=(), fields=(), allow_unsigned=False):
    """§4: a token, or SpecError for what a signer refuses (sign-side vectors), in §4.4's order:
    the settings (key, lifetime, account, covered names, the longest token), then per request
    the method, the creation time, the URL, a body on a URL-class method, the covered fields."""
    if key.alg != "HS256" and key.private is None:
        raise SpecError("invalidKey")
    if not 1 <= lifetime <= 86400:
        raise SpecError("invalidConfiguration")
    if len(account.encode()) > 256:
        raise SpecError("invalidInput")
    names = covered_names(covered)
    if longest_token(key, lifetime, account.encode(), names) > 1024:
        raise SpecError("invalidConfiguration")
    if method not in URL_METHODS + BODY_METHODS:
        raise SpecError("unsupportedMethod")
    if not 0 <= created <= 99999999999:
        raise SpecError("invalidInput")
    canonical = canonical_url(url)
    if method in URL_METHODS and body and not allow_unsigned:
        raise SpecError("unexpectedBody")
    wh = whash(method, url, body)
    target = target_digest(method, canonical)
    digest = headers_digest(names, fields) if names else b""
    si = signing_input(key.alg, key.kid, target, wh, created, lifetime, nonce, account.encode(), names, digest)
    token = ".".join(["v3", key.kid, str(created), str(lifetime), b64u(nonce), b64u(target[:6]), b64u(account.encode()),
                      b",".join(names).decode(), b64u(key.sign(si))])
    out = dict(canonicalURL=canonical.decode(), whash=b64u(wh), targetDigest=target.hex(), signingInput=si.hex(), wtoken=token)
    if names:
        out["headersDigest"] = digest.hex()
    return out


def version_field(f):
    """§4.1: `v` and 1-3 digits without a leading zero."""
    d = f[1:]
    return f[:1] == "v" and 1 <= len(d) <= 3 and d.isdigit() and all(c in "0123456789" for c in d) and d[0] != "0"


def parse_token(text: str):
    if len(text.encode()) > 1024:
        raise SpecError("headerTooLarge")
    f = text.split(".")
    if f[0] != "v3":
        raise SpecError("unsupportedVersion" if version_field(f[0]) and len(f) > 1 else "malformedToken")
    if len(f) != 9:
        raise SpecError("malformedToken")

    def dec(s, hi):
        if not s or len(s) > 11 or not all(c in "0123456789" for c in s) or (len(s) > 1 and s[0] == "0") or int(s) > hi:
            raise SpecError("malformedToken")
        return int(s)

    try:
        kid = f[1]
        if not (1 <= len(kid) <= 64) or any(c not in ALPHABET for c in kid):
            raise SpecError("malformedToken")
        created, lifetime = dec(f[2], 99999999999), dec(f[3], 86400)
        if lifetime < 1:
            raise SpecError("malformedToken")
        nonce, target, account, sig = unb64u(f[4]), unb64u(f[5]), unb64u(f[6]), unb64u(f[8])
        if len(nonce) != 16 or len(target) != 6 or len(account) > 256 or len(sig) not in (32, 64):
            raise SpecError("malformedToken")
        account.decode("utf-8", "strict")
        names = [n.encode() for n in f[7].split(",")] if f[7] else []
        if len(names) > 16 or any(not 1 <= len(n) <= 64 or any(c not in NAME_BYTES for c in n) for n in names):
            raise SpecError("malformedToken")
        if any(a >= b for a, b in zip(names, names[1:])):
            raise SpecError("malformedToken")
    except (ValueError, UnicodeDecodeError):
        raise SpecError("malformedToken")
    return dict(kid=kid, created=created, lifetime=lifetime, nonce=nonce, target=target, account=account, names=names, signature=sig)


LENGTHS = {"HS256": 32, "EdDSA": 64, "ES256": 64}


def verify(keys: dict, req: dict, now: int, skew=30, max_lifetime=300, seen=(), require_whash=True, required=None,
           allow_unsigned=False):
    """§5 steps 1-10; returns the verified identity or raises SpecError. `seen`: (kid, nonce hex, expires) entries."""
    if req.get("wtoken") is None:
        raise SpecError("missingHeader")
    t = parse_token(req["wtoken"])
    method = req["method"]
    if method not in URL_METHODS + BODY_METHODS:
        raise SpecError("unsupportedMethod")
    url = req["url"].encode()
    canonical = canonical_url(url)
    body = body_of(req.get("body"))
    if method in URL_METHODS and body and not allow_unsigned:
        raise SpecError("unexpectedBody")
    key = keys.get(t["kid"])
    if key is None:
        raise SpecError("unknownKey")
    if len(t["signature"]) != LENGTHS[key.alg]:
        raise SpecError("algorithmMismatch")
    if t["lifetime"] > max_lifetime:
        raise SpecError("lifetimeTooLong")
    if t["created"] > now + skew:
        raise SpecError("notYetValid")
    if now >= t["created"] + t["lifetime"]:
        raise SpecError("expired")
    wh = whash(method, url, body)
    if req.get("whash") is not None:
        try:
            sent = unb64u(req["whash"])
        except ValueError:
            raise SpecError("whashMismatch")
        if len(sent) != 32 or not hmac.compare_digest(sent, wh):
            raise SpecError("whashMismatch")
    elif require_whash:
        raise SpecError("missingHeader")
    need = (required or {}).get("url" if method in URL_METHODS else "body", [])
    if any(n not in t["names"] for n in covered_names(need)):
        raise SpecError("headerNotCovered")
    digest = headers_digest(t["names"], fields_of(req.get("headers"))) if t["names"] else b""
    target = target_digest(method, canonical)
    if target[:6] != t["target"]:
        raise SpecError("targetMismatch")
    si = signing_input(key.alg, key.kid, target, wh, t["created"], t["lifetime"], t["nonce"], t["account"], t["names"], digest)
    if not key.verify(si, t["signature"]):
        raise SpecError("badSignature")
    if (key.kid, t["nonce"].hex(), t["created"] + t["lifetime"]) in seen:
        raise SpecError("replayed")
    return dict(keyID=key.kid, account=t["account"].decode(), created=t["created"], expires=t["created"] + t["lifetime"])


# ---- vector generation -----------------------------------------------------------------------

def seed(label: str) -> bytes:
    return hashlib.sha256(b"SignCore/1 vectors: " + label.encode()).digest()


def jwk_for(kind: str, secret: bytes, kid=None, private=True) -> dict:
    if kind == "oct":
        j = {"kty": "oct", "alg": "HS256", "k": b64u(secret)}
    elif kind == "OKP":
        pk = ed25519.Ed25519PrivateKey.from_private_bytes(secret)
        j = {"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "x": b64u(pk.public_key().public_bytes_raw())}
        if private:
            j["d"] = b64u(secret)
    else:
        pk = ec.derive_private_key(int.from_bytes(secret, "big"), ec.SECP256R1())
        n = pk.public_key().public_numbers()
        j = {"kty": "EC", "crv": "P-256", "alg": "ES256", "x": b64u(n.x.to_bytes(32, "big")), "y": b64u(n.y.to_bytes(32, "big"))}
        if private:
            j["d"] = b64u(secret)
    if kid:
        j["kid"] = kid
    return j


KEYS = {
    "hmac": jwk_for("oct", seed("HMAC key"), kid="hmac-2026"),
    "hmacOther": jwk_for("oct", seed("another HMAC key"), kid="hmac-2026"),
    "ed25519": jwk_for("OKP", seed("Ed25519 seed")),
    "ed25519Other": jwk_for("OKP", seed("another Ed25519 seed")),
    "p256": jwk_for("EC", seed("P-256 key")),
    "p256Public": jwk_for("EC", seed("P-256 key"), private=False),
}
CREATED = 1_790_000_000
NONCES = [hashlib.sha256(b"SignCore/1 vectors: nonce %d" % i).digest()[:16] for i in range(64)]
MIB = {"formula": {"length": 1 << 20, "byte": "i mod 251"}}
TYPICAL = "https://api.example.com/v1/orders?id=42&sort=desc&q=caf%C3%A9"


def generate_whash():
    cases = []
    def add(comment, method, url=None, body=None, error=None):
        case = {"tcId": len(cases) + 1, "comment": comment, "method": method}
        if url is not None:
            case["url"] = url
        if body is not None:
            case["body"] = body
        try:
            if error:
                raise SpecError(error)
            case.update(result="valid", expected=b64u(whash(method, (url or "").encode(), body_of(body))))
        except SpecError as e:
            case.update(result="invalid", error=e.code)
        cases.append(case)

    add("§3.2 GET hashes the method and the canonical URL", "GET", TYPICAL)
    add("§3.2 GET of another spelling of the same resource has the same whash", "GET", "HTTPS://API.example.com:443/v1/orders?sort=desc&q=caf%c3%a9&id=42#x")
    add("§3.2 HEAD is of the URL class; its whash differs from GET's (the method is hashed)", "HEAD", TYPICAL)
    add("§3.2 OPTIONS is of the URL class", "OPTIONS", "https://api.example.com/")
    add("§3.2 DELETE hashes the method and the canonical URL", "DELETE", "https://api.example.com/v1/orders/42")
    add("§3.2 a body sent with DELETE is ignored", "DELETE", "https://api.example.com/v1/orders/42", {"utf8": "ignored"})
    add("§3.2 POST hashes the body bytes", "POST", "https://api.example.com/v1/orders", {"utf8": "hello world"})
    add("§3.2 POST of a JSON body, bytes exactly as sent", "POST", "https://api.example.com/v1/orders", {"utf8": "{\"id\":42, \"note\":\"café\"}\n"})
    add("§3.2 POST with an empty body", "POST", "https://api.example.com/v1/ping", {"hex": ""})
    add("§3.2 PUT of binary bytes 00..ff", "PUT", "https://api.example.com/v1/blob", {"hex": bytes(range(256)).hex()})
    add("§3.2 PATCH with an empty body", "PATCH", "https://api.example.com/v1/orders/42", {"hex": ""})
    add("§3.2 PATCH body", "PATCH", "https://api.example.com/v1/orders/42", {"utf8": "{\"op\":\"replace\"}"})
    add("§3.2 the body whash does not depend on the URL", "PUT", "https://other.example/x", {"hex": bytes(range(256)).hex()})
    add("§3.2 domain separation: a body equal to a canonical URL does not give its URL whash", "POST", TYPICAL,
        {"utf8": canonical_url(TYPICAL.encode()).decode()})
    add("§3.2 a body of 1 MiB (formula)", "POST", "https://api.example.com/upload", MIB)
    add("§3.2 a body of 16 MiB (formula)", "PUT", "https://api.example.com/upload", {"formula": {"length": 16 << 20, "byte": "i mod 251"}})
    add("§3.2 a body of 1 MiB + 1 byte (formula)", "PATCH", "https://api.example.com/upload", {"formula": {"length": (1 << 20) + 1, "byte": "i mod 251"}})
    add("§3.1 methods are case-sensitive", "get", TYPICAL)
    add("§3.1 TRACE is not signable", "TRACE", TYPICAL)
    add("§3.1 CONNECT is not signable", "CONNECT", TYPICAL)
    add("§2 a GET needs a valid URL", "GET", "not a url")
    add("§2 a GET URL with an invalid escape", "GET", "https://api.example.com/%G1")
    return {"spec": "SignCore/3", "algorithm": "whash", "header": "docs/SPEC.md §3; bodies per §8", "numberOfTests": len(cases), "tests": cases}


def keyset(names):
    out = {}
    for n in names:
        k = Key(KEYS[n])
        out[k.kid] = k
    return out


def generate_wtoken():
    keys = {n: Key(j) for n, j in KEYS.items()}
    signs, verifies = [], []
    tokens = {}

    def add_sign(name, comment, key, method, url, body=None, account="", lifetime=60, nonce_index=None, covered=None,
                 headers=None, created=CREATED, allow=None):
        nonce = NONCES[(nonce_index if nonce_index is not None else len(signs)) % len(NONCES)]
        case = {"tcId": len(signs) + len(verifies) + 1, "comment": comment, "key": key, "method": method, "url": url}
        if body is not None:
            case["body"] = body
        case.update(created=created, lifetime=lifetime, nonce=nonce.hex(), account=account)
        if covered is not None:
            case["coveredHeaders"] = covered
        if headers is not None:
            case["headers"] = headers
        if allow is not None:
            case["allowUnsignedBody"] = allow
        try:
            out = sign(keys[key], method, url.encode(), body_of(body), created, lifetime, nonce, account, covered or (), fields_of(headers),
                       bool(allow))
        except SpecError as e:
            case.update(result="invalid", error=e.code)
            signs.append(case)
            return
        case.update(result="valid", expected=out)
        signs.append(case)
        tokens[name] = dict(method=method, url=url, body=body, whash=out["whash"], wtoken=out["wtoken"])
        if headers is not None:
            tokens[name]["headers"] = headers

    add_sign("hget", "HS256 GET of the typical URL", "hmac", "GET", TYPICAL)
    add_sign("hget2", "HS256 GET of another spelling with the same nonce: the same token", "hmac", "GET",
             "https://API.EXAMPLE.COM:443/v1/orders?sort=desc&q=caf%c3%a9&id=42#top", nonce_index=0)
    add_sign("hacct", "HS256 GET with an account", "hmac", "GET", "https://api.example.com/v1/me", account="user-1042")
    add_sign("hpost", "HS256 POST with a JSON body", "hmac", "POST", "https://api.example.com/v1/orders", {"utf8": "{\"item\":\"book\",\"qty\":1}"})
    add_sign("hput", "HS256 PUT with an empty body", "hmac", "PUT", "https://api.example.com/v1/flags/beta", {"hex": ""})
    add_sign("hpatch", "HS256 PATCH with a binary body", "hmac", "PATCH", "https://api.example.com/v1/blob/7", {"hex": bytes(range(256)).hex()})
    add_sign("hdel", "HS256 DELETE", "hmac", "DELETE", "https://api.example.com/v1/orders/42", lifetime=300)
    add_sign("hhead", "HS256 HEAD", "hmac", "HEAD", "https://api.example.com/v1/orders/42")
    add_sign("hopt", "HS256 OPTIONS on an IPv6 host and port", "hmac", "OPTIONS", "http://[2001:db8::1]:8080/")
    add_sign("hbig", "HS256 POST with a 1 MiB body (formula)", "hmac", "POST", "https://api.example.com/upload", MIB)
    add_sign("eget", "EdDSA GET with the thumbprint key id", "ed25519", "GET", TYPICAL)
    add_sign("epost", "EdDSA POST with a non-ASCII account", "ed25519", "POST", "https://api.example.com/v1/orders",
             {"utf8": "{\"item\":\"café\"}"}, account="用户-42")
    add_sign("edel", "EdDSA DELETE with a long lifetime", "ed25519", "DELETE", "https://api.example.com/v1/sessions/9", lifetime=86400)
    # §4.3 covered header fields
    JSONCT = ["Content-Type", "application/json"]
    add_sign("hct", "§4.3 HS256 POST covering content-type", "hmac", "POST", "https://api.example.com/v1/orders",
             {"utf8": "{\"item\":\"book\"}"}, covered=["content-type"], headers=[JSONCT, ["Accept", "*/*"]])
    add_sign("hmany", "§4.3 names in any case and order are covered lower-cased, sorted, once", "hmac", "PUT",
             "https://api.example.com/v1/orders/7", {"utf8": "{}"}, covered=["X-Tenant", "Idempotency-Key", "content-type", "x-tenant"],
             headers=[["x-tenant", "acme"], ["Idempotency-Key", "8e0c1b"], ["CONTENT-TYPE", "application/json"]])
    add_sign("habsent", "§4.3 a covered field that is absent is signed as absent", "hmac", "GET", "https://api.example.com/v1/me",
             covered=["authorization", "x-tenant"], headers=[["x-tenant", "acme"]])
    add_sign("hempty", "§4.3 a present empty field differs from an absent one", "hmac", "GET", "https://api.example.com/v1/me",
             covered=["authorization", "x-tenant"], headers=[["x-tenant", "acme"], ["Authorization", ""]], nonce_index=len(signs) - 1)
    add_sign("hrepeat", "§4.3 repeated fields are joined with a comma and a space, in order", "hmac", "GET",
             "https://api.example.com/v1/items", covered=["accept"], headers=[["Accept", "text/html"], ["x-other", "1"], ["accept", "application/json;q=0.9"]])
    add_sign("hspace", "§4.3 surrounding spaces and tabs are removed, inner whitespace is kept", "hmac", "GET",
             "https://api.example.com/v1/items", covered=["x-note"], headers=[["x-note", " \t a  b\tc \t"]])
    add_sign("hfold", "§4.3 an obs-fold becomes one space", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["x-note"], headers=[["x-note", "a \r\n\t b"]])
    add_sign("hutf8", "§4.3 non-ASCII bytes are kept as they are", "ed25519", "POST", "https://api.example.com/v1/notes",
             {"utf8": "n"}, covered=["x-title"], headers=[["X-Title", "Café ☕"]])
    add_sign("hlong", "§4.3 a covered value of exactly 8192 bytes", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["x-note"], headers=[["x-note", "n" * 8192]])
    add_sign("hmultipart", "§4.3 a multipart boundary is covered through content-type", "hmac", "POST", "https://api.example.com/upload",
             {"utf8": "--b1\r\n\r\nx\r\n--b1--"}, covered=["content-type"], headers=[["content-type", "multipart/form-data; boundary=b1"]])
    # §4.3 and §4.4: what a signer refuses
    add_sign("xcr", "§4.3 a covered value with a bare CR is refused", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["x-note"], headers=[["x-note", "a\rb"]])
    add_sign("xlf", "§4.3 a covered value with a LF outside an obs-fold is refused", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["x-note"], headers=[["x-note", "a\nb"]])
    add_sign("xctl", "§4.3 a covered value with a control character is refused", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["x-note"], headers=[["x-note", "a\u0001b"]])
    add_sign("xlong", "§4.3 a covered value longer than 8192 bytes is refused", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["x-note"], headers=[["x-note", "a" * 8193]])
    add_sign("xlong2", "§4.3 the limit applies to the joined value", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["x-note"], headers=[["x-note", "a" * 4096], ["x-note", "b" * 4096]])
    add_sign("xname", "§4.3 a covered name with a character outside A-Z a-z 0-9 - _ is refused", "hmac", "GET",
             "https://api.example.com/v1/items", covered=["x.note"])
    add_sign("xwtoken", "§4.3 wtoken cannot be covered", "hmac", "GET", "https://api.example.com/v1/items", covered=["WToken"])
    add_sign("x17", "§4.3 at most 16 names", "hmac", "GET", "https://api.example.com/v1/items", covered=["h%d" % i for i in range(17)])
    add_sign("xbody", "§3.2 a GET with a body is refused", "hmac", "GET", "https://api.example.com/v1/items", {"utf8": "{}"})
    add_sign("xdelbody", "§3.2 a DELETE with a body is refused", "hmac", "DELETE", "https://api.example.com/v1/orders", {"utf8": "{\"ids\":[17]}"})
    add_sign("xacct", "§4.4 an account longer than 256 bytes is refused", "hmac", "GET", "https://api.example.com/", account="a" * 257)
    add_sign("xlife0", "§4.4 a lifetime of 0 is refused", "hmac", "GET", "https://api.example.com/", lifetime=0)
    add_sign("xlife", "§4.4 a lifetime above 86400 is refused", "hmac", "GET", "https://api.example.com/", lifetime=86401)
    add_sign("xcreated", "§4.4 a creation time of 12 digits is refused", "hmac", "GET", "https://api.example.com/", created=10 ** 11)
    add_sign("xpublic", "§4.4 a public key cannot sign", "p256Public", "GET", "https://api.example.com/")
    add_sign("xurl", "§4.4 an invalid URL is refused", "hmac", "GET", "https://api.example.com/%zz")

    # P-256 tokens are randomised: made here and given as verify-only cases.
    def p256_token(method, url, body=None, account=""):
        out = sign(keys["p256"], method, url.encode(), body_of(body), CREATED, 60, NONCES[40 + len(tokens) % 20], account)
        return dict(method=method, url=url, body=body, whash=out["whash"], wtoken=out["wtoken"])
    tokens["pget"] = p256_token("GET", TYPICAL)
    tokens["ppost"] = p256_token("POST", "https://api.example.com/v1/orders", {"utf8": "{\"item\":\"pen\"}"}, account="acct-7")

    def add_verify(comment, request, keys_=("hmac", "ed25519", "p256Public"), now=CREATED + 10, skew=None, max_lifetime=None,
                   seen=(), require=None, required=None, allow=None):
        case = {"tcId": len(signs) + len(verifies) + 1, "comment": comment, "verifierKeys": list(keys_), "now": now}
        # Settings left out take their defaults (§5): skew 30, maxLifetime 300, requireWhash true,
        # no required headers, allowUnsignedBody false.
        for name, value in (("skew", skew), ("maxLifetime", max_lifetime), ("requireWhash", require), ("requiredHeaders", required),
                            ("allowUnsignedBody", allow)):
            if value is not None:
                case[name] = value
        if seen:
            case["seen"] = [{"kid": k, "nonce": n, "expires": e} for k, n, e in seen]
        case["request"] = request
        try:
            out = verify(keyset(keys_), request, now, 30 if skew is None else skew, 300 if max_lifetime is None else max_lifetime,
                         set(seen), True if require is None else require, required, bool(allow))
            case.update(result="valid", expected=out)
        except SpecError as e:
            case.update(result="invalid", error=e.code)
        verifies.append(case)

    def req(name, **changes):
        r = dict(tokens[name])
        r.update(changes)
        return {k: v for k, v in r.items() if v is not None or k in ("whash", "wtoken")}

    def tok(name, index, value):
        f = tokens[name]["wtoken"].split(".")
        f[index] = value
        return ".".join(f)

    # valid
    add_verify("§5 HS256 GET verifies", req("hget"))
    add_verify("§5 the server's spelling of the URL may differ from the client's", req("hget", url="https://api.example.com/v1/orders?q=caf%C3%A9&sort=desc&id=42"))
    add_verify("§5 HS256 GET with an account yields the account", req("hacct"))
    add_verify("§5 HS256 POST verifies", req("hpost"))
    add_verify("§5 HS256 PUT with an empty body verifies", req("hput"))
    add_verify("§5 HS256 PATCH binary body verifies", req("hpatch"))
    add_verify("§5 HS256 1 MiB POST verifies", req("hbig"))
    add_verify("§5 EdDSA GET verifies", req("eget"))
    add_verify("§5 EdDSA POST with a non-ASCII account verifies", req("epost"))
    add_verify("§5 ES256 GET verifies", req("pget"))
    add_verify("§5 ES256 POST verifies", req("ppost"))
    add_verify("§5 step 5: created in the future within the skew is accepted", req("hget"), now=CREATED - 30)
    add_verify("§5 step 5: the last second before expiry is accepted", req("hget"), now=CREATED + 59)
    add_verify("§5 step 6: without a whash header when the verifier does not require it", req("hpost", whash=None), require=False)
    add_verify("§6.3 rotation: a key set with the old and the new key accepts both", req("eget"), keys_=("hmac", "ed25519", "ed25519Other"))
    # invalid
    add_verify("§5 step 6: tampered body", req("hpost", body={"utf8": "{\"item\":\"book\",\"qty\":9}"}))
    add_verify("§5 step 9: tampered body with a matching whash header", req("hpost", body={"utf8": "{\"item\":\"book\",\"qty\":9}"},
               whash=b64u(whash("POST", b"", b"{\"item\":\"book\",\"qty\":9}"))))
    add_verify("§5 step 6: changed query on a GET (the whash covers the URL)", req("hget", url="https://api.example.com/v1/orders?id=43&sort=desc&q=caf%C3%A9"))
    add_verify("§5 step 8: changed query with a recomputed whash header", req("hget", url="https://api.example.com/v1/orders?id=43&sort=desc&q=caf%C3%A9",
               whash=b64u(whash("GET", b"https://api.example.com/v1/orders?id=43&sort=desc&q=caf%C3%A9", b""))))
    add_verify("§5 step 6: other method of the URL class (the whash covers the method)", req("hdel", method="GET"))
    add_verify("§5 step 8: other method of the URL class with a recomputed whash header", req("hdel", method="GET",
               whash=b64u(whash("GET", b"https://api.example.com/v1/orders/42", b""))))
    add_verify("§5 step 8: other host", req("hpost", url="https://evil.example.com/v1/orders"))
    add_verify("§5 step 8: other scheme", req("hpost", url="http://api.example.com/v1/orders"))
    add_verify("§5 step 8: other port", req("hpost", url="https://api.example.com:8443/v1/orders"))
    add_verify("§5 step 8: other path", req("hpost", url="https://api.example.com/v1/orders/"))
    add_verify("§5 step 8: other method of the same class", req("hpost", method="PUT"))
    add_verify("§5 step 5: expired at created + lifetime", req("hget"), now=CREATED + 60)
    add_verify("§5 step 5: created beyond the skew", req("hget"), now=CREATED - 31)
    add_verify("§5 step 10: replayed nonce", req("hget"), seen=(("hmac-2026", NONCES[0].hex(), CREATED + 60),))
    add_verify("§5 step 10: the same nonce under another key is not a replay", req("hget"), seen=((Key(KEYS["ed25519"]).kid, NONCES[0].hex(), CREATED + 60),))
    add_verify("§5 step 10: a replay is refused after every other check passed (a forged replay is badSignature)",
               req("hget", wtoken=tok("hget", 8, b64u(bytes(32)))), seen=(("hmac-2026", NONCES[0].hex(), CREATED + 60),))
    add_verify("§5 step 3: unknown key id", req("eget"), keys_=("hmac",))
    add_verify("§5 step 9: same key id, other secret (wrong key)", req("hget"), keys_=("hmacOther",))
    add_verify("§6.3 rotation: once the old key is removed its tokens are refused", req("eget"), keys_=("hmac", "ed25519Other", "p256Public"))
    add_verify("§5 step 3: a 32-byte signature under an EdDSA key", req("eget", wtoken=tok("eget", 8, b64u(bytes(32)))))
    add_verify("§5 step 4: lifetime beyond the verifier maximum", req("hdel"), max_lifetime=120)
    add_verify("§5 step 4: lifetime 86400 beyond the default maximum", req("edel"))
    add_verify("§4.1 truncated token", req("hget", wtoken=tokens["hget"]["wtoken"][:-10]))
    add_verify("§4.1 unsupported version (a SignCore/1 token)", req("hget", wtoken="v1" + tokens["hget"]["wtoken"][2:]))
    add_verify("§4.1 unsupported version (a SignCore/2 token)", req("hget", wtoken="v2" + tokens["hget"]["wtoken"][2:]))
    add_verify("§4.1 unsupported version, whatever its number of fields", req("hget", wtoken="v1.a.b"))
    add_verify("§4.1 a later version", req("hget", wtoken="v4" + tokens["hget"]["wtoken"][2:]))
    add_verify("§4.1 an upper-case V is not a version", req("hget", wtoken="V3" + tokens["hget"]["wtoken"][2:]))
    add_verify("§4.1 a version without a dot is malformed", req("hget", wtoken="v1"))
    add_verify("§4.1 a version with a leading zero is malformed", req("hget", wtoken="v03" + tokens["hget"]["wtoken"][2:]))
    add_verify("§4.1 too few fields", req("hget", wtoken="v3.hmac-2026.1790000000"))
    add_verify("§4.1 eight fields (a v3 token without its headers field)",
               req("hget", wtoken=".".join(tokens["hget"]["wtoken"].split(".")[:7] + tokens["hget"]["wtoken"].split(".")[8:])))
    add_verify("§4.1 leading zero in created", req("hget", wtoken=tok("hget", 2, "0" + str(CREATED))))
    add_verify("§4.1 lifetime 0", req("hget", wtoken=tok("hget", 3, "0")))
    add_verify("§4.1 lifetime above 86400", req("hget", wtoken=tok("hget", 3, "86401")))
    add_verify("§4.1 created of 12 digits", req("hget", wtoken=tok("hget", 2, "1" + "0" * 11)))
    add_verify("§4.1 created with a sign", req("hget", wtoken=tok("hget", 2, "+" + str(CREATED))))
    add_verify("§4.1 kid of 65 characters", req("hget", wtoken=tok("hget", 1, "k" * 65)))
    add_verify("§4.1 kid with a character outside base64url", req("hget", wtoken=tok("hget", 1, "hmac+2026")))
    add_verify("§4.1 nonce of 15 bytes", req("hget", wtoken=tok("hget", 4, b64u(NONCES[0][:15]))))
    add_verify("§4.1 target of 8 bytes", req("hget", wtoken=tok("hget", 5, b64u(bytes(8)))))
    add_verify("§4.1 signature of 48 bytes", req("hget", wtoken=tok("hget", 8, b64u(bytes(48)))))
    add_verify("§4.1 account of 257 bytes", req("hget", wtoken=tok("hget", 6, b64u(b"a" * 257))))
    add_verify("§4.1 account that is not UTF-8", req("hget", wtoken=tok("hget", 6, b64u(b"\xc3\x28"))))
    add_verify("§4.1 ten fields", req("hget", wtoken=tokens["hget"]["wtoken"] + ".AA"))
    add_verify("§4.1 a lifetime with a leading zero", req("hget", wtoken=tok("hget", 3, "060")))
    add_verify("§4.1 headers: names not sorted", req("hct", wtoken=tok("hct", 7, "x-a,content-type")))
    add_verify("§4.1 headers: a name twice", req("hct", wtoken=tok("hct", 7, "content-type,content-type")))
    add_verify("§4.1 headers: an upper-case name", req("hct", wtoken=tok("hct", 7, "Content-Type")))
    add_verify("§4.1 headers: an empty name", req("hct", wtoken=tok("hct", 7, "content-type,")))
    add_verify("§4.1 headers: 17 names", req("hct", wtoken=tok("hct", 7, ",".join("h%02d" % i for i in range(17)))))
    add_verify("§4.1 headers: a name of 65 characters", req("hct", wtoken=tok("hct", 7, "h" * 65)))
    add_verify("§4.1 headerTooLarge counts bytes: 1025 bytes in 1019 characters", req("hget", wtoken=tok("hget", 1, "é" * 6) + "A" * (1025 - len(tok("hget", 1, "é" * 6).encode()))))
    add_verify("§4.1 a token of exactly 1024 bytes is parsed (then malformed: a non-ASCII key id)", req("hget", wtoken=tok("hget", 1, "é" * 6) + "A" * (1024 - len(tok("hget", 1, "é" * 6).encode()))))
    add_verify("§4.1 an empty wtoken header", req("hget", wtoken=""))
    add_verify("§1.2 padding in the nonce", req("hget", wtoken=tok("hget", 4, b64u(NONCES[0]) + "==")))
    hmac_sig = tokens["hget"]["wtoken"].split(".")[8]  # 43 characters: the last carries 2 unused bits
    add_verify("§1.2 non-canonical base64url in the signature (unused bits set)",
               req("hget", wtoken=tok("hget", 8, hmac_sig[:-1] + ALPHABET[ALPHABET.index(hmac_sig[-1]) ^ 1])))
    add_verify("§3.3 the whash header uses the strict decoder of §1.2 (unused bits set)",
               req("hpost", whash=tokens["hpost"]["whash"][:-1] + ALPHABET[ALPHABET.index(tokens["hpost"]["whash"][-1]) ^ 1]))
    add_verify("§3.3 the whash header with padding", req("hpost", whash=tokens["hpost"]["whash"] + "="))
    add_verify("§4.1 a token longer than 1024 bytes", req("hget", wtoken=tokens["hget"]["wtoken"] + "A" * 1024))
    add_verify("§5 step 1: no wtoken header", req("hget", wtoken=None))
    add_verify("§5 step 6: no whash header", req("hpost", whash=None))
    add_verify("§5 step 6: a whash header that is not 32 bytes", req("hpost", whash="abc"))
    add_verify("§5 step 9: one signature byte changed", req("hget", wtoken=tok("hget", 8, b64u(bytes([unb64u(tokens["hget"]["wtoken"].split(".")[8])[0] ^ 1]) + unb64u(tokens["hget"]["wtoken"].split(".")[8])[1:]))))
    add_verify("§5 step 9: account changed", req("hacct", wtoken=tok("hacct", 6, b64u(b"admin"))))
    add_verify("§5 step 9: account added", req("hget", wtoken=tok("hget", 6, b64u(b"admin"))))
    add_verify("§5 step 9: created changed by one second", req("hget", wtoken=tok("hget", 2, str(CREATED + 1))))
    add_verify("§5 step 9: lifetime changed", req("hget", wtoken=tok("hget", 3, "61")))
    add_verify("§5 step 9: nonce changed", req("hget", wtoken=tok("hget", 4, b64u(NONCES[9]))))
    add_verify("§5 step 3: key id changed to one not in the set", req("hget", wtoken=tok("hget", 1, "hmac-2027")))
    add_verify("§5 step 3: a 64-byte signature under the HS256 key", req("hget", wtoken=tok("hget", 8, tokens["eget"]["wtoken"].split(".")[8])))
    add_verify("§5 step 9: EdDSA signature changed", req("eget", wtoken=tok("eget", 8, b64u(bytes(64)))))
    add_verify("§5 step 9: ES256 signature changed", req("pget", wtoken=tok("pget", 8, b64u(bytes([1]) * 64))))
    pr, ps = unb64u(tokens["pget"]["wtoken"].split(".")[8])[:32], int.from_bytes(unb64u(tokens["pget"]["wtoken"].split(".")[8])[32:], "big")
    add_verify("§4.5 ES256 with n - s verifies too (ECDSA is malleable; replays are keyed on the nonce)",
               req("pget", wtoken=tok("pget", 8, b64u(pr + (P256_N - ps).to_bytes(32, "big")))))
    add_verify("§5 step 9: ES256 with s = n is refused (s outside 1...n-1)", req("pget", wtoken=tok("pget", 8, b64u(pr + P256_N.to_bytes(32, "big")))))
    # §4.3 covered headers
    add_verify("§4.3 covered content-type verifies", req("hct"))
    add_verify("§4.3 the verifier reads names in any case", req("hct", headers=[["CONTENT-TYPE", "application/json"]]))
    add_verify("§4.3 surrounding whitespace as received does not matter", req("hct", headers=[["content-type", "  application/json\t"]]))
    add_verify("§4.3, §5 step 9: a changed covered value is refused", req("hct", headers=[["Content-Type", "text/plain"]]))
    add_verify("§4.3 a changed multipart boundary is refused", req("hmultipart", headers=[["content-type", "multipart/form-data; boundary=b2"]]))
    add_verify("§4.3 inner whitespace is data", req("hct", headers=[["Content-Type", "application/ json"]]))
    add_verify("§4.3 a covered field removed in transit is refused", req("hct", headers=[["Accept", "*/*"]]))
    add_verify("§4.3 a field signed as absent and then added is refused", req("habsent", headers=[["x-tenant", "acme"], ["Authorization", "Bearer x"]]))
    add_verify("§4.3 a field signed as absent, still absent, verifies", req("habsent"))
    add_verify("§4.3 an empty field where absence was signed is refused", req("habsent", headers=[["x-tenant", "acme"], ["authorization", ""]]))
    add_verify("§4.3 repeated fields in another order are refused", req("hrepeat", headers=[["accept", "application/json;q=0.9"], ["Accept", "text/html"]]))
    add_verify("§4.3 repeated fields combined into one line verify", req("hrepeat", headers=[["Accept", "text/html, application/json;q=0.9"]]))
    add_verify("§4.3 an obs-fold replaced by a space in transit verifies", req("hfold", headers=[["x-note", "a b"]]))
    add_verify("§4.3 an uncovered field may change", req("hct", headers=[["Content-Type", "application/json"], ["Accept", "text/html"]]))
    add_verify("§4.3 non-ASCII bytes of a covered value", req("hutf8"))
    add_verify("§4.3 surrounding whitespace does not count against the 8192-byte limit (found by fuzzing)",
               req("hlong", headers=[["X-Note", " \t" + "n" * 8192 + " \t "]]))
    add_verify("§4.3 a covered value received with a bare CR", req("hct", headers=[["Content-Type", "application/json\r"]]))
    add_verify("§4.3 covered names changed in the token", req("hct", wtoken=tok("hct", 7, "accept")))
    add_verify("§4.3 covered names removed from the token", req("hct", wtoken=tok("hct", 7, "")))
    add_verify("§5 step 7: a required header covered", req("hct"), required={"body": ["Content-Type"]})
    add_verify("§5 step 7: a required header not covered", req("hpost"), required={"body": ["content-type"]})
    add_verify("§5 step 7: requirements apply per method class", req("hget"), required={"body": ["content-type"]})
    add_verify("§5 step 7: a required header on a GET", req("hget"), required={"url": ["authorization"]})
    add_verify("§5 step 7: headerNotCovered comes before a changed covered value", req("hct", headers=[]), required={"body": ["idempotency-key"]})
    # §3.2 bodies of URL-class methods
    add_verify("§5 step 2: a GET with a body is refused", req("hget", body={"utf8": "x"}))
    add_verify("§5 step 2: a DELETE with another body is refused", req("hdel", body={"utf8": "{\"ids\":[17]}"}))
    add_verify("§5 step 2: a GET with an empty body verifies", req("hget", body={"hex": ""}))
    add_verify("§5 step 2: unexpectedBody comes after invalidURL", req("hget", url="https://api.example.com/%zz", body={"utf8": "x"}))
    add_verify("§5 step 2: unexpectedBody comes before unknownKey", req("eget", body={"utf8": "x"}), keys_=("hmac",))
    # §5 the order of checks when several apply
    add_verify("§5 order: malformedToken before unsupportedMethod", req("hget", method="TRACE", wtoken="v3.x"))
    add_verify("§5 order: unsupportedMethod before invalidURL", req("hget", method="TRACE", url="nonsense"))
    add_verify("§5 order: invalidURL before unknownKey", req("eget", url="nonsense"), keys_=("hmac",))
    add_verify("§5 order: unknownKey before the time checks", req("eget"), keys_=("hmac",), now=CREATED + 100000)
    add_verify("§5 order: algorithmMismatch before the time checks", req("eget", wtoken=tok("eget", 8, b64u(bytes(32)))), now=CREATED + 100000)
    add_verify("§5 order: lifetimeTooLong before expired", req("edel"), now=CREATED + 100000)
    add_verify("§5 order: expired before a missing whash", req("hpost", whash=None), now=CREATED + 60)
    add_verify("§5 order: expired before whashMismatch", req("hpost", body={"utf8": "x"}), now=CREATED + 60)
    add_verify("§5 order: whashMismatch before targetMismatch", req("hpost", url="https://evil.example.com/v1/orders", body={"utf8": "x"}))
    add_verify("§5 order: targetMismatch before badSignature", req("hpost", url="https://evil.example.com/v1/orders", wtoken=tok("hpost", 8, b64u(bytes(32)))))
    add_verify("§5 step 8: a body-class whash computed alone says nothing of the URL (the target does)",
               req("hpost", url="https://api.example.com/v1/other"))
    add_verify("§5 step 3: an ES256 token at a verifier without the ES256 key", req("pget"), keys_=("hmac", "ed25519"))
    add_verify("§3.1 method not signable", req("hget", method="TRACE"))
    add_verify("§3.1 lower-case method", req("hget", method="get"))
    add_verify("§2 the received URL is invalid", req("hget", url="https://api.example.com/v1/orders?id=%4"))
    add_verify("§5 step 9: account replaced by a non-ASCII one", req("hget",
               wtoken=tok("hget", 6, b64u("用户".encode()))))
    add_verify("§5 the defaults: a lifetime of 300 is accepted", req("hdel"))
    add_verify("§5 the defaults: created 30 s ahead is accepted", req("hget"), now=CREATED - 30)
    add_verify("§5 the defaults: created 31 s ahead is refused", req("hget"), now=CREATED - 31)
    add_verify("§5 the defaults: a whash header is required", req("hget", whash=None))

    # Cases added since: numbered after every earlier one, so that earlier numbers stay.
    # §4.4 the longest token: 256 bytes of account (342 characters), lifetime 60, the HS256 key
    # "hmac-2026" and names of `width` characters in all make a longest token of 447 + width bytes.
    def names_of(width):  # names of 64 bytes and one of the rest, `width` bytes with their commas
        names, rest = [], width
        while rest > 65:
            names.append(chr(0x61 + len(names)) * 64)
            rest -= 65
        return names + ["z" * rest]
    add_sign("h1024", "§4.4 settings whose longest token, with created at its widest (11 digits), is 1024 bytes are accepted (this token, created of 10 digits, is 1023)",
             "hmac", "GET", "https://api.example.com/", account="a" * 256, covered=names_of(577))
    add_sign("x1025", "§4.4 settings whose longest token is 1025 bytes are refused, although this token (created of 10 digits) would be 1024",
             "hmac", "GET", "https://api.example.com/", account="a" * 256, covered=names_of(578))
    add_sign("x1025e", "§4.4 the longest token counts the signature of the key's algorithm (86 characters for EdDSA)",
             "ed25519", "GET", "https://api.example.com/", covered=names_of(1025 - 182))
    add_sign("h1024c", "§4.4 created at its widest: the longest token with created 99999999999 is 1024 bytes",
             "hmac", "GET", "https://api.example.com/", account="a" * 256, covered=names_of(577), created=99999999999)
    add_sign("h16dup", "§4.3 names are counted after lower-casing and removing repeats: 17 given, 16 distinct, accepted",
             "hmac", "GET", "https://api.example.com/v1/items", covered=["h%d" % i for i in range(16)] + ["H3"])
    add_sign("xorder1", "§4.4 order: the settings before the request (a lifetime of 0 and an unsupported method)", "hmac", "TRACE",
             "https://api.example.com/", lifetime=0)
    add_sign("xorder2", "§4.4 order: the method before the creation time", "hmac", "TRACE", "https://api.example.com/", created=10 ** 11)
    add_sign("xorder3", "§4.4 order: the creation time before the URL", "hmac", "GET", "https://api.example.com/%zz", created=-1)
    add_sign("xorder4", "§4.4 order: the URL before a body on a URL-class method", "hmac", "GET", "https://api.example.com/%zz", {"utf8": "x"})
    add_sign("xorder5", "§4.4 order: a body on a URL-class method before a covered field", "hmac", "GET", "https://api.example.com/",
             {"utf8": "x"}, covered=["x-note"], headers=[["x-note", "a\rb"]])
    add_sign("xorder6", "§4.4 order: the URL before a covered field", "hmac", "POST", "https://api.example.com/%zz",
             {"utf8": "x"}, covered=["x-note"], headers=[["x-note", "a\rb"]])
    add_sign("xorder7", "§4.4 order: the account before the covered names", "hmac", "GET", "https://api.example.com/",
             account="a" * 257, covered=["x.note"])
    add_sign("xorder8", "§4.4 order: the lifetime before the account", "hmac", "GET", "https://api.example.com/",
             account="a" * 257, lifetime=86401)
    add_sign("xorder9", "§4.4 order: the key before the lifetime", "p256Public", "GET", "https://api.example.com/", lifetime=0)
    add_sign("xorder10", "§4.4 order: the covered names before the longest token", "hmac", "GET", "https://api.example.com/",
             account="a" * 256, covered=names_of(578) + ["wtoken"])
    add_sign("xorder11", "§4.4 order: an account over 256 bytes is invalidInput even when the longest token is over 1024 too",
             "hmac", "GET", "https://api.example.com/", account="a" * 257, covered=names_of(578))
    add_sign("xfoldend", "§4.3 CR LF at the end of a value, with no space or tab after it, is not an obs-fold", "hmac", "GET",
             "https://api.example.com/v1/items", covered=["x-note"], headers=[["x-note", "a\r\n"]])
    add_sign("hfold2", "§4.3 consecutive obs-folds, and spaces around them, become one space", "hmac", "GET",
             "https://api.example.com/v1/items", covered=["x-note"], headers=[["x-note", "a \r\n \r\n\tb"]])
    add_sign("xempty", "§4.3 an empty covered name is refused", "hmac", "GET", "https://api.example.com/v1/items", covered=[""])
    add_sign("xname65", "§4.3 a covered name of 65 bytes is refused", "hmac", "GET", "https://api.example.com/v1/items", covered=["h" * 65])
    add_sign("hname64", "§4.3 a covered name of 64 bytes is accepted", "hmac", "GET", "https://api.example.com/v1/items", covered=["h" * 64])
    add_sign("xwhash", "§4.3 whash cannot be covered", "hmac", "GET", "https://api.example.com/v1/items", covered=["WHash"])
    add_verify("§4.4 the token of settings whose longest token is 1024 bytes verifies", req("h1024"))
    add_verify("§4.4 the 1024-byte token created at 99999999999 verifies", req("h1024c", wtoken=tokens["h1024c"]["wtoken"]),
               now=99999999999 + 10, max_lifetime=None)
    # §5: where headerNotCovered and invalidHeader (step 7) fall among steps 2, 6 and 8
    bad = [["x-tenant", "acme"], ["Authorization", "a\rb"]]
    add_verify("§5 order: unexpectedBody (step 2) before invalidHeader (step 7)", req("habsent", body={"utf8": "x"}, headers=bad))
    add_verify("§5 order: invalidURL (step 2) before headerNotCovered (step 7)", req("hget", url="https://api.example.com/%zz"),
               required={"url": ["authorization"]})
    add_verify("§5 order: unexpectedBody (step 2) before headerNotCovered (step 7)", req("hget", body={"utf8": "x"}),
               required={"url": ["authorization"]})
    add_verify("§5 order: whashMismatch (step 6) before headerNotCovered (step 7)", req("hpost", body={"utf8": "x"}),
               required={"body": ["content-type"]})
    add_verify("§5 order: a missing whash (step 6) before headerNotCovered (step 7)", req("hpost", whash=None),
               required={"body": ["content-type"]})
    add_verify("§5 order: whashMismatch (step 6) before invalidHeader (step 7)", req("hct", body={"utf8": "x"},
               headers=[["Content-Type", "a\rb"]]))
    add_verify("§5 order: headerNotCovered before invalidHeader (both step 7)", req("hct", headers=[["Content-Type", "a\rb"]]),
               required={"body": ["idempotency-key"]})
    add_verify("§5 order: headerNotCovered (step 7) before targetMismatch (step 8)", req("hpost", url="https://evil.example.com/v1/orders"),
               required={"body": ["content-type"]})
    add_verify("§5 order: invalidHeader (step 7) before targetMismatch (step 8)", req("hct", url="https://evil.example.com/v1/orders",
               headers=[["Content-Type", "a\rb"]]))
    add_verify("§5 step 7: a field the token does not cover is not canonicalised (a bare CR in it is no error)",
               req("hct", headers=[["Content-Type", "application/json"], ["x-other", "a\rb"]]))
    add_verify("§5 step 7: required names are compared ignoring case and counted once", req("hct"),
               required={"body": ["Content-Type", "CONTENT-TYPE", "content-type"]})
    add_verify("§5 step 7: every required name must be covered, not just one", req("hct"),
               required={"body": ["content-type", "x-tenant"]})
    add_verify("§4.3 consecutive obs-folds as received", req("hfold2", headers=[["x-note", "a \r\n\t\r\n b"]]))
    # Decisions Vectors/tools/mutate.py found unpinned.
    add_sign("hlife1", "§4.4 a lifetime of 1 is accepted", "hmac", "GET", "https://api.example.com/v1/items", lifetime=1)
    add_sign("hcreated0", "§4.4 a creation time of 0 is accepted", "hmac", "GET", "https://api.example.com/v1/items", created=0)
    add_sign("haz", "§4.3 A and Z are lower-cased; a name of one byte", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["Z-A", "a"], headers=[["z-a", "1"], ["A", "2"]])
    add_sign("hfold3", "§4.3 an obs-fold without spaces before the CR", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["x-note"], headers=[["x-note", "a\r\n b"]])
    add_sign("hfoldend", "§4.3 an obs-fold at the end of a value is trailing whitespace", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["x-note"], headers=[["x-note", "a \r\n "]])
    add_sign("hbytes", "§4.3 bytes 0x21, 0x7E and 0x80 are kept", "hmac", "GET", "https://api.example.com/v1/items",
             covered=["x-note"], headers=[["x-note", "!~\u0080"]])
    for name, value, what in (("xfold4", "a x\n y", "a LF after a byte that is not CR"), ("xfold5", "a \r\r b", "CR CR"),
                              ("xfold6", "a \r\nb", "CR LF not followed by a space or tab"), ("xdel", "a\u007fb", "the byte 0x7F"),
                              ("x1f", "a\u001fb", "the byte 0x1F")):
        add_sign(name, "§4.3 %s is invalidHeader" % what, "hmac", "GET", "https://api.example.com/v1/items",
                 covered=["x-note"], headers=[["x-note", value]])
    add_sign("xorder12", "§4.4 order: the longest token before the method", "hmac", "TRACE", "https://api.example.com/",
             account="a" * 256, covered=names_of(578))
    add_verify("§4.1 a token of lifetime 1 verifies", req("hlife1"), now=CREATED)
    add_verify("§4.1 created 0 is a decimal number (the token is then expired)", req("hcreated0"))
    add_verify("§4.1 a token with 16 covered names verifies", req("h16dup"))
    add_verify("§4.1 covered names of 1 byte verify", req("haz"))
    add_verify("§4.1 a covered name of 64 bytes verifies", req("hname64"))
    add_verify("§4.1 headers: an empty first name", req("hct", wtoken=tok("hct", 7, ",content-type")))
    add_verify("§4.1 a lifetime of two digits with a leading zero", req("hget", wtoken=tok("hget", 3, "06")))
    add_verify("§4.1 a key id of 64 characters is well formed (not in the set)", req("hget", wtoken=tok("hget", 1, "k" * 64)))
    add_verify("§4.1 a key id of 1 character is well formed (not in the set)", req("hget", wtoken=tok("hget", 1, "k")))
    add_verify("§4.1 an empty key id", req("hget", wtoken=tok("hget", 1, "")))
    add_verify("§4.1 a version of 3 digits is a version", req("hget", wtoken="v999" + tokens["hget"]["wtoken"][2:]))
    add_verify("§4.1 v and 4 digits is not a version", req("hget", wtoken="v1000" + tokens["hget"]["wtoken"][2:]))
    add_verify("§4.1 a version of two fields is unsupportedVersion", req("hget", wtoken="v2.x"))
    add_verify("§4.1 a version's digits are ASCII (an Arabic-Indic three is not one)", req("hget", wtoken="v\u0663.a.b"))
    add_verify("§5 order: algorithmMismatch (step 3) before lifetimeTooLong (step 4)", req("eget", wtoken=tok("eget", 8, b64u(bytes(32)))),
               max_lifetime=30)
    add_verify("§5 order: lifetimeTooLong (step 4) before notYetValid (step 5)", req("hdel"), max_lifetime=120, now=CREATED - 100)
    # §3.2 bodies on URL-class methods allowed unsigned, by explicit configuration
    add_sign("hunsigned", "§3.2 a signer configured to allow unsigned bodies signs a GET with a body: the token is the one without it",
             "hmac", "GET", "https://api.example.com/v1/items", {"utf8": "x"}, allow=True, nonce_index=0)
    add_verify("§5 step 2: a verifier configured to allow unsigned bodies accepts a GET with a body", req("hunsigned"), allow=True)
    add_verify("§5 step 2: the body allowed is unsigned: another body verifies alike", req("hunsigned", body={"utf8": "y"}), allow=True)
    add_verify("§5 step 2: without the setting the same request is unexpectedBody", req("hunsigned"))
    add_verify("§3.2 allowing unsigned bodies changes nothing for POST: its body is signed", req("hpost", body={"utf8": "x"}), allow=True)
    return {"spec": "SignCore/3", "algorithm": "wtoken", "header": "docs/SPEC.md §4-§6 and §8. keys: JWKs by name. sign: deterministic cases (or what a signer refuses). verify: requests against a verifier made of verifierKeys, a replay guard already holding the entries of seen (kid, nonce hex, expires = created + lifetime of the token recorded), clock now; settings left out take their defaults",
            "keys": KEYS, "numberOfTests": len(signs) + len(verifies), "sign": signs, "verify": verifies}


def unique_members(pairs):
    """JSON object hook: §6.1 refuses duplicate member names (compared after unescaping)."""
    if len({k for k, _ in pairs}) != len(pairs):
        raise SpecError("invalidKey")
    return dict(pairs)


MAX_DOCUMENT_BYTES = 1 << 20
MAX_DEPTH = 16


def refuse_constant(name):
    """JSON has no NaN or Infinity (Python's json module reads them unless told not to)."""
    raise SpecError("invalidKey")


def depth(v) -> int:
    """§6.1: the levels of a JSON value: 1 for a scalar or an empty container, 1 + the deepest
    member or element otherwise (`{"a":1}` is 2 levels deep, `[[]]` 2)."""
    if isinstance(v, dict):
        return 1 + max((depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((depth(x) for x in v), default=0)
    return 1


def load_document(text):
    """§6.1: strict JSON (no byte-order mark, no lone surrogate, no duplicate names, at most
    1 MiB and 16 levels deep) or invalidKey."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_DOCUMENT_BYTES:
        raise SpecError("invalidKey")
    try:
        doc = json.loads(text, object_pairs_hook=unique_members, parse_constant=refuse_constant)
    except (json.JSONDecodeError, ValueError, RecursionError):
        raise SpecError("invalidKey")
    if depth(doc) > MAX_DEPTH:
        raise SpecError("invalidKey")

    def check(v):
        if isinstance(v, str):
            v.encode("utf-8")  # a lone surrogate cannot be encoded
        elif isinstance(v, list):
            for x in v:
                check(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                check(k)
                check(x)
    try:
        check(doc)
    except UnicodeEncodeError:
        raise SpecError("invalidKey")
    if not isinstance(doc, dict):
        raise SpecError("invalidKey")
    return doc


def generate_jwk():
    cases, sets = [], []
    def add(comment, text, pad=0):
        case = {"tcId": len(cases) + len(sets) + 1, "comment": comment, "jwk": text}
        if pad:
            case["trailingSpaces"] = pad
        try:
            k = Key(load_document(text + " " * pad))
            case.update(result="valid", expected={"kid": k.kid, "thumbprint": k.thumbprint, "alg": k.alg})
        except SpecError as e:
            case.update(result="invalid", error=e.code)
        cases.append(case)

    def dumps(j):
        return json.dumps(j, separators=(",", ":"), ensure_ascii=False)

    def without(j, *names):
        return {k: v for k, v in j.items() if k not in names}

    add("§6.2 HS256 key with its own kid", dumps(KEYS["hmac"]))
    add("§6.2 HS256 key without kid: the RFC 7638 thumbprint", dumps(without(KEYS["hmac"], "kid")))
    add("§6.2 Ed25519 private key: thumbprint", dumps(KEYS["ed25519"]))
    add("§6.2 Ed25519 public key: the same thumbprint", dumps(without(KEYS["ed25519"], "d")))
    add("§6.2 P-256 private key: thumbprint", dumps(KEYS["p256"]))
    add("§6.2 P-256 public key: the same thumbprint", dumps(KEYS["p256Public"]))
    add("§6.1 alg is optional", dumps(without(KEYS["ed25519"], "alg")))
    add("§6.1 use sig is accepted", dumps(dict(KEYS["p256"], use="sig")))
    add("§6.1 whitespace and member order do not matter", json.dumps(dict(reversed(list(KEYS["hmac"].items()))), indent=1))
    add("§6.1 HMAC secret shorter than 32 bytes", dumps({"kty": "oct", "k": b64u(bytes(31))}))
    add("§6.1 alg of another key type", dumps(dict(KEYS["hmac"], alg="ES256")))
    add("§6.1 alg none", dumps(dict(KEYS["ed25519"], alg="none")))
    add("§6.1 Ed25519 x is not the public key of d", dumps(dict(KEYS["ed25519"], x=KEYS["ed25519Other"]["x"])))
    add("§6.1 P-256 point not on the curve", dumps(dict(KEYS["p256Public"], y=b64u(bytes(31) + b"\x01"))))
    add("§6.1 P-256 d = 0", dumps(dict(KEYS["p256"], d=b64u(bytes(32)))))
    add("§6.1 P-256 d = n (the group order)", dumps(dict(KEYS["p256"], d=b64u(P256_N.to_bytes(32, "big")))))
    add("§6.1 HMAC secret of 1025 bytes", dumps({"kty": "oct", "k": b64u(bytes(1025))}))
    add("§6.1 Ed25519 x of 31 bytes", dumps(without(dict(KEYS["ed25519"], x=b64u(bytes(31))), "d")))
    add("§6.1 RSA is not supported", dumps({"kty": "RSA", "n": "AQAB", "e": "AQAB"}))
    add("§6.1 X25519 is not a signature curve", dumps(without(dict(KEYS["ed25519"], crv="X25519"), "alg")))
    add("§6.1 use enc is refused", dumps(dict(KEYS["hmac"], use="enc")))
    add("§6.2 kid with a character outside base64url", dumps(dict(KEYS["hmac"], kid="key.1")))
    add("§6.2 kid longer than 64 characters", dumps(dict(KEYS["hmac"], kid="k" * 65)))
    add("§1.2 padded base64url", dumps(dict(KEYS["hmac"], k=KEYS["hmac"]["k"] + "=")))
    add("§6.1 duplicate member names", '{"kty":"oct","k":"%s","k":"%s"}' % (KEYS["hmac"]["k"], KEYS["hmacOther"]["k"]))
    add("§6.1 missing kty", dumps(without(KEYS["hmac"], "kty")))
    add("not JSON", '{"kty":"oct",')
    # §6.1 decisions
    add("§6.1 kty compared as bytes: a Kelvin sign is not K", '{"kty":"O\\u212aP","crv":"Ed25519","x":"%s"}' % KEYS["ed25519"]["x"])
    add("§6.1 escapes are decoded before comparing: Ed25519 spelled with \\u escapes", '{"kty":"OKP","crv":"\\u0045d25519","x":"%s"}' % KEYS["ed25519"]["x"])
    add("§6.1 duplicate names compared after unescaping", '{"kty":"oct","k":"%s","\\u006b":"%s"}' % (KEYS["hmac"]["k"], KEYS["hmacOther"]["k"]))
    add("§6.1 a byte-order mark is refused", "\ufeff" + dumps(KEYS["hmac"]))
    add("§6.1 a lone surrogate escape is refused", '{"kty":"oct","k":"%s","note":"\\ud800"}' % KEYS["hmac"]["k"])
    add("§6.1 unknown members are ignored", dumps(dict(KEYS["ed25519"], note="rotated 2026-11", key_ops=["verify"])))
    add("§6.1 order: alg is checked before the key material", dumps({"kty": "oct", "alg": "ES256", "k": b64u(bytes(8))}))
    add("§6.1 order: alg is checked before use", dumps(dict(KEYS["hmac"], alg="EdDSA", use="enc")))
    add("§6.1 order: kty before alg", dumps({"kty": "RSA", "alg": "HS256"}))
    add("§6.1 a non-string alg", dumps(dict(KEYS["hmac"], alg=256)))
    add("§6.1 a non-string kid", dumps(dict(KEYS["hmac"], kid=7)))
    add("§6.1 Ed25519 x of small order (the identity point)", dumps(without(dict(KEYS["ed25519"], x=b64u(b"\x01" + bytes(31))), "d")))
    add("§6.1 Ed25519 x not canonical (y = p + 1)", dumps(without(dict(KEYS["ed25519"], x=b64u((ED_P + 1).to_bytes(32, "little"))), "d")))
    add("§6.1 Ed25519 x not on the curve", dumps(without(dict(KEYS["ed25519"], x=b64u((2).to_bytes(32, "little"))), "d")))
    # A point of order 8 (libsodium's blocklist), alone and added to a valid key: on the curve and
    # canonical, but of small order, or outside the prime-order subgroup.
    order8 = bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05")
    add("§6.1 Ed25519 x of small order (a point of order 8)", dumps(without(dict(KEYS["ed25519"], x=b64u(order8)), "d")))
    mixed = ed_encode(ed_add(ed_decode(unb64u(KEYS["ed25519"]["x"])), ed_decode(order8)))
    add("§6.1 Ed25519 x of mixed order (a valid key plus a point of order 8)", dumps(without(dict(KEYS["ed25519"], x=b64u(mixed)), "d")))
    # y = p - 1 is the point of order 2; libsodium before 1.0.21 (unpatched) took such sums for valid.
    order2 = (ED_P - 1).to_bytes(32, "little")
    mixed2 = ed_encode(ed_add(ed_decode(unb64u(KEYS["ed25519"]["x"])), ed_decode(order2)))
    add("§6.1 Ed25519 x of mixed order (a valid key plus the point of order 2)", dumps(without(dict(KEYS["ed25519"], x=b64u(mixed2)), "d")))
    # Points on the curve with a small coordinate, so that the coordinate plus p still fits in 32
    # bytes: a decoder that reduced coordinates modulo p would take x + p (or y + p) for the point.
    low_x = (5, 0x459243B9AA581806FE913BCE99817ADE11CA503C64D9A3C533415C083248FBCC)
    low_y = (0x8D0177EBAB9C6E9E10DB6DD095DBAC0D6375E8A97B70F611875D877F0069D2C7, 1)
    def p256_point(x, y):
        return dumps({"kty": "EC", "crv": "P-256", "x": b64u(x.to_bytes(32, "big")), "y": b64u(y.to_bytes(32, "big"))})
    add("§6.1 P-256 x of 32 bytes at or above the field prime p: x + p of a point (x, y) on the curve (jwk#58 has the point)",
        p256_point(low_x[0] + P256_P, low_x[1]))

    def add_set(comment, text, pad=0):
        case = {"tcId": len(cases) + len(sets) + 1, "comment": comment, "jwks": text}
        if pad:
            case["trailingSpaces"] = pad
        try:
            case.update(result="valid", kids=sorted(k.kid for k in parse_key_set(text + " " * pad)))
        except SpecError as e:
            case.update(result="invalid", error=e.code)
        sets.append(case)

    add_set("§6.1 a JWK Set of three keys", dumps({"keys": [KEYS["hmac"], without(KEYS["ed25519"], "d"), KEYS["p256Public"]]}))
    add_set("§6.1 an empty JWK Set", dumps({"keys": []}))
    add_set("§6.1 a single JWK where a set is expected is a set of one", dumps(without(KEYS["ed25519"], "d")))
    add_set("§6.1 a document with a keys member is a set; its other members are ignored", dumps({"keys": [], "kty": "oct", "k": KEYS["hmac"]["k"]}))
    add_set("§6.1 an invalid key fails the set with its own code", dumps({"keys": [KEYS["hmac"], dict(KEYS["p256Public"], alg="EdDSA")]}))
    add_set("§6.1 a private EdDSA key in a verifier's key set is refused", dumps({"keys": [KEYS["ed25519"]]}))
    add_set("§6.1 a private ES256 key in a verifier's key set is refused", dumps(KEYS["p256"]))
    add_set("§6.1 a key set that is not JSON", '{"keys":[')
    add_set("§6.1 a key set that is a JSON array", dumps([KEYS["hmac"]]))
    add_set("§6.1 two keys with the same id are refused", dumps({"keys": [KEYS["hmac"], KEYS["hmacOther"]]}))
    add_set("§6.1 one invalid key refuses the whole set", dumps({"keys": [KEYS["hmac"], {"kty": "oct", "k": "AA"}]}))
    add_set("§6.1 keys must be an array", dumps({"keys": KEYS["hmac"]}))
    # Cases added since: numbered after every earlier one, so that earlier numbers stay.
    add("§6.1 P-256 the point (5, y) is on the curve (jwk#45 writes its x as 5 + p)", p256_point(*low_x))
    add("§6.1 P-256 the point (x, 1) is on the curve", p256_point(*low_y))
    add("§6.1 P-256 y of 32 bytes at or above the field prime p: 1 + p for the point (x, 1)", p256_point(low_y[0], low_y[1] + P256_P))
    nest = lambda n, inner: "[" * n + inner + "]" * n
    hmac_doc = dumps(KEYS["hmac"])[:-1]
    add("§6.1 depth: 16 levels are accepted (the object, 14 arrays, the number 0 in the innermost)",
        hmac_doc + ',"note":' + nest(14, "0") + "}")
    add("§6.1 depth: 17 levels are refused (a scalar is a level of its own)", hmac_doc + ',"note":' + nest(15, "0") + "}")
    add("§6.1 depth: 16 levels whose innermost is an empty array are accepted", hmac_doc + ',"note":' + nest(15, "") + "}")
    add("§6.1 depth: 17 levels of empty arrays are refused", hmac_doc + ',"note":' + nest(16, "") + "}")
    doc = dumps(KEYS["hmac"])
    add("§6.1 a document of exactly 1 MiB (1048576 bytes, spaces after the object) is accepted", doc, pad=(1 << 20) - len(doc.encode()))
    add("§6.1 a document of 1 MiB + 1 byte is refused with invalidKey", doc, pad=(1 << 20) + 1 - len(doc.encode()))
    add("§6.1 NaN is not JSON", hmac_doc + ',"note":NaN}')
    add("§6.1 duplicate member names in a nested object", hmac_doc + ',"note":{"a":1,"a":2}}')
    add_set("§6.1 in a set, the first invalid key in array order gives the code (invalidKey before a later algorithmMismatch)",
            dumps({"keys": [{"kty": "oct", "k": "AA"}, dict(KEYS["p256Public"], alg="EdDSA")]}))
    add_set("§6.1 in a set, each key is checked before duplicate ids (algorithmMismatch, not invalidKey)",
            dumps({"keys": [KEYS["hmac"], dict(KEYS["hmacOther"], alg="ES256")]}))
    add_set("§6.1 a set document of 1 MiB + 1 byte is refused", dumps({"keys": [KEYS["hmac"]]}),
            pad=(1 << 20) + 1 - len(dumps({"keys": [KEYS["hmac"]]}).encode()))
    # Decisions Vectors/tools/mutate.py found unpinned.
    add("§6.1 EC with a curve other than P-256", dumps(dict(KEYS["p256Public"], crv="P-384")))
    add("§6.2 a kid of 64 characters", dumps(dict(KEYS["hmac"], kid="k" * 64)))
    add("§6.2 a kid of 1 character", dumps(dict(KEYS["hmac"], kid="k")))
    add("§6.2 an empty kid", dumps(dict(KEYS["hmac"], kid="")))
    add("§6.1 an HMAC secret of 1024 bytes", dumps({"kty": "oct", "k": b64u(bytes(range(256)) * 4)}))
    add("§6.1 an HMAC secret of 32 bytes", dumps({"kty": "oct", "k": b64u(bytes(range(32)))}))
    add("§6.1 Ed25519 d of 31 bytes", dumps(dict(KEYS["ed25519"], d=b64u(unb64u(KEYS["ed25519"]["d"])[:31]))))
    add("§6.1 P-256 x of 31 bytes", dumps(dict(KEYS["p256Public"], x=b64u(unb64u(KEYS["p256Public"]["x"])[1:]))))
    gx, gy = 0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296, 0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5  # the base point: the public key of d = 1
    add("§6.1 P-256 d = 1 (its public key is the base point)",
        dumps({"kty": "EC", "crv": "P-256", "x": b64u(gx.to_bytes(32, "big")), "y": b64u(gy.to_bytes(32, "big")), "d": b64u((1).to_bytes(32, "big"))}))
    add("§6.1 P-256 d of 31 bytes (d = 1 without its leading zero byte)",
        dumps({"kty": "EC", "crv": "P-256", "x": b64u(gx.to_bytes(32, "big")), "y": b64u(gy.to_bytes(32, "big")), "d": b64u((1).to_bytes(31, "big"))}))
    add("§6.1 P-256 x, y are not the public key of d", dumps(dict(KEYS["p256"], x=b64u(gx.to_bytes(32, "big")), y=b64u(gy.to_bytes(32, "big")))))
    add("§6.1 depth: 16 levels whose innermost is an empty object are accepted", hmac_doc + ',"note":' + nest(14, "{}") + "}")
    add("§6.1 depth: 17 levels whose innermost is an empty object are refused", hmac_doc + ',"note":' + nest(15, "{}") + "}")
    add("§6.1 a lone surrogate escape inside an array", hmac_doc + ',"note":["\\ud800"]}')
    add_set("§6.1 a key that is not an object", dumps({"keys": [1]}))
    add_set("§6.1 a key set document that is a JSON string", dumps("keys"))
    add_set("§6.1 keys must be an array, not a string", dumps({"keys": ""}))
    return {"spec": "SignCore/3", "algorithm": "jwk", "header": "docs/SPEC.md §6. tests: one JWK -> key id, thumbprint, alg or error. sets: a JWK Set -> its key ids (sorted) or error. trailingSpaces, when present: that many spaces (0x20) follow the document's text",
            "numberOfTests": len(cases) + len(sets), "tests": cases, "sets": sets}


# §7 error codes and §7.1 refusals over HTTP
CODES = {  # name: (code, advice)
    "malformedToken": (1, "reSign"), "unsupportedVersion": (2, "updateClient"), "missingHeader": (3, "reSign"),
    "headerTooLarge": (4, "reSign"), "unknownKey": (10, "refreshKeys"), "algorithmMismatch": (11, "refreshKeys"),
    "badSignature": (12, "reSign"), "invalidKey": (13, "fixConfiguration"), "expired": (20, "resyncClock"),
    "notYetValid": (21, "resyncClock"), "lifetimeTooLong": (22, "fixConfiguration"), "replayed": (23, "reSign"),
    "overloaded": (24, "retryLater"), "unavailable": (25, "retryLater"), "whashMismatch": (30, "reSign"),
    "targetMismatch": (31, "reSign"), "headerNotCovered": (32, "reSign"), "unsupportedMethod": (40, "fixRequest"),
    "invalidURL": (41, "fixRequest"), "invalidInput": (42, "fixRequest"), "bodyTooLarge": (43, "fixRequest"),
    "unexpectedBody": (44, "fixRequest"), "invalidHeader": (45, "fixRequest"), "cryptoFailure": (50, "retryLater"),
    "invalidConfiguration": (60, "fixConfiguration"), "upstreamFailed": (70, "retryLater"), "upstreamTimeout": (71, "retryLater"),
    # docs/ATTEST.md §6: challenges and attestation
    "attestationRequired": (80, "attest"), "attestationMalformed": (81, "fixRequest"), "challengeForged": (82, "fixRequest"),
    "challengeExpired": (83, "attest"), "challengeTooEarly": (84, "attest"), "challengeScopeMismatch": (85, "fixRequest"),
    "challengeKeyMismatch": (86, "fixRequest"), "wrongAnswer": (87, "fixRequest"), "challengeRedeemed": (88, "fixRequest"),
    "attestationExpired": (89, "attest"), "attestationInvalid": (90, "attest"), "attestationScopeMismatch": (91, "fixRequest"),
    "attestationKeyMismatch": (92, "fixRequest"), "attestationInsufficient": (93, "attest"), "challengeAbandoned": (94, "retryLater"),
    # docs/ATTEST.md §9.9: registered device keys
    "deviceUnknown": (100, "register"), "deviceRevoked": (101, "fixRequest"), "registrationMalformed": (102, "fixRequest"),
    "registrationExpired": (103, "register"), "deviceKeyMismatch": (104, "fixRequest"), "appMismatch": (105, "fixRequest"),
    "formatNotAccepted": (106, "fixRequest"), "counterRepeated": (107, "fixRequest"), "counterTooOld": (108, "fixRequest"),
    "counterMissing": (109, "fixRequest"), "platformTokenMalformed": (110, "fixRequest"), "certificateUntrusted": (111, "fixRequest"),
    "nonceMismatch": (112, "fixRequest"), "environmentMismatch": (113, "fixRequest"), "platformCounterInvalid": (114, "fixRequest"),
    "assertionInvalid": (115, "fixRequest"), "integrityVerdictFailed": (116, "fixRequest"),
    # docs/ATTEST.md §10.8: rate limits and their bypass
    "rateLimited": (120, "bypass"), "bypassMalformed": (121, "fixRequest"), "bypassNonceMismatch": (122, "fixRequest"),
    "bypassExpired": (123, "bypass"), "bypassReplayed": (124, "fixRequest"), "bypassDeviceRejected": (125, "fixRequest"),
    "bypassNotOffered": (126, "fixRequest"), "bypassWrongAnswer": (127, "fixRequest"),
    # docs/HTTPSIG.md §6: RFC 9421 message signatures and RFC 9530 Content-Digest
    "signatureFieldsMalformed": (140, "reSign"), "signatureNotFound": (141, "reSign"), "componentMissing": (142, "reSign"),
    "componentInvalid": (143, "reSign"), "signatureNonceMissing": (144, "reSign"), "contentDigestMismatch": (145, "reSign"),
    "contentDigestUnsupported": (146, "fixRequest"), "signatureFormatsMixed": (147, "fixRequest"),
    "signatureCreatedMissing": (148, "reSign"), "signatureAlgorithmUnsupported": (149, "fixConfiguration"),
}
STATUS_OF = {1: 401, 2: 401, 3: 401, 10: 401, 11: 401, 12: 401, 20: 401, 21: 401, 22: 401, 23: 401, 30: 401, 31: 401, 32: 401,
             40: 400, 41: 400, 42: 400, 44: 400, 45: 400, 43: 413, 4: 431, 24: 503, 25: 503, 13: 500, 50: 500, 60: 500,
             70: 502, 71: 504,
             # docs/ATTEST.md §6, §9.9, §10.8
             80: 428, 81: 400, 82: 403, 83: 428, 84: 428, 85: 403, 86: 403, 87: 403, 88: 409, 89: 428, 90: 428, 91: 403, 92: 403,
             93: 428, 94: 428, 100: 428, 101: 403, 102: 400, 103: 428, 104: 400, 105: 403, 106: 403, 107: 409, 108: 409, 109: 409,
             110: 400, 111: 403, 112: 403, 113: 403, 114: 403, 115: 403, 116: 403, 120: 429, 121: 400, 122: 403, 123: 429, 124: 409,
             125: 403, 126: 400, 127: 403,
             # docs/HTTPSIG.md §6
             140: 401, 141: 401, 142: 401, 143: 401, 144: 401, 145: 401, 146: 400, 147: 400, 148: 401, 149: 401}
REASON = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 409: "Conflict", 413: "Content Too Large",
          428: "Precondition Required", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
          500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
# §7.1 signcore-action, docs/ATTEST.md §10.9: what a refusal asks of the client, from its advice; an
# advice that no retry can follow, and any advice not named here, is `block`.
ACTIONS = {"attest": "challenge", "bypass": "rate-limited", "register": "register", "reSign": "resign", "refreshKeys": "resign",
           "resyncClock": "resync-clock", "retryLater": "retry-later", "fixRequest": "block", "fixConfiguration": "block",
           "updateClient": "block"}


def action_of(advice):
    """SPEC §7.1, ATTEST §10.9: the action of an advice (`block` for one a server does not define)."""
    return ACTIONS.get(advice, "block")


def refusal(name, detail, key_id=None, retry_after=None):
    """§7.1: the status, the header fields and the problem document refusing with error `name`
    (`detail`: the refusing side's fixed sentence; `retry_after`: the seconds a server asks for)."""
    code, advice = CODES[name]
    status = STATUS_OF[code]
    headers = {"Content-Type": "application/problem+json", "Cache-Control": "no-store",
               "signcore-error": "%s;code=%d;advice=%s" % (name, code, advice), "signcore-action": action_of(advice)}
    if status == 401:
        headers["WWW-Authenticate"] = 'SignCore error="%s"' % name
    if status == 503:
        headers["Retry-After"] = str(retry_after)
    problem = {"type": "about:blank", "title": REASON[status], "status": status, "detail": detail, "code": code, "name": name,
               "advice": advice, "action": action_of(advice), "retryable": advice not in ("fixRequest", "fixConfiguration")}
    if name == "unknownKey" and key_id is not None:
        problem["keyID"] = key_id
    return {"status": status, "headers": headers, "problem": problem}


def generate_refusal():
    cases = []
    def add(comment, name, detail, key_id=None, retry_after=None):
        case = {"tcId": len(cases) + 1, "comment": comment, "name": name, "detail": detail}
        if key_id is not None:
            case["keyID"] = key_id
        if retry_after is not None:
            case["retryAfter"] = retry_after
        case["expected"] = refusal(name, detail, key_id, retry_after)
        cases.append(case)
    codes = sorted(CODES.items(), key=lambda c: c[1][0])
    for name, (code, _) in codes:
        if code < 80:  # SPEC §7's table
            add("§7.1 %s (%d)" % (name, code), name, "the rule that failed, in one fixed sentence",
                key_id="hmac-2027" if name == "unknownKey" else None, retry_after=1 if STATUS_OF[code] == 503 else None)
    add("§7.1 unknownKey without a key id to name: no keyID member", "unknownKey", "no key has the token's key id")
    add("§7.1 keyID is a member for unknownKey only", "badSignature", "the signature does not verify", key_id="hmac-2026")
    add("§7.1 Retry-After carries the seconds the server asks for", "overloaded", "the replay guard is full", retry_after=30)
    add("§7.1 Retry-After only with 503", "replayed", "the nonce was already used", retry_after=30)
    add("§7.1 the detail is the refusing side's sentence, carried as it is", "unavailable",
        "a key source or store cannot be reached", retry_after=5)
    # the codes of SPEC §7.3's ranges that docs/ATTEST.md defines, without their flows' own fields
    for name, (code, _) in codes:
        if 80 <= code < 140:  # HTTPSIG.md §6's codes are pinned by httpsig.json
            section = "§6" if code < 100 else "§9.9" if code < 120 else "§10.8"
            add("ATTEST %s %s (%d)" % (section, name, code), name, "the rule that failed, in one fixed sentence")
    add("§7.1 Retry-After only with 503: a 429 given a retryAfter carries none (its flow adds it, ATTEST §10.3)", "rateLimited",
        "the rate limit of this bucket is exhausted", retry_after=30)
    add("§7.1 keyID is a member for unknownKey only: not for deviceUnknown", "deviceUnknown", "no device key has this key id",
        key_id="my-phone")
    return {"spec": "SignCore/3", "algorithm": "refusal",
            "header": "docs/SPEC.md §7.1. Each case: an error (name, detail, keyID when the refusal has one) and the server's "
                      "retryAfter (seconds, for 503) -> the status, every header field of the response and the members of its "
                      "application/problem+json body (signcore-action and action from the advice, docs/ATTEST.md §10.9); the "
                      "codes of docs/ATTEST.md §6, §9.9 and §10.8 without their flows' own fields and members and without now",
            "numberOfTests": len(cases), "tests": cases}


def parse_key_set(text):
    """§6.1: a JWK Set (a document with `keys`), or a single JWK as a set of one; duplicate ids
    refused; a private EdDSA or ES256 key (with `d`) refused in a verifier's set."""
    doc = load_document(text)
    if "keys" not in doc:
        items = [doc]
    elif not isinstance(doc["keys"], list):
        raise SpecError("invalidKey")
    else:
        items = doc["keys"]
    keys = [Key(j) for j in items]
    if any(k.alg != "HS256" and k.private is not None for k in keys):
        raise SpecError("invalidKey")
    if len({k.kid for k in keys}) != len(keys):
        raise SpecError("invalidKey")
    return keys


# §10 signed messages
CONTEXT_BYTES = b"abcdefghijklmnopqrstuvwxyz0123456789-_./"
MAX_CONTEXT = 64
MAX_MESSAGE = 1 << 20
INPUT_SHOWN = 4096  # larger signing inputs are given by their SHA-256 in the vectors


def message_input(key: Key, context: str, message: bytes) -> bytes:
    """§10.1, refusing (§10.3) a context or message out of bounds."""
    c = context.encode()
    if not 1 <= len(c) <= MAX_CONTEXT or any(b not in CONTEXT_BYTES for b in c):
        raise SpecError("invalidInput")
    if len(message) > MAX_MESSAGE:
        raise SpecError("invalidInput")
    alg, kid = key.alg.encode(), key.kid.encode()
    return (b"SignCore/3 message\n" + bytes([len(alg)]) + alg + bytes([len(kid)]) + kid + bytes([len(c)]) + c
            + len(message).to_bytes(4, "big") + message)


def sign_message(key: Key, context: str, message: bytes):
    """§10.2-10.3: a public key first, then the input's bounds."""
    if key.alg != "HS256" and key.private is None:
        raise SpecError("invalidKey")
    data = message_input(key, context, message)
    return data, key.sign(data)


def verify_message(key: Key, context: str, message: bytes, signature: bytes):
    data = message_input(key, context, message)
    if not key.verify(data, signature):
        raise SpecError("badSignature")


MESSAGE_KEYS = {
    "hmac": KEYS["hmac"],
    "hmacRenamed": jwk_for("oct", seed("HMAC key"), kid="hmac-2027"),
    "hmacOther": KEYS["hmacOther"],
    "ed25519": KEYS["ed25519"],
    "ed25519Public": jwk_for("OKP", seed("Ed25519 seed"), private=False),
    "p256": KEYS["p256"],
    "p256Public": KEYS["p256Public"],
}
CHALLENGE = "signcore-challenge/1"


def expected_input(data: bytes) -> dict:
    if len(data) > INPUT_SHOWN:
        return {"signingInputSHA256": hashlib.sha256(data).hexdigest()}
    return {"signingInput": data.hex()}


def generate_message():
    keys = {n: Key(j) for n, j in MESSAGE_KEYS.items()}
    signs, verifies = [], []
    made = {}

    def add_sign(comment, key, context, message=None, name=None):
        case = {"tcId": len(signs) + len(verifies) + 1, "comment": comment, "key": key, "context": context}
        if message is not None:
            case["message"] = message
        try:
            data, signature = sign_message(keys[key], context, body_of(message))
        except SpecError as e:
            case.update(result="invalid", error=e.code)
        else:
            case.update(result="valid", expected=dict(expected_input(data), signature=b64u(signature)))
            if name:
                made[name] = signature
        signs.append(case)

    def add_verify(comment, key, context, signature: bytes, message=None):
        case = {"tcId": len(signs) + len(verifies) + 1, "comment": comment, "key": key, "context": context}
        if message is not None:
            case["message"] = message
        case["signature"] = b64u(signature)
        try:
            verify_message(keys[key], context, body_of(message), signature)
            case["result"] = "valid"
        except SpecError as e:
            case.update(result="invalid", error=e.code)
        verifies.append(case)

    hello = {"utf8": "hello, challenge 7f3a"}
    binary = {"hex": "00ff0a0d5369676e436f72652f33207774"}
    add_sign("§10 HS256 under the challenge context", "hmac", CHALLENGE, hello, name="h")
    add_sign("§10 HS256, an empty message", "hmac", CHALLENGE, None, name="hEmpty")
    add_sign("§10 HS256, the same secret under another key id: kid is in the input", "hmacRenamed", CHALLENGE, hello)
    add_sign("§10 HS256, another secret", "hmacOther", CHALLENGE, hello)
    add_sign("§10 EdDSA, a one-byte context and binary bytes", "ed25519", "a", binary, name="e")
    add_sign("§10 EdDSA, a 64-byte context of every allowed byte", "ed25519", "abcdefghijklmnopqrstuvwxyz0123456789-_./" + "x" * 24, hello)
    add_sign("§10 ES256 (randomised: the signing input, and a signature that verifies)", "p256", CHALLENGE, hello, name="p")
    add_sign("§10 HS256, a message of exactly 1048576 bytes", "hmac", "signcore-device/1", MIB)
    add_sign("§10 EdDSA, a message of 4097 bytes (the input given by its SHA-256)", "ed25519", CHALLENGE,
             {"formula": {"length": 4097, "byte": "i mod 251"}})
    add_sign("§10.3 a public key cannot sign", "ed25519Public", CHALLENGE, hello)
    add_sign("§10.3 a public P-256 key cannot sign", "p256Public", CHALLENGE, hello)
    add_sign("§10.3 the key first: a public key with an empty context", "ed25519Public", "", hello)
    add_sign("§10.3 an empty context", "hmac", "", hello)
    add_sign("§10.3 a context of 65 bytes", "hmac", "c" * 65, hello)
    add_sign("§10.3 upper case is not in the context's set", "hmac", "SignCore-challenge/1", hello)
    add_sign("§10.3 a space is not in the context's set", "hmac", "signcore challenge", hello)
    add_sign("§10.3 a colon is not in the context's set", "hmac", "urn:challenge", hello)
    add_sign("§10.3 a non-ASCII context (2 bytes of UTF-8 for one character)", "hmac", "caf\u00e9", hello)
    add_sign("§10.3 a message of 1048577 bytes", "hmac", CHALLENGE, {"formula": {"length": (1 << 20) + 1, "byte": "i mod 251"}})
    add_sign("§10.3 the key before the message's length", "p256Public", CHALLENGE,
             {"formula": {"length": (1 << 20) + 1, "byte": "i mod 251"}})

    add_verify("§10 HS256 verifies", "hmac", CHALLENGE, made["h"], hello)
    add_verify("§10 HS256, an empty message", "hmac", CHALLENGE, made["hEmpty"])
    add_verify("§10 EdDSA verifies under the public key", "ed25519Public", "a", made["e"], binary)
    add_verify("§10 ES256 verifies under the public key", "p256Public", CHALLENGE, made["p"], hello)
    r, s_ = made["p"][:32], int.from_bytes(made["p"][32:], "big")
    add_verify("§10.2 ES256 with n - s verifies too", "p256Public", CHALLENGE, r + (P256_N - s_).to_bytes(32, "big"), hello)
    add_verify("§10.3 another context", "hmac", "signcore-challenge/2", made["h"], hello)
    add_verify("§10.3 an EdDSA signature under another context", "ed25519Public", "b", made["e"], binary)
    add_verify("§10.3 a message one byte longer", "hmac", CHALLENGE, made["h"], {"utf8": "hello, challenge 7f3a!"})
    add_verify("§10.3 the empty message's signature for another message", "hmac", CHALLENGE, made["hEmpty"], {"hex": "00"})
    add_verify("§10.3 the same secret under another key id", "hmacRenamed", CHALLENGE, made["h"], hello)
    add_verify("§10.3 another secret under the same key id", "hmacOther", CHALLENGE, made["h"], hello)
    add_verify("§10.3 a truncated tag (31 bytes)", "hmac", CHALLENGE, made["h"][:31], hello)
    add_verify("§10.3 an empty signature", "hmac", CHALLENGE, b"", hello)
    add_verify("§10.3 a 48-byte signature", "ed25519Public", "a", made["e"][:48], binary)
    add_verify("§10.3 an EdDSA signature given to an ES256 key (both 64 bytes)", "p256Public", "a", made["e"], binary)
    add_verify("§10.3 an ES256 signature with one bit flipped", "p256Public", CHALLENGE,
               made["p"][:10] + bytes([made["p"][10] ^ 1]) + made["p"][11:], hello)
    add_verify("§10.3 the context is checked before the signature", "hmac", "Bad", made["h"], hello)
    add_verify("§10.3 the message's length is checked before the signature", "hmac", CHALLENGE, made["h"],
               {"formula": {"length": (1 << 20) + 1, "byte": "i mod 251"}})
    # A wtoken's signature over its signing input (§4.2) is no message signature of those bytes.
    hk = keys["hmac"]
    token_input = signing_input(hk.alg, hk.kid, bytes(32), bytes(32), CREATED, 60, NONCES[0], b"")
    add_verify("§10.1 a wtoken signature over its signing input does not verify as a message of it", "hmac",
               CHALLENGE, hk.sign(token_input), {"hex": token_input.hex()})
    ek = keys["ed25519"]
    token_input = signing_input(ek.alg, ek.kid, bytes(32), bytes(32), CREATED, 60, NONCES[1], b"")
    add_verify("§10.1 the same for EdDSA", "ed25519Public", CHALLENGE, ek.sign(token_input), {"hex": token_input.hex()})
    add_verify("§10.3 a private key verifies with its public part", "ed25519", "a", made["e"], binary)
    s_ed = int.from_bytes(made["e"][32:], "little")
    add_verify("§10.2 EdDSA with S + L (not below the group order)", "ed25519Public", "a",
               made["e"][:32] + (s_ed + ED_L).to_bytes(32, "little"), binary)
    add_verify("§10.2 ES256 with r = 0", "p256Public", CHALLENGE, bytes(32) + made["p"][32:], hello)
    add_verify("§10.2 ES256 with s = n", "p256Public", CHALLENGE, made["p"][:32] + P256_N.to_bytes(32, "big"), hello)
    return {"spec": "SignCore/3", "algorithm": "message",
            "header": "docs/SPEC.md §10. sign: key, context, message -> the signing input (hex, or its SHA-256 past 4096 "
                      "bytes) and the signature (base64url; ES256: one that verifies), or the error; verify: key, context, "
                      "message, signature -> valid or the error",
            "numberOfTests": len(signs) + len(verifies), "keys": MESSAGE_KEYS, "sign": signs, "verify": verifies}


# ---- docs/ATTEST.md: challenges, proof of work, attestation tokens ---------------------------

CHALLENGE_CONTEXT = "signcore-challenge/1"  # ATTEST §2.2
TOKEN_CONTEXT = "signcore-attestation/1"  # ATTEST §5.2
ATTEST_TOKEN_FIELD = "attest-token"  # ATTEST §5.3
CHALLENGE_KEY_ALGS = ("HS256",)  # ATTEST §1: `oct` keys authenticate challenges
TOKEN_KEY_ALGS = ("EdDSA", "ES256")  # ATTEST §1: `OKP` and `EC` keys sign tokens
ATTEST_SKEW = 5000  # ATTEST §1: the default skew, in milliseconds
MAX_LEVELS = 0xFFFF  # ATTEST §1: levels are a u16 set
MAX_DIFFICULTY = 32  # ATTEST §2.1
MAX_COUNT = 16  # ATTEST §2.1
MAX_CHALLENGE_TTL = 3600  # ATTEST §2.1, seconds
MAX_TOKEN_TTL = 86400  # ATTEST §5.1, seconds
MAX_KID = 64  # ATTEST §2.1, §5.1: kidLength 1-64
MAX_FIELD_TEXT = 1024  # ATTEST §2.3, §2.4, §5.4
MIN_CHALLENGE = 136  # ATTEST §2.4: 135 + m, m >= 1
MIN_TOKEN = 161  # ATTEST §5.4: 160 + m, m >= 1
MAX_ATTEST_BODY = 4096  # ATTEST §4.2
KID_BYTES = set(ALPHABET.encode())  # SPEC §6.2: A-Z a-z 0-9 - _
CHALLENGE_HEAD = struct.Struct(">BBBBHQII")  # ATTEST §2.1 offsets 0-21: version, type, d, k, levels, issuedAt, ttl, minElapsed
TOKEN_HEAD = struct.Struct(">BHQI")  # ATTEST §5.1 offsets 0-14: version, levels, issuedAt, ttl
OFFER_TYPE = 5  # ATTEST §10.3: a rate limit's offer is a challenge of type 5


def key_thumbprint(key: Key) -> bytes:
    """ATTEST §1: SHA-256 of the RFC 7638 J of SPEC §6.2, raw (32 bytes), whatever the key's kid."""
    return unb64u(key.thumbprint)


def origin_of(url: bytes) -> bytes:
    """ATTEST §1: the canonical URL (SPEC §2) up to, not including, the path."""
    scheme, _, rest = canonical_url(url).partition(b"://")
    return scheme + b"://" + rest.partition(b"/")[0]


def origin_digest(url: str) -> bytes:
    """ATTEST §1: SHA-256("SignCore/3 attest origin\\n" || origin)."""
    return hashlib.sha256(b"SignCore/3 attest origin\n" + origin_of(url.encode())).digest()


def issuing_key(keys, algs) -> Key:
    """ATTEST §1 server keys: the first key of the set of one of the kinds `algs` issues; a set
    with none cannot issue (invalidConfiguration)."""
    for key in keys:
        if key.alg in algs:
            return key
    raise SpecError("invalidConfiguration")


def named_key(keys, kid: str, algs):
    """ATTEST §4.3 step 2, §5.5 step 3: the key of the set that `kid` names, when it is of one of
    the kinds `algs` (every key of the set is accepted when checking); else None."""
    for key in keys:
        if key.kid == kid and key.alg in algs:
            return key
    return None


def signature_verifies(key: Key, context: str, body: bytes, signature: bytes) -> bool:
    """ATTEST §2.2, §5.2: the SPEC §10 signature of the body under the context."""
    try:
        verify_message(key, context, body, signature)
    except SpecError:
        return False
    return True


def challenge_body(type_, d, k, levels, issued_at, ttl, min_elapsed, key: bytes, origin: bytes, random: bytes, kid: bytes) -> bytes:
    """ATTEST §2.1: the bytes before the tag (offsets 0 to 102 + m)."""
    return (CHALLENGE_HEAD.pack(1, type_, d, k, levels, issued_at, ttl, min_elapsed) + key + origin + random
            + bytes([len(kid)]) + kid)


def issue_challenge(keys, type_, d, k, levels, issued_at, ttl, min_elapsed, client: Key, origin: str, random: bytes) -> bytes:
    """ATTEST §2.1-§2.2: body || tag, by the first `oct` key of the set (§1). A challenge that §2.4
    would refuse is not issued: its parameters are a deployment's (invalidConfiguration)."""
    return issue_bound_challenge(keys, type_, d, k, levels, issued_at, ttl, min_elapsed, key_thumbprint(client), origin, random)


def kind_admits(type_, d, k, levels) -> bool:
    """ATTEST §2.4: type 1 (proof of work) has d 1-32, k 1-16 and levels; types 2 (registration)
    and 4 (payload) d = k = 0 and no levels; type 3 (device) d = k = 0 and levels; no other type."""
    if type_ == 1:
        return 1 <= d <= MAX_DIFFICULTY and 1 <= k <= MAX_COUNT and 1 <= levels <= MAX_LEVELS
    if type_ in (2, 4):
        return d == 0 and k == 0 and levels == 0
    if type_ == 3:
        return d == 0 and k == 0 and 1 <= levels <= MAX_LEVELS
    if type_ == OFFER_TYPE:  # §10.3: a rate limit's offer, with work (proof of work) or without
        return (d == 0 and k == 0 or 1 <= d <= MAX_DIFFICULTY and 1 <= k <= MAX_COUNT) and 1 <= levels <= MAX_LEVELS
    return False


def issue_bound_challenge(keys, type_, d, k, levels, issued_at, ttl, min_elapsed, key_field: bytes, origin: str, random: bytes) -> bytes:
    """ATTEST §2.1-§2.2 with the key field given (a thumbprint, a key id, or 32 zero bytes, §9.3)."""
    key = issuing_key(keys, CHALLENGE_KEY_ALGS)
    if not kind_admits(type_, d, k, levels) or not 1 <= ttl <= MAX_CHALLENGE_TTL or min_elapsed >= ttl * 1000:
        raise SpecError("invalidConfiguration")
    body = challenge_body(type_, d, k, levels, issued_at, ttl, min_elapsed, key_field, origin_digest(origin), random, key.kid.encode())
    return body + sign_message(key, CHALLENGE_CONTEXT, body)[1]


def challenge_id(challenge: bytes) -> bytes:
    """ATTEST §2.1: SHA-256 of all its bytes, tag included."""
    return hashlib.sha256(challenge).digest()


def attest_field(text: str) -> bytes:
    """ATTEST §2.4, §5.4: base64url (SPEC §1.2) of at most 1024 bytes, else attestationMalformed."""
    if len(text.encode()) > MAX_FIELD_TEXT:
        raise SpecError("attestationMalformed")
    try:
        return unb64u(text)
    except ValueError:
        raise SpecError("attestationMalformed")


def parse_challenge(text: str) -> dict:
    """ATTEST §2.4: every failure is attestationMalformed."""
    b = attest_field(text)
    if len(b) < MIN_CHALLENGE:
        raise SpecError("attestationMalformed")
    version, type_, d, k, levels, issued_at, ttl, min_elapsed = CHALLENGE_HEAD.unpack(b[:22])
    m = b[102]
    if (version != 1 or not kind_admits(type_, d, k, levels)
            or not 1 <= ttl <= MAX_CHALLENGE_TTL or min_elapsed >= ttl * 1000 or not 1 <= m <= MAX_KID
            or any(c not in KID_BYTES for c in b[103:103 + m]) or len(b) != 135 + m):
        raise SpecError("attestationMalformed")
    return dict(type=type_, d=d, count=k, levels=levels, issuedAt=issued_at, ttl=ttl, minElapsed=min_elapsed, key=b[22:54], origin=b[54:86],
                kid=b[103:103 + m].decode(), body=b[:103 + m], tag=b[103 + m:], bytes=b)


def pow_prefix(challenge: bytes) -> bytes:
    """ATTEST §3.1: P = SHA-256("SignCore/3 pow\\n" || challenge), tag included."""
    return hashlib.sha256(b"SignCore/3 pow\n" + challenge).digest()


def sub_solution(prefix: bytes, i, c) -> bytes:
    """ATTEST §3.2: h_i = SHA-256(P || u8(i) || u64(c))."""
    return hashlib.sha256(prefix + bytes([i]) + c.to_bytes(8, "big")).digest()


def meets_difficulty(h: bytes, d) -> bool:
    """ATTEST §3.2: at least d leading zero bits (h, a 256-bit big-endian integer, below 2^(256 - d))."""
    return 256 - int.from_bytes(h, "big").bit_length() >= d


def solve(challenge: bytes, d, k) -> bytes:
    """ATTEST §3.2-§3.3: the smallest counter of each sub-solution, u64 each, in order."""
    prefix = pow_prefix(challenge)
    answer = b""
    for i in range(k):
        c = 0
        while not meets_difficulty(sub_solution(prefix, i, c), d):
            c += 1
        answer += c.to_bytes(8, "big")
    return answer


def answer_meets(challenge: bytes, d, k, answer: bytes) -> bool:
    """ATTEST §3.4: every sub-solution of the answer (8k bytes) meets d."""
    prefix = pow_prefix(challenge)
    return all(meets_difficulty(sub_solution(prefix, i, int.from_bytes(answer[8 * i:8 * i + 8], "big")), d) for i in range(k))


def parse_attest_request(body: bytes):
    """ATTEST §4.2: at most 4096 bytes (bodyTooLarge), then JSON under SPEC §6.1's document rules,
    an object whose `challenge` is a string (others ignored; `answer`, read for type 1 by
    answer_bytes): else attestationMalformed."""
    if len(body) > MAX_ATTEST_BODY:
        raise SpecError("bodyTooLarge")
    try:
        doc = load_document(body.decode("utf-8"))
    except (UnicodeDecodeError, SpecError):
        raise SpecError("attestationMalformed")
    if not isinstance(doc.get("challenge"), str):
        raise SpecError("attestationMalformed")
    return doc["challenge"], doc.get("answer")


def answer_bytes(text: str, k) -> bytes:
    """ATTEST §4.2, §4.3 step 1: a string, base64url of exactly 8k bytes, else attestationMalformed."""
    if not isinstance(text, str):
        raise SpecError("attestationMalformed")
    try:
        answer = unb64u(text)
    except ValueError:
        raise SpecError("attestationMalformed")
    if len(answer) != 8 * k:
        raise SpecError("attestationMalformed")
    return answer


def redeem(body: bytes, client: Key, origin: str, keys, now, skew, redeemed, devices=None, platform_levels=0, formats=None) -> dict:
    """ATTEST §4.3, in order, the first failure being the result. `client`: the key that signed the
    request (verified first); `redeemed`: the challenge ids (hex) the store holds. The result is the
    challenge's id (recorded in the store) and the levels of the token to issue. A set that cannot
    issue the token (§1) redeems nothing: invalidConfiguration, before the request is read.
    `devices`: the registry's records by key id ({format, status}); `platform_levels`: §9.2."""
    issuing_key(keys, TOKEN_KEY_ALGS)
    challenge_text, answer_text = parse_attest_request(body)  # step 1
    c = parse_challenge(challenge_text)
    if c["type"] in (2, 4, 5):  # answered at the device endpoint (§9), or with a rate limited request (§10.5), never redeemed here
        raise SpecError("attestationMalformed")
    answer = answer_bytes(answer_text, c["count"]) if c["type"] == 1 else None
    key = named_key(keys, c["kid"], CHALLENGE_KEY_ALGS)  # step 2
    if key is None or not signature_verifies(key, CHALLENGE_CONTEXT, c["body"], c["tag"]):
        raise SpecError("challengeForged")
    if not now < c["issuedAt"] + c["ttl"] * 1000 + skew:  # step 3
        raise SpecError("challengeExpired")
    if now < c["issuedAt"] + c["minElapsed"]:  # step 4: no skew; the wait rounded up to whole seconds (so at least 1)
        raise SpecError("challengeTooEarly", retry_after=-(-(c["issuedAt"] + c["minElapsed"] - now) // 1000))
    if c["origin"] != origin_digest(origin):  # step 5
        raise SpecError("challengeScopeMismatch")
    if c["key"] != key_thumbprint(client):  # step 6
        raise SpecError("challengeKeyMismatch")
    if c["type"] == 3:  # step 7 of a device challenge (§9.6)
        record = registered_device(devices, b64u(key_thumbprint(client)), formats)
        if c["levels"] & platform_levels and record["format"] not in PLATFORM_FORMATS:
            raise SpecError("formatNotAccepted")
    elif not answer_meets(c["bytes"], c["d"], c["count"], answer):  # step 7
        raise SpecError("wrongAnswer")
    if challenge_id(c["bytes"]).hex() in redeemed:  # step 8: insert if absent
        raise SpecError("challengeRedeemed")
    return dict(id=challenge_id(c["bytes"]).hex(), levels=c["levels"])


def registered_device(devices, key_id: str, formats) -> dict:
    """ATTEST §9.6 step 7 (and §10.5 step 6): the registry's active record of `key_id` in a format
    that signs requests and that the deployment accepts (`formats`; None: all three); else
    deviceUnknown (deviceRevoked when it is revoked) or formatNotAccepted. `devices`: the
    registry's records by key id ({format, status})."""
    record = (devices or {}).get(key_id)
    if record is None or record["format"] not in SIGNING_FORMATS:
        raise SpecError("deviceUnknown")
    if record["status"] != "active":
        raise SpecError("deviceRevoked")
    if record["format"] not in (DEVICE_FORMATS if formats is None else formats):  # a format the deployment no longer accepts
        raise SpecError("formatNotAccepted")
    return record


def attest_response(token: bytes, ttl, levels, now) -> str:
    """ATTEST §4.4: the body of the attest response; `now` in milliseconds, written in whole seconds."""
    return '{"token":"%s","ttl":%d,"levels":%d,"now":%d}' % (b64u(token), ttl, levels, now // 1000)


def token_body(levels, issued_at, ttl, key: bytes, origin: bytes, token_id: bytes, kid: bytes) -> bytes:
    """ATTEST §5.1: the bytes before the signature (offsets 0 to 95 + m)."""
    return TOKEN_HEAD.pack(1, levels, issued_at, ttl) + key + origin + token_id + bytes([len(kid)]) + kid


def issue_token(keys, levels, issued_at, ttl, client: Key, origin: str, token_id: bytes) -> bytes:
    """ATTEST §5.1-§5.2: body || signature, by the first `OKP` or `EC` key of the set (§1). Levels
    or a TTL that §5.4 would refuse are a deployment's error (invalidConfiguration)."""
    key = issuing_key(keys, TOKEN_KEY_ALGS)
    if not 1 <= levels <= MAX_LEVELS or not 1 <= ttl <= MAX_TOKEN_TTL:
        raise SpecError("invalidConfiguration")
    body = token_body(levels, issued_at, ttl, key_thumbprint(client), origin_digest(origin), token_id, key.kid.encode())
    return body + sign_message(key, TOKEN_CONTEXT, body)[1]


def parse_attest_token(text: str) -> dict:
    """ATTEST §5.4: every failure is attestationMalformed."""
    b = attest_field(text)
    if len(b) < MIN_TOKEN:
        raise SpecError("attestationMalformed")
    version, levels, issued_at, ttl = TOKEN_HEAD.unpack(b[:15])
    m = b[95]
    if (version != 1 or levels == 0 or not 1 <= ttl <= MAX_TOKEN_TTL or not 1 <= m <= MAX_KID
            or any(c not in KID_BYTES for c in b[96:96 + m]) or len(b) != 160 + m):
        raise SpecError("attestationMalformed")
    return dict(levels=levels, issuedAt=issued_at, ttl=ttl, key=b[15:47], origin=b[47:79], tokenID=b[79:95],
                kid=b[96:96 + m].decode(), body=b[:96 + m], signature=b[96 + m:])


def check_attest_token(field: str, client: Key, covered, origin: str, keys, now, skew, required, name=ATTEST_TOKEN_FIELD) -> dict:
    """ATTEST §5.5, in order, the first failure being the result. `client`: the key that signed the
    request; `covered`: the names its wtoken covers."""
    if name.lower() not in covered:  # step 1
        raise SpecError("headerNotCovered")
    t = parse_attest_token(field)  # step 2
    key = named_key(keys, t["kid"], TOKEN_KEY_ALGS)  # step 3
    if key is None or not signature_verifies(key, TOKEN_CONTEXT, t["body"], t["signature"]):
        raise SpecError("attestationInvalid")
    if not t["issuedAt"] - skew <= now < t["issuedAt"] + t["ttl"] * 1000 + skew:  # step 4
        raise SpecError("attestationExpired")
    if t["origin"] != origin_digest(origin):  # step 5
        raise SpecError("attestationScopeMismatch")
    if t["key"] != key_thumbprint(client):  # step 6
        raise SpecError("attestationKeyMismatch")
    if t["levels"] & required != required:  # step 7: the token meets the requirement (§1)
        raise SpecError("attestationInsufficient")
    return dict(levels=t["levels"], issuedAt=t["issuedAt"], expires=t["issuedAt"] + t["ttl"] * 1000, tokenID=t["tokenID"].hex())


ATTEST_KEYS = {
    # the server's keys (ATTEST §1): private, one JWK Set in the vectors' order
    "challengeKey": jwk_for("oct", seed("attest challenge key"), kid="challenge-2026"),
    "challengeKeyOld": jwk_for("oct", seed("attest challenge key 2025"), kid="challenge-2025"),
    "challengeKeyImpostor": jwk_for("oct", seed("attest impostor challenge key"), kid="challenge-2026"),
    "challengeKey64": jwk_for("oct", seed("attest challenge key 64"), kid="challenge-" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"[:54]),
    "challengeKey1": jwk_for("oct", seed("attest challenge key 1"), kid="c"),
    "challengeKeyUnnamed": jwk_for("oct", seed("attest challenge key unnamed")),
    "tokenKey": jwk_for("OKP", seed("attest token key"), kid="token-2026"),
    "tokenKeyOld": jwk_for("OKP", seed("attest token key 2025"), kid="token-2025"),
    "tokenKeyImpostor": jwk_for("OKP", seed("attest impostor token key"), kid="token-2026"),
    "tokenKey64": jwk_for("OKP", seed("attest token key 64"), kid="token-" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"[:58]),
    "tokenKey1": jwk_for("OKP", seed("attest token key 1"), kid="t"),
    "tokenKeyUnnamed": jwk_for("OKP", seed("attest token key unnamed")),
    "tokenKeyP256": jwk_for("EC", seed("attest token key P-256"), kid="token-p256"),
    "tokenKeyPublic": jwk_for("OKP", seed("attest token key public"), kid="token-public", private=False),
    # the clients' keys: the keys that sign their requests (public; an app's HMAC key is a secret)
    "clientEd25519": jwk_for("OKP", seed("attest client Ed25519"), private=False),
    "clientEd25519Named": jwk_for("OKP", seed("attest client Ed25519"), kid="device-7", private=False),
    "clientOther": jwk_for("OKP", seed("attest another client Ed25519"), private=False),
    "clientP256": jwk_for("EC", seed("attest client P-256"), private=False),
    "clientHmac": jwk_for("oct", seed("attest client app HMAC key"), kid="app-2026"),
}
ISSUED = 1_790_000_000_000  # milliseconds
ORIGIN = "https://api.example.com"
ATTEST_RANDOMS = [seed("attest random %d" % i)[:16] for i in range(200)]


def attest_outcome(run) -> dict:
    """A case's result as the vectors write it: `valid` and `expected`, or the error (and the
    retryAfter of challengeTooEarly)."""
    try:
        return {"result": "valid", "expected": run()}
    except SpecError as e:
        out = {"result": "invalid", "error": e.code}
        if e.retry_after is not None:
            out["retryAfter"] = e.retry_after
        return out


def attest_challenge_case(keys: dict, tc: dict) -> dict:
    server = [keys[n] for n in tc["serverKeys"]] if "serverKeys" in tc else [keys[tc["serverKey"]]]
    client = keys[tc["clientKey"]]

    def run():
        ch = issue_challenge(server, tc["type"], tc["difficulty"], tc["count"], tc["levels"], tc["issuedAt"], tc["ttl"],
                             tc["minElapsed"], client, tc["origin"], bytes.fromhex(tc["random"]))
        out = dict(keyThumbprint=key_thumbprint(client).hex(), originDigest=origin_digest(tc["origin"]).hex(), body=ch[:-32].hex(),
                   tag=ch[-32:].hex(), id=challenge_id(ch).hex(), prefix=pow_prefix(ch).hex(), challenge=b64u(ch))
        if tc.get("solve"):
            out["answer"] = b64u(solve(ch, tc["difficulty"], tc["count"]))
        return out
    return attest_outcome(run)


def attest_redeem_case(keys: dict, tc: dict) -> dict:
    body = bytes.fromhex(tc["bodyHex"]) if "bodyHex" in tc else tc["body"].encode()
    return attest_outcome(lambda: redeem(body, keys[tc["clientKey"]], tc["origin"], [keys[n] for n in tc["serverKeys"]], tc["now"],
                                         tc.get("skew", ATTEST_SKEW), set(tc.get("redeemed", []))))


def attest_token_case(keys: dict, tc: dict) -> dict:
    server = [keys[n] for n in tc["serverKeys"]] if "serverKeys" in tc else [keys[tc["serverKey"]]]

    def run():
        token = issue_token(server, tc["levels"], tc["issuedAt"], tc["ttl"], keys[tc["clientKey"]], tc["origin"],
                            bytes.fromhex(tc["tokenID"]))
        return dict(body=token[:-64].hex(), token=b64u(token), response=attest_response(token, tc["ttl"], tc["levels"], tc["now"]))
    return attest_outcome(run)


def attest_check_case(keys: dict, tc: dict) -> dict:
    return attest_outcome(lambda: check_attest_token(tc["field"], keys[tc["clientKey"]], tc.get("covered", [ATTEST_TOKEN_FIELD]),
                                                     tc["origin"], [keys[n] for n in tc["serverKeys"]], tc["now"],
                                                     tc.get("skew", ATTEST_SKEW), tc["required"]))


ATTEST_SECTIONS = {"challenge": attest_challenge_case, "redeem": attest_redeem_case, "token": attest_token_case,
                   "check": attest_check_case}


def generate_attest():
    keys = {n: Key(j) for n, j in ATTEST_KEYS.items()}
    sections = {name: [] for name in ATTEST_SECTIONS}
    randoms = iter(ATTEST_RANDOMS)
    token_ids = iter(seed("attest token id %d" % i)[:16] for i in range(200))

    def add(section, comment, want, inputs):
        case = dict({"tcId": 0, "comment": comment}, **inputs)
        case.update(ATTEST_SECTIONS[section](keys, case))
        got = case["error"] if case["result"] == "invalid" else "valid"
        assert got == want, (section, comment, got, want)
        sections[section].append(case)
        return case

    def servers(server):
        return {"serverKeys": list(server)} if isinstance(server, (list, tuple)) else {"serverKey": server}

    # ---- challenge cases: issue (§2.1-§2.2), id, prefix (§3.1), the smallest counters (§3.2)
    def add_challenge(comment, want="valid", server="challengeKey", type_=1, d=8, k=4, levels=1, issued=ISSUED, ttl=300,
                      min_elapsed=0, client="clientEd25519", origin=ORIGIN, solve_=False):
        inputs = servers(server)
        inputs.update(type=type_, difficulty=d, count=k, levels=levels, issuedAt=issued, ttl=ttl, minElapsed=min_elapsed,
                      clientKey=client, origin=origin, random=next(randoms).hex())
        if solve_:
            inputs["solve"] = True
        return add("challenge", comment, want, inputs)

    add_challenge("§2, §3 a challenge of 4 sub-solutions of 8 bits for an Ed25519 client key: every value, and the smallest counters",
                  solve_=True)
    add_challenge("§2.1 two levels (3) and a minElapsed of 2000 ms", d=6, k=2, levels=3, min_elapsed=2000, solve_=True)
    add_challenge("§1 a P-256 client key, and an origin with its port", d=5, k=3, client="clientP256", origin="http://127.0.0.1:8080",
                  solve_=True)
    zero = add_challenge("§1 an HMAC client key (an app's key): its thumbprint is a hash of the secret; d 1, so a counter of 0 solves some",
                         d=1, k=4, client="clientHmac", solve_=True)
    assert any(unb64u(zero["expected"]["answer"])[i:i + 8] == bytes(8) for i in range(0, 32, 8))
    add_challenge("§1 the key thumbprint is the key's whatever its kid: a key with kid device-7 has the unnamed key's thumbprint",
                  client="clientEd25519Named", d=3, k=2, solve_=True)
    add_challenge("§1 the origin is the canonical URL up to the path: another spelling of https://api.example.com, with a path",
                  origin="HTTPS://API.Example.COM:443/v1/orders?id=42#top")
    add_challenge("§1 an IPv6 origin, written as SPEC §2.4 writes it (https://[::1]:8443)", origin="https://[0:0:0:0:0:0:0:1]:8443/attest")
    add_challenge("§1 an http origin on port 80 is written without the port", origin="http://API.example.com:80/")
    add_challenge("§2.1 the largest parameters: d 32, k 16, levels 65535, ttl 3600, minElapsed 3599999", d=32, k=16, levels=65535,
                  ttl=3600, min_elapsed=3599999)
    add_challenge("§2.1 the smallest parameters: d 1, k 1, levels 1, ttl 1, minElapsed 0", d=1, k=1, ttl=1, solve_=True)
    add_challenge("§2.1 minElapsed 999 with a ttl of 1 s (below ttl x 1000)", d=2, k=1, ttl=1, min_elapsed=999)
    add_challenge("§3.2 d 10, k 2", d=10, k=2, solve_=True)
    add_challenge("§2.1 a server key id of 64 characters (m = 64)", server="challengeKey64", d=4, k=1, solve_=True)
    add_challenge("§2.1 a server key id of 1 character (m = 1)", server="challengeKey1", d=4, k=1, solve_=True)
    add_challenge("§2.1 a server key without kid: its key id is its thumbprint (43 characters)", server="challengeKeyUnnamed", d=4, k=1)
    add_challenge("§1 times are u64: an issuedAt above 2^56 ms", issued=2 ** 56 + 1234567, d=4, k=1)
    add_challenge("§1 server keys: the first oct key of the set issues (serverKeys: the set, in its order)",
                  server=["tokenKey", "challengeKey", "challengeKeyOld"], d=4, k=1)
    add_challenge("§1 server keys: a set with no oct key cannot issue a challenge", "invalidConfiguration",
                  server=["tokenKey", "tokenKeyP256"])
    add_challenge("§1 server keys: an OKP key does not authenticate challenges", "invalidConfiguration", server="tokenKey")
    for what, changes in (("type 2 (reserved)", dict(type_=2)), ("d 0", dict(d=0)), ("d 33", dict(d=33)), ("k 0", dict(k=0)),
                          ("k 17", dict(k=17)), ("levels 0", dict(levels=0)), ("levels 65536 (not a u16)", dict(levels=65536)),
                          ("ttl 0", dict(ttl=0)), ("ttl 3601", dict(ttl=3601)),
                          ("minElapsed ttl x 1000 (300000)", dict(min_elapsed=300000))):
        add_challenge("§2.1 a challenge §2.4 would refuse is not issued: %s (a deployment's setting)" % what, "invalidConfiguration",
                      **changes)

    # ---- redeem cases (§4.2, §4.3)
    ED = key_thumbprint(keys["clientEd25519"])

    def make(d=6, k=2, levels=1, issued=ISSUED, ttl=300, min_elapsed=0, client="clientEd25519", origin=ORIGIN, key="challengeKey"):
        return issue_challenge([keys[key]], 1, d, k, levels, issued, ttl, min_elapsed, keys[client], origin, next(randoms))

    def answer(ch: bytes) -> bytes:
        return solve(ch, ch[2], ch[3])

    def request(ch, ans=None, extra="") -> str:
        text = b64u(ch) if isinstance(ch, bytes) else ch
        ans = b64u(answer(ch) if ans is None else ans) if not isinstance(ans, str) else ans
        return '{"challenge":"%s","answer":"%s"%s}' % (text, ans, extra)

    def craft(key="challengeKey", kid=None, context=CHALLENGE_CONTEXT, version=1, type_=1, d=6, k=2, levels=1, issued=ISSUED, ttl=300,
              min_elapsed=0) -> bytes:
        """A challenge with any header and kid, tagged by `key` (so that only the field under test is wrong)."""
        kid = keys[key].kid.encode() if kid is None else kid
        body = (CHALLENGE_HEAD.pack(version, type_, d, k, levels, issued, ttl, min_elapsed) + ED + origin_digest(ORIGIN)
                + next(randoms) + bytes([len(kid)]) + kid)
        return body + sign_message(keys[key], context, body)[1]

    SERVER = ("challengeKey", "tokenKey")
    NOW = ISSUED + 10000

    def add_redeem(comment, want, body=None, body_hex=None, server=SERVER, client="clientEd25519", origin=ORIGIN, now=NOW, skew=None,
                   redeemed=None):
        inputs = {"serverKeys": list(server)}
        if body_hex is not None:
            inputs["bodyHex"] = body_hex
        else:
            inputs["body"] = body
        inputs.update(clientKey=client, origin=origin, now=now)
        if skew is not None:
            inputs["skew"] = skew
        if redeemed is not None:
            inputs["redeemed"] = redeemed
        return add("redeem", comment, want, inputs)

    a = make()
    add_redeem("§4.3 a challenge redeemed: its id is recorded and the token gets its levels", "valid", request(a))
    b = make(levels=3, min_elapsed=2000)
    add_redeem("§4.3 step 4: minElapsed 2000, redeemed exactly 2000 ms after issue; two levels", "valid", request(b), now=ISSUED + 2000)
    c3600 = make(ttl=3600, d=4)
    add_redeem("§2.4 ttl 3600 is accepted; §4.3 step 3: the last millisecond before issuedAt + ttl x 1000 + skew (default 5000)",
               "valid", request(c3600), now=ISSUED + 3600000 + 4999)
    add_redeem("§4.3 step 3: skew 0, the last millisecond before issuedAt + ttl x 1000", "valid", request(a), now=ISSUED + 300000 - 1, skew=0)
    add_redeem("§4.3 step 3: skew 60000, the last millisecond before issuedAt + ttl x 1000 + 60000", "valid", request(a),
               now=ISSUED + 300000 + 59999, skew=60000)
    add_redeem("§2.4 k 16 is accepted (16 sub-solutions of 2 bits)", "valid", request(make(d=2, k=16)))
    add_redeem("§2.4 ttl 1 is accepted", "valid", request(make(ttl=1)), now=ISSUED + 500)
    add_redeem("§2.4 levels 65535, and minElapsed ttl x 1000 - 1 (1999 with a ttl of 2 s) are accepted", "valid",
               request(make(levels=65535, ttl=2, min_elapsed=1999)), now=ISSUED + 1999)
    add_redeem("§2.4 a server key id of 64 characters (m = 64)", "valid", request(make(key="challengeKey64")),
               server=("challengeKey", "challengeKey64", "tokenKey"))
    add_redeem("§2.4 a server key id of 1 character (m = 1)", "valid", request(make(key="challengeKey1")),
               server=("challengeKey1", "tokenKey"))
    add_redeem("§2.2 a server key without kid: the challenge names it by its thumbprint", "valid", request(make(key="challengeKeyUnnamed")),
               server=("tokenKey", "challengeKeyUnnamed"))
    old = make(key="challengeKeyOld")
    add_redeem("§1 rotation: a challenge of the old oct key, still in the set after the new one, is redeemed", "valid", request(old),
               server=("challengeKey", "challengeKeyOld", "tokenKey"))
    add_redeem("§1 an EC (P-256) key issues the tokens of a set without an OKP key", "valid", request(make()),
               server=("challengeKey", "tokenKeyP256"))
    e = make()
    add_redeem("§4.2 other members are ignored, and members come in any order", "valid",
               '{"v":2,"answer":"%s","note":{"a":[1,2,{"b":null}]},"challenge":"%s","x":true}' % (b64u(answer(e)), b64u(e)))
    f = make()
    base = request(f)[:-1] + ',"pad":"'
    add_redeem("§4.2 a body of exactly 4096 bytes", "valid", base + "x" * (4096 - len(base) - 2) + '"}')
    add_redeem("§4.2 JSON whitespace around the members", "valid", ' {\n  "challenge" : "%s" ,\n\t"answer": "%s"\r\n}\n' %
               (b64u(f), b64u(answer(f))))
    nest = lambda n, inner: "[" * n + inner + "]" * n
    add_redeem("§4.2 SPEC §6.1 depth: 16 levels (the object, 14 arrays, a number) are accepted", "valid",
               request(f, extra=',"x":' + nest(14, "0")))
    add_redeem("§4.2 member names and values are read after JSON unescaping", "valid",
               '{"\\u0063hallenge":"\\u%04x%s","an\\u0073wer":"%s"}' % (ord(b64u(f)[0]), b64u(f)[1:], b64u(answer(f))))
    add_redeem("§4.3 step 8: a store holding other ids", "valid", request(f), redeemed=[challenge_id(a).hex(), challenge_id(b).hex()])
    add_redeem("§1 the client's key with a kid has the same thumbprint; the origin in another spelling", "valid",
               request(make(client="clientEd25519")), client="clientEd25519Named", origin="HTTPS://API.EXAMPLE.COM:443/.well-known/signcore/attest")
    add_redeem("§1 an HMAC client key (an app's key)", "valid", request(make(client="clientHmac")), client="clientHmac")
    add_redeem("§1 a P-256 client key, on an origin with a port", "valid",
               request(make(client="clientP256", origin="http://127.0.0.1:8080")), client="clientP256", origin="http://127.0.0.1:8080/x")
    big = make(issued=2 ** 56 + 1234567, d=4)
    add_redeem("§1 times are u64: a challenge issued at 2^56 + 1234567 ms", "valid", request(big), now=2 ** 56 + 1234567 + 10000)
    add_redeem("§3.2 d 10", "valid", request(make(d=10, k=1)))
    d1 = make(d=1, k=4)
    assert bytes(8) in [answer(d1)[i:i + 8] for i in range(0, 32, 8)]
    add_redeem("§3.2 d 1: some counters are 0", "valid", request(d1))
    exact = make(d=8, k=2)
    ans = answer(exact)
    assert any(256 - int.from_bytes(sub_solution(pow_prefix(exact), i, int.from_bytes(ans[8 * i:8 * i + 8], "big")), "big").bit_length() == 8
               for i in range(2))
    add_redeem("§3.2 a sub-solution of exactly d leading zero bits meets d", "valid", request(exact))
    p = pow_prefix(exact)
    short = next(c for c in range(10 ** 6) if 256 - int.from_bytes(sub_solution(p, 0, c), "big").bit_length() == 7)
    add_redeem("§3.2 a sub-solution of d - 1 leading zero bits does not meet d", "wrongAnswer",
               request(exact, short.to_bytes(8, "big") + ans[8:]))

    # configuration
    add_redeem("§1 a set with no OKP or EC key cannot issue the token: nothing is redeemed", "invalidConfiguration", request(make()),
               server=("challengeKey",))
    add_redeem("§1 a set of two oct keys cannot issue tokens", "invalidConfiguration", request(make()),
               server=("challengeKey", "challengeKeyOld"))
    add_redeem("§4.3 order: the configuration before step 1 (a set without a token key, a body that is not JSON)",
               "invalidConfiguration", "nonsense", server=("challengeKey",))
    # step 1: §4.2
    g = make()
    pad = request(g)[:-1] + ',"pad":"'
    add_redeem("§4.2 a body of 4097 bytes is bodyTooLarge", "bodyTooLarge", pad + "x" * (4097 - len(pad) - 2) + '"}')
    add_redeem("§4.2 the limit counts bytes: 4097 bytes in fewer characters", "bodyTooLarge",
               pad + "é" * ((4097 - len(pad) - 2) // 2) + "x" * ((4097 - len(pad) - 2) % 2) + '"}')
    add_redeem("§4.2 order: bodyTooLarge before anything is parsed (4097 bytes that are not JSON)", "bodyTooLarge", "x" * 4097)
    add_redeem("§4.2 a body that is not UTF-8 (a byte 0xFF in a member) is not JSON", "attestationMalformed",
               body_hex=(request(g)[:-1] + ',"x":"').encode().hex() + "ff" + '"}'.encode().hex())
    add_redeem("§4.2 a byte-order mark is refused", "attestationMalformed", body_hex="efbbbf" + request(g).encode().hex())
    add_redeem("§4.2 UTF-8 is strict (SPEC §1.3): an encoded surrogate in a member", "attestationMalformed",
               body_hex=(request(g)[:-1] + ',"x":"').encode().hex() + "eda080" + '"}'.encode().hex())
    add_redeem("§4.2 not JSON", "attestationMalformed", "challenge=%s&answer=%s" % (b64u(g), b64u(answer(g))))
    add_redeem("§4.2 an empty body", "attestationMalformed", "")
    add_redeem("§4.2 a JSON array is not an object", "attestationMalformed", '["%s","%s"]' % (b64u(g), b64u(answer(g))))
    add_redeem("§4.2 a JSON string is not an object", "attestationMalformed", json.dumps(request(g)))
    add_redeem("§4.2 JSON followed by other bytes", "attestationMalformed", request(g) + "x")
    add_redeem("§4.2 a duplicate challenge member", "attestationMalformed", request(g)[:-1] + ',"challenge":"%s"}' % b64u(g))
    add_redeem("§4.2 a duplicate answer member", "attestationMalformed", request(g)[:-1] + ',"answer":"%s"}' % b64u(answer(g)))
    add_redeem("§4.2 duplicates are compared after unescaping (answer and \\u0061nswer)", "attestationMalformed",
               request(g)[:-1] + ',"\\u0061nswer":"%s"}' % b64u(answer(g)))
    add_redeem("§4.2 a duplicate member in a nested object of an ignored member", "attestationMalformed",
               request(g, extra=',"x":{"a":1,"a":2}'))
    add_redeem("§4.2 SPEC §6.1 depth: 17 levels are refused", "attestationMalformed", request(g, extra=',"x":' + nest(15, "0")))
    add_redeem("§4.2 a lone surrogate escape in an ignored member", "attestationMalformed", request(g, extra=',"x":"\\ud800"'))
    add_redeem("§4.2 NaN is not JSON", "attestationMalformed", request(g, extra=',"x":NaN'))
    add_redeem("§4.2 the challenge member missing", "attestationMalformed", '{"answer":"%s"}' % b64u(answer(g)))
    add_redeem("§4.2 the answer member missing", "attestationMalformed", '{"challenge":"%s"}' % b64u(g))
    add_redeem("§4.2 an empty object", "attestationMalformed", "{}")
    add_redeem("§4.2 a challenge that is not a string (an array of it)", "attestationMalformed",
               '{"challenge":["%s"],"answer":"%s"}' % (b64u(g), b64u(answer(g))))
    add_redeem("§4.2 an answer that is not a string (a number)", "attestationMalformed", '{"challenge":"%s","answer":12}' % b64u(g))
    add_redeem("§4.2 an answer that is null", "attestationMalformed", '{"challenge":"%s","answer":null}' % b64u(g))
    add_redeem("§4.2 an answer that is not base64url (+ and /)", "attestationMalformed",
               request(g, base64.b64encode(answer(g)).decode().rstrip("=").replace("-", "+").replace("_", "/") + "+/"))
    add_redeem("§4.2 an answer with padding", "attestationMalformed", request(g, b64u(answer(g)) + "="))
    ga = b64u(answer(g))
    add_redeem("§4.2 an answer whose unused trailing bits are not zero (SPEC §1.2)", "attestationMalformed",
               request(g, ga[:-1] + ALPHABET[ALPHABET.index(ga[-1]) ^ 1]))
    # step 1: §2.4
    gt = b64u(g)
    add_redeem("§2.4 a challenge with padding", "attestationMalformed", request(gt + "=", answer(g)))
    add_redeem("§2.4 a challenge whose unused trailing bits are not zero", "attestationMalformed",
               request(gt[:-1] + ALPHABET[ALPHABET.index(gt[-1]) ^ 1], answer(g)))
    add_redeem("§2.4 a challenge with a character outside base64url", "attestationMalformed", request(gt[:10] + "." + gt[11:], answer(g)))
    add_redeem("§2.4 a challenge text of more than 1024 bytes", "attestationMalformed", request(gt + "A" * (1028 - len(gt)), answer(g)))
    add_redeem("§2.4 an empty challenge", "attestationMalformed", request("", answer(g)))
    add_redeem("§2.4 a challenge of 3 bytes", "attestationMalformed", request(b"\x01\x01\x06", bytes(16)))
    add_redeem("§2.4 a challenge of 135 bytes (fewer than 136)", "attestationMalformed", request(g[:135], answer(g)))
    add_redeem("§2.4 a challenge one byte short (135 + m - 1)", "attestationMalformed", request(g[:-1], answer(g)))
    add_redeem("§2.4 a challenge one byte long (135 + m + 1)", "attestationMalformed", request(g + b"\x00", answer(g)))
    for what, changes, ans in (("version 2", dict(version=2), None), ("version 0", dict(version=0), None),
                               ("type 2 (reserved)", dict(type_=2), None), ("type 0", dict(type_=0), None),
                               ("d 0", dict(d=0), None), ("d 33", dict(d=33), bytes(16)),
                               ("k 0", dict(k=0), b""), ("k 17", dict(k=17), bytes(136)),
                               ("levels 0", dict(levels=0), None), ("ttl 0", dict(ttl=0), None), ("ttl 3601", dict(ttl=3601), None),
                               ("ttl 16777217 (0x01000001: the four bytes are read)", dict(ttl=0x01000001), None),
                               ("minElapsed ttl x 1000 (300000)", dict(min_elapsed=300000), None),
                               ("minElapsed 16777216 (0x01000000: the four bytes are read)", dict(min_elapsed=0x01000000), None),
                               ("a kid of 0 bytes", dict(kid=b""), None), ("a kid of 65 bytes", dict(kid=b"k" * 65), None),
                               ("a kid with a dot", dict(kid=b"challenge.2026"), None),
                               ("a kid with a non-ASCII byte", dict(kid="challengé".encode()), None),
                               ("a kid with a space", dict(kid=b"challenge 2026"), None),
                               ("a kid whose first byte is outside the set", dict(kid=b"/hallenge-2026"), None),
                               ("a kid whose last byte is outside the set", dict(kid=b"challenge-2026/"), None)):
            ch = craft(**changes)
            add_redeem("§2.4 a challenge of %s, its tag valid" % what, "attestationMalformed",
                       request(ch, ans if ans is not None else (answer(ch) if 1 <= ch[2] <= 12 and 1 <= ch[3] <= 16 else bytes(16))))
    d32 = craft(d=32, k=16, levels=65535, ttl=3600, min_elapsed=3599999)
    add_redeem("§2.4 d 32, k 16, levels 65535, ttl 3600, minElapsed 3599999 are accepted (the zero answer is then a wrong answer)",
               "wrongAnswer", request(d32, bytes(128)), now=ISSUED + 3599999)
    # step 1: the answer's length
    h = make(k=3)
    add_redeem("§4.3 step 1: an answer one byte short (8k - 1)", "attestationMalformed", request(h, answer(h)[:-1]))
    add_redeem("§4.3 step 1: an answer one byte long (8k + 1)", "attestationMalformed", request(h, answer(h) + b"\x00"))
    add_redeem("§4.3 step 1: an answer with one counter more (8k + 8)", "attestationMalformed", request(h, answer(h) + bytes(8)))
    add_redeem("§4.3 step 1: an empty answer", "attestationMalformed", request(h, ""))
    # step 2
    i = make()
    tampered = i[:-1] + bytes([i[-1] ^ 1])
    add_redeem("§4.3 step 2: a tag with one bit flipped", "challengeForged", request(tampered, answer(tampered)))
    lv = bytearray(i)
    lv[5] = 3
    add_redeem("§4.3 step 2: the levels changed after issue (1 to 3)", "challengeForged", request(bytes(lv), answer(bytes(lv))))
    add_redeem("§1 rotation: a challenge of an oct key removed from the set", "challengeForged", request(old))
    add_redeem("§4.3 step 2: a set without an oct key names no challenge key", "challengeForged", request(make()),
               server=("tokenKey",))
    imp = craft(key="challengeKeyImpostor")
    add_redeem("§4.3 step 2: the kid of the server's key, tagged by another secret", "challengeForged", request(imp, answer(imp)))
    okp = craft(kid=b"token-2026")
    add_redeem("§4.3 step 2: a kid that names the server's OKP key (not an oct key)", "challengeForged", request(okp, answer(okp)))
    dom = craft(context=TOKEN_CONTEXT)
    add_redeem("§1 domain separation: a challenge tagged under the token's context (signcore-attestation/1)", "challengeForged",
               request(dom, answer(dom)))
    plain = bytearray(craft())
    plain[-32:] = hmac.new(keys["challengeKey"].secret, bytes(plain[:-32]), hashlib.sha256).digest()
    plain = bytes(plain)
    add_redeem("§2.2 the tag is a SPEC §10 signature: HMAC of the body alone is forged", "challengeForged", request(plain, answer(plain)))
    tok = issue_token([keys["tokenKey"]], 1, ISSUED, 3600, keys["clientEd25519"], ORIGIN, next(token_ids))
    add_redeem("§1 domain separation: a token is not a challenge", "attestationMalformed", request(tok, bytes(16)))
    # step 3
    add_redeem("§4.3 step 3: expired at issuedAt + ttl x 1000 + skew (default 5000)", "challengeExpired", request(a),
               now=ISSUED + 300000 + 5000)
    add_redeem("§4.3 step 3: skew 0, expired at issuedAt + ttl x 1000", "challengeExpired", request(a), now=ISSUED + 300000, skew=0)
    add_redeem("§4.3 step 3: skew 60000, expired at issuedAt + ttl x 1000 + 60000", "challengeExpired", request(a),
               now=ISSUED + 360000, skew=60000)
    add_redeem("§2.4, §4.3 step 3: ttl 3600 expires at issuedAt + 3600000 + 5000", "challengeExpired", request(c3600),
               now=ISSUED + 3605000)
    # step 4
    add_redeem("§4.3 step 4: 1 ms too early: retry after 1 s", "challengeTooEarly", request(b), now=ISSUED + 1999)
    add_redeem("§4.3 step 4: 1000 ms too early: retry after 1 s", "challengeTooEarly", request(b), now=ISSUED + 1000)
    add_redeem("§4.3 step 4: 1001 ms too early: retry after 2 s (rounded up)", "challengeTooEarly", request(b), now=ISSUED + 999)
    add_redeem("§4.3 step 4: at issue, 2000 ms too early: retry after 2 s", "challengeTooEarly", request(b), now=ISSUED)
    add_redeem("§4.3 step 4: no skew: a challenge issued 1 ms ahead of this node's clock (minElapsed 0) is too early by 1 ms",
               "challengeTooEarly", request(a), now=ISSUED - 1)
    add_redeem("§4.3 step 4: no skew applies, even within it: 4001 ms ahead, retry after 5 s", "challengeTooEarly", request(a),
               now=ISSUED - 4001)
    # step 5
    add_redeem("§4.3 step 5: another host", "challengeScopeMismatch", request(a), origin="https://evil.example.com")
    add_redeem("§4.3 step 5: another scheme", "challengeScopeMismatch", request(a), origin="http://api.example.com")
    add_redeem("§4.3 step 5: another port", "challengeScopeMismatch", request(a), origin="https://api.example.com:8443")
    add_redeem("§4.3 step 5: a subdomain", "challengeScopeMismatch", request(a), origin="https://www.api.example.com")
    # step 6
    add_redeem("§4.3 step 6: the request signed by another client key", "challengeKeyMismatch", request(a), client="clientOther")
    add_redeem("§4.3 step 6: the request signed by a P-256 key", "challengeKeyMismatch", request(a), client="clientP256")
    add_redeem("§4.3 step 6: the request signed by an HMAC key", "challengeKeyMismatch", request(a), client="clientHmac")
    # step 7
    j = make(d=8, k=2)
    ja = answer(j)
    assert not answer_meets(j, 8, 2, bytes(16))
    add_redeem("§4.3 step 7: an answer of zeros", "wrongAnswer", request(j, bytes(16)))
    add_redeem("§3.3 no splice: the counters swapped between the two sub-solutions", "wrongAnswer", request(j, ja[8:] + ja[:8]))
    assert not answer_meets(j, 8, 2, ja[8:] + ja[:8])
    k2 = make(d=8, k=2)
    assert not answer_meets(j, 8, 2, answer(k2))
    add_redeem("§3.3 the answer of another challenge of the same parameters", "wrongAnswer", request(j, answer(k2)))
    add_redeem("§3.4 every sub-solution is checked: the last one wrong", "wrongAnswer", request(j, ja[:8] + bytes(8)))
    firstbad = next(c for c in range(10 ** 6) if not meets_difficulty(sub_solution(pow_prefix(j), 0, c), 8))
    add_redeem("§3.4 every sub-solution is checked: the first one wrong", "wrongAnswer", request(j, firstbad.to_bytes(8, "big") + ja[8:]))
    # step 8
    add_redeem("§4.3 step 8: a challenge already redeemed (its answer valid)", "challengeRedeemed", request(a),
               redeemed=[challenge_id(a).hex()])
    # the order of adjacent steps
    n = make()
    nt = n[:-1] + bytes([n[-1] ^ 1])
    add_redeem("§4.3 order: step 1 before step 2 (an answer one byte short, a forged tag)", "attestationMalformed",
               request(nt, answer(nt)[:-1]))
    add_redeem("§4.3 order: step 2 before step 3 (a forged tag, expired)", "challengeForged", request(nt, answer(nt)), now=ISSUED + 305000)
    add_redeem("§4.3 order: step 4 before step 5 (too early, another origin)", "challengeTooEarly", request(b), now=ISSUED + 1500,
               origin="https://evil.example.com")
    add_redeem("§4.3 order: step 5 before step 6 (another origin, another client key)", "challengeScopeMismatch", request(a),
               origin="https://evil.example.com", client="clientOther")
    add_redeem("§4.3 order: step 6 before step 7 (another client key, a wrong answer)", "challengeKeyMismatch", request(j, bytes(16)),
               client="clientOther")
    add_redeem("§4.3 order: step 7 before step 8 (a wrong answer to a redeemed challenge)", "wrongAnswer", request(j, bytes(16)),
               redeemed=[challenge_id(j).hex()])
    add_redeem("§4.3 order: step 3 before step 5 (expired, another origin)", "challengeExpired", request(a), now=ISSUED + 305000,
               origin="https://evil.example.com")
    add_redeem("§4.3 order: step 3 before step 8 (expired and redeemed)", "challengeExpired", request(a), now=ISSUED + 305000,
               redeemed=[challenge_id(a).hex()])

    # ---- token cases (§5.1, §5.2, §4.4)
    def add_token(comment, want="valid", server="tokenKey", levels=1, issued=ISSUED, ttl=3600, client="clientEd25519", origin=ORIGIN,
                  now=ISSUED + 1999):
        inputs = servers(server)
        inputs.update(levels=levels, issuedAt=issued, ttl=ttl, clientKey=client, origin=origin, tokenID=next(token_ids).hex(), now=now)
        return add("token", comment, want, inputs)

    add_token("§5 a token of level 1 for an Ed25519 client key, an hour; §4.4 now in whole seconds (rounded down)")
    add_token("§5.1 two levels (3), the longest ttl (86400), a P-256 client key, an origin with a port", levels=3, ttl=86400,
              client="clientP256", origin="http://127.0.0.1:8080/attest", now=ISSUED + 86400000)
    add_token("§5.1 ttl 1, levels 65535, an HMAC client key", levels=65535, ttl=1, client="clientHmac", now=ISSUED)
    add_token("§5.1 a server key id of 64 characters (m = 64)", server="tokenKey64")
    add_token("§5.1 a server key id of 1 character (m = 1)", server="tokenKey1")
    add_token("§5.1 a server key without kid: named by its thumbprint", server="tokenKeyUnnamed")
    add_token("§1 times are u64: issuedAt above 2^56 ms", issued=2 ** 56 + 1234567, now=2 ** 56 + 1234567)
    add_token("§1 server keys: the first OKP or EC key of the set issues", server=["challengeKey", "tokenKey", "tokenKeyOld"])
    add_token("§1 server keys: the old key, alone, issues", server="tokenKeyOld")
    add_token("§1 server keys: an oct key does not sign tokens", "invalidConfiguration", server="challengeKey")
    add_token("§1 server keys: a set with no OKP or EC key cannot issue a token", "invalidConfiguration",
              server=["challengeKey", "challengeKeyOld"])
    for what, changes in (("levels 0", dict(levels=0)), ("levels 65536 (not a u16)", dict(levels=65536)), ("ttl 0", dict(ttl=0)),
                          ("ttl 86401", dict(ttl=86401))):
        add_token("§5.1 a token §5.4 would refuse is not issued: %s (a deployment's setting)" % what, "invalidConfiguration", **changes)
    add_token("§5.2, SPEC §10.3 a public key cannot sign tokens", "invalidKey", server="tokenKeyPublic")

    # ---- check cases (§5.4, §5.5)
    def mint(levels=1, issued=ISSUED, ttl=3600, client="clientEd25519", origin=ORIGIN, key="tokenKey") -> bytes:
        return issue_token([keys[key]], levels, issued, ttl, keys[client], origin, next(token_ids))

    def forge(key="tokenKey", kid=None, context=TOKEN_CONTEXT, version=1, levels=1, issued=ISSUED, ttl=3600) -> bytes:
        """A token with any header and kid, signed by `key` (so that only the field under test is wrong)."""
        kid = keys[key].kid.encode() if kid is None else kid
        body = TOKEN_HEAD.pack(version, levels, issued, ttl) + ED + origin_digest(ORIGIN) + next(token_ids) + bytes([len(kid)]) + kid
        return body + sign_message(keys[key], context, body)[1]

    CHECKERS = ("challengeKey", "tokenKey")

    def add_check(comment, want, field, server=CHECKERS, client="clientEd25519", covered=None, origin=ORIGIN, now=ISSUED + 60000, skew=None,
                  required=1):
        inputs = {"serverKeys": list(server), "field": b64u(field) if isinstance(field, bytes) else field, "clientKey": client}
        if covered is not None:
            inputs["covered"] = covered
        inputs.update(origin=origin, now=now)
        if skew is not None:
            inputs["skew"] = skew
        inputs["required"] = required
        return add("check", comment, want, inputs)

    t = mint()
    add_check("§5.5 a token checked: its levels, issuedAt, expiry and tokenID", "valid", t)
    add_check("§5.5 step 1: the wtoken covers other fields as well", "valid", t, covered=["attest-token", "content-type", "x-tenant"])
    p = mint(key="tokenKeyP256", levels=3)
    add_check("§5.2 an ES256 token (P-256 server key)", "valid", p, server=("challengeKey", "tokenKey", "tokenKeyP256"))
    ps = int.from_bytes(p[-32:], "big")
    add_check("§5.2, SPEC §10.2 an ES256 token with n - s verifies too", "valid", p[:-32] + (P256_N - ps).to_bytes(32, "big"),
              server=("tokenKeyP256",))
    add_check("§5.2, SPEC §10.2 an ES256 token with s = n", "attestationInvalid", p[:-32] + P256_N.to_bytes(32, "big"),
              server=("tokenKeyP256",))
    add_check("§5.5 step 3: an ES256 token at a server whose set lacks its key", "attestationInvalid", p)
    told = mint(key="tokenKeyOld")
    add_check("§1 rotation: a token of the old key, still in the set after the new one", "valid", told,
              server=("challengeKey", "tokenKey", "tokenKeyOld"))
    add_check("§1 rotation: a token of a key removed from the set", "attestationInvalid", told)
    t3 = mint(levels=3)
    add_check("§1 levels: a token of levels 3 meets a requirement of 1", "valid", t3, required=1)
    add_check("§1 levels: a token of levels 3 meets a requirement of 2", "valid", t3, required=2)
    add_check("§1 levels: a token of levels 3 meets a requirement of 3 (every level)", "valid", t3, required=3)
    add_check("§5.5 step 7: levels 3 do not meet a requirement of 4", "attestationInsufficient", t3, required=4)
    add_check("§5.5 step 7: levels 3 do not meet a requirement of 5 (one of its two levels is missing)", "attestationInsufficient", t3,
              required=5)
    add_check("§5.5 step 7: levels 1 do not meet a requirement of 3", "attestationInsufficient", t, required=3)
    tmax = mint(levels=65535, ttl=86400)
    add_check("§5.4 levels 65535 and ttl 86400 are accepted; they meet a requirement of 32768", "valid", tmax, required=32768)
    add_check("§5.4 ttl 1: valid until issuedAt + 1000 + skew", "valid", mint(ttl=1), now=ISSUED + 5999)
    add_check("§5.4 a server key id of 64 characters (m = 64)", "valid", mint(key="tokenKey64"), server=("tokenKey64",))
    add_check("§5.4 a server key id of 1 character (m = 1)", "valid", mint(key="tokenKey1"), server=("tokenKey", "tokenKey1"))
    add_check("§5.2 a server key named by its thumbprint", "valid", mint(key="tokenKeyUnnamed"), server=("tokenKeyUnnamed",))
    add_check("§1 the client's key with a kid has the same thumbprint; the origin in another spelling", "valid", t,
              client="clientEd25519Named", origin="https://API.example.com:443/v1/orders?id=42")
    add_check("§1 an HMAC client key (an app's key)", "valid", mint(client="clientHmac"), client="clientHmac")
    add_check("§1 a P-256 client key, on an origin with a port", "valid", mint(client="clientP256", origin="http://127.0.0.1:8080"),
              client="clientP256", origin="http://127.0.0.1:8080/v1/x")
    add_check("§1 times are u64: a token issued at 2^56 + 1234567 ms", "valid", mint(issued=2 ** 56 + 1234567),
              now=2 ** 56 + 1234567)
    early = mint(issued=1000, ttl=60)
    add_check("§5.5 step 4: issuedAt below the skew (1000 ms after 1970; no underflow), now 0", "valid", early, now=0)
    # step 4 boundaries
    add_check("§5.5 step 4: now = issuedAt - skew is accepted (default skew 5000)", "valid", t, now=ISSUED - 5000)
    add_check("§5.5 step 4: now = issuedAt - skew - 1 is expired", "attestationExpired", t, now=ISSUED - 5001)
    add_check("§5.5 step 4: the last millisecond before issuedAt + ttl x 1000 + skew", "valid", t, now=ISSUED + 3600000 + 4999)
    add_check("§5.5 step 4: expired at issuedAt + ttl x 1000 + skew", "attestationExpired", t, now=ISSUED + 3605000)
    add_check("§5.5 step 4: skew 0, now = issuedAt is accepted", "valid", t, now=ISSUED, skew=0)
    add_check("§5.5 step 4: skew 0, now = issuedAt - 1 is expired", "attestationExpired", t, now=ISSUED - 1, skew=0)
    add_check("§5.5 step 4: skew 0, the last millisecond before issuedAt + ttl x 1000", "valid", t, now=ISSUED + 3599999, skew=0)
    add_check("§5.5 step 4: skew 0, expired at issuedAt + ttl x 1000", "attestationExpired", t, now=ISSUED + 3600000, skew=0)
    add_check("§5.5 step 4: skew 60000, now = issuedAt - 60000 is accepted", "valid", t, now=ISSUED - 60000, skew=60000)
    add_check("§5.5 step 4: skew 60000, expired at issuedAt + ttl x 1000 + 60000", "attestationExpired", t, now=ISSUED + 3660000,
              skew=60000)
    add_check("§5.5 step 4: expired: a ttl of 86400 s, a day and the skew later", "attestationExpired", tmax,
              now=ISSUED + 86400000 + 5000)
    # step 1
    add_check("§5.5 step 1: a wtoken that covers no field", "headerNotCovered", t, covered=[])
    add_check("§5.5 step 1: a wtoken that covers other fields only", "headerNotCovered", t, covered=["attest-tokens", "content-type"])
    # step 2: §5.4
    tt = b64u(t)
    add_check("§5.4 an empty field", "attestationMalformed", "")
    add_check("§5.4 a field with padding", "attestationMalformed", tt + "=")
    assert len(tt) % 4 == 3  # the last character carries 2 unused bits
    add_check("§5.4 a field whose unused trailing bits are not zero", "attestationMalformed", tt[:-1] + ALPHABET[ALPHABET.index(tt[-1]) ^ 1])
    add_check("§5.4 a field with a character outside base64url", "attestationMalformed", tt[:20] + "+" + tt[21:])
    add_check("§5.4 a field of more than 1024 bytes", "attestationMalformed", tt + "A" * (1028 - len(tt)))
    add_check("§5.4 a token of 3 bytes", "attestationMalformed", b"\x01\x00\x01")
    add_check("§5.4 a token of 160 bytes (fewer than 161)", "attestationMalformed", t[:160])
    add_check("§5.4 a token one byte short (160 + m - 1)", "attestationMalformed", t[:-1])
    add_check("§5.4 a token one byte long (160 + m + 1)", "attestationMalformed", t + b"\x00")
    for what, changes in (("version 2", dict(version=2)), ("version 0", dict(version=0)), ("levels 0", dict(levels=0)),
                          ("ttl 0", dict(ttl=0)), ("ttl 86401", dict(ttl=86401)),
                          ("ttl 16777217 (0x01000001: the four bytes are read)", dict(ttl=0x01000001)),
                          ("a kid of 0 bytes", dict(kid=b"")), ("a kid of 65 bytes", dict(kid=b"t" * 65)),
                          ("a kid with a dot", dict(kid=b"token.2026")), ("a kid with a non-ASCII byte", dict(kid="tokén".encode())),
                          ("a kid with a space", dict(kid=b"token 2026")), ("a kid whose first byte is outside the set", dict(kid=b"/oken-2026")),
                          ("a kid whose last byte is outside the set", dict(kid=b"token-2026/"))):
        add_check("§5.4 a token of %s, its signature valid" % what, "attestationMalformed", forge(**changes))
    # step 3
    add_check("§5.5 step 3: a signature with one bit flipped", "attestationInvalid", t[:-1] + bytes([t[-1] ^ 1]))
    up = bytearray(t)
    up[2] = 3
    add_check("§5.5 step 3: the levels raised after issue (1 to 3)", "attestationInvalid", bytes(up))
    add_check("§5.5 step 3: the kid of the server's key, signed by another key", "attestationInvalid", forge(key="tokenKeyImpostor"))
    add_check("§5.5 step 3: a kid that names the server's oct key", "attestationInvalid", forge(kid=b"challenge-2026"))
    add_check("§1 domain separation: a token signed under the challenge's context (signcore-challenge/1)", "attestationInvalid",
              forge(context=CHALLENGE_CONTEXT))
    s_ed = int.from_bytes(t[-32:], "little")
    add_check("§5.2, SPEC §10.2 an EdDSA signature with S + L", "attestationInvalid", t[:-32] + (s_ed + ED_L).to_bytes(32, "little"))
    add_check("§1 domain separation: a challenge is not a token", "attestationMalformed", a)
    # steps 5, 6
    add_check("§5.5 step 5: another host", "attestationScopeMismatch", t, origin="https://evil.example.com")
    add_check("§5.5 step 5: another port", "attestationScopeMismatch", t, origin="https://api.example.com:444")
    add_check("§5.5 step 6: the token beside another client key's signature", "attestationKeyMismatch", t, client="clientOther")
    add_check("§5.5 step 6: the token beside a P-256 key's signature", "attestationKeyMismatch", t, client="clientP256")
    # the order of adjacent steps
    bad = forge(levels=0)
    add_check("§5.5 order: step 1 before step 2 (not covered, malformed)", "headerNotCovered", "", covered=["content-type"])
    add_check("§5.5 order: step 2 before step 3 (levels 0 and a broken signature)", "attestationMalformed",
              bad[:-1] + bytes([bad[-1] ^ 1]))
    add_check("§5.5 order: step 3 before step 4 (a broken signature, expired)", "attestationInvalid", t[:-1] + bytes([t[-1] ^ 1]),
              now=ISSUED + 3605000)
    add_check("§5.5 order: step 4 before step 5 (expired, another origin)", "attestationExpired", t, now=ISSUED + 3605000,
              origin="https://evil.example.com")
    add_check("§5.5 order: step 5 before step 6 (another origin, another client key)", "attestationScopeMismatch", t,
              origin="https://evil.example.com", client="clientOther")
    add_check("§5.5 order: step 6 before step 7 (another client key, levels not met)", "attestationKeyMismatch", t, client="clientOther",
              required=2)
    add_check("§5.5 order: step 1 before step 3 (not covered, forged)", "headerNotCovered", forge(key="tokenKeyImpostor"), covered=[])

    number = 0
    for name in ATTEST_SECTIONS:
        for case in sections[name]:
            number += 1
            case["tcId"] = number
    return dict({"spec": "SignCore/3 attestation 1", "algorithm": "attest",
                 "header": "docs/ATTEST.md §8. keys: JWKs by name (server keys, private; clients' keys). challenge: issue -> every "
                           "value, and the smallest counters when solve is true; serverKeys (the set, in order) in place of serverKey "
                           "where the selection of §1 is pinned. redeem: an attest request -> the challenge id recorded and the levels, "
                           "or the error (retryAfter in seconds for challengeTooEarly); skew absent: 5000; redeemed: the ids the store "
                           "holds. token: issue -> body, token, attest response. check: a token field -> levels, issuedAt, expires, "
                           "tokenID, or the error; covered absent: [\"attest-token\"]. origin: the request's URL, whose origin (§1) is "
                           "taken. Times in milliseconds",
                 "numberOfTests": number, "keys": ATTEST_KEYS}, **sections)



# ---------------------------------------------------------------- docs/ATTEST.md §9: device keys
DEVICE_FORMATS = ("signcore", "apple-app-attest", "android-play-integrity")  # ATTEST §9.1
SIGNING_FORMATS = ("signcore", "android-play-integrity")  # ATTEST §9.6: formats whose keys sign requests
PLATFORM_FORMATS = ("apple-app-attest", "android-play-integrity")  # ATTEST §9.4: platform formats
MAX_REGISTRATION_BODY = 16384  # ATTEST §9.4
MAX_REGISTRATION_TEXT = 256  # ATTEST §9.4: each string member but token
COUNTER_WINDOW = 128  # ATTEST §9.5: W
MAX_COUNTER = (1 << 63) - 1  # ATTEST §9.5
UNBOUND = bytes(32)  # ATTEST §9.3


def decode_base64(text: str) -> bytes:
    """ATTEST §9.3, §9.4: base64 in either alphabet (RFC 4648 §4 or §5), padded or not; else ValueError."""
    body = text
    if len(body) % 4 == 0 and body.endswith("="):
        body = body[:-2] if body.endswith("==") else body[:-1]
    return unb64u(body.replace("+", "-").replace("/", "_"))


def parse_registration(body: bytes) -> dict:
    """ATTEST §9.4 step 1: at most 16384 bytes (bodyTooLarge); JSON under SPEC §6.1's document
    rules, an object; string members of 1-256 bytes format (a format of §9.1, else
    formatNotAccepted), platform (optional), keyId, challenge (type 2), appId (required for
    signcore); jwk (signing formats: a public Ed25519 or P-256 JWK); token (apple-app-attest:
    base64 of at least one byte; android-play-integrity: text of at least one character).
    Anything else is registrationMalformed."""
    if len(body) > MAX_REGISTRATION_BODY:
        raise SpecError("bodyTooLarge")
    try:
        doc = load_document(body.decode("utf-8"))
    except (UnicodeDecodeError, SpecError):
        raise SpecError("registrationMalformed")

    def text(name, required=True):
        value = doc.get(name)
        if value is None:
            if required:
                raise SpecError("registrationMalformed")
            return None
        if not isinstance(value, str) or not 1 <= len(value.encode("utf-8", "surrogatepass")) <= MAX_REGISTRATION_TEXT:
            raise SpecError("registrationMalformed")
        return value

    fmt = text("format")
    if fmt not in DEVICE_FORMATS:
        raise SpecError("formatNotAccepted")
    text("platform", required=False)
    key_id = text("keyId")
    try:
        challenge = parse_challenge(doc["challenge"]) if isinstance(doc.get("challenge"), str) else None
    except SpecError:
        challenge = None
    if challenge is None or challenge["type"] != 2:
        raise SpecError("registrationMalformed")
    app_id = text("appId", required=fmt == "signcore")
    key = None
    if fmt in SIGNING_FORMATS:
        try:
            key = Key(doc.get("jwk"))
        except SpecError:
            raise SpecError("registrationMalformed")
        if key.alg == "HS256" or key.private is not None:
            raise SpecError("registrationMalformed")
    token = None
    if fmt == "apple-app-attest":  # the attestation object, base64
        try:
            token = decode_base64(doc["token"]) if isinstance(doc.get("token"), str) else None
        except ValueError:
            token = None
        if not token:
            raise SpecError("registrationMalformed")
    elif fmt == "android-play-integrity":  # the integrity token's text
        token = doc.get("token")
        if not isinstance(token, str) or not token:
            raise SpecError("registrationMalformed")
    return dict(format=fmt, keyId=key_id, challenge=challenge, appId=app_id, key=key, token=token)


def register(body: bytes, signed_by, origin: str, keys, now, skew, formats, app_ids, redeemed, revoked) -> dict:
    """ATTEST §9.4, in order, the first failure being the result. `signed_by`: the key the request
    verified under (None when unsigned); `redeemed`: challenge ids (hex) the store holds; `revoked`:
    key ids the registry holds revoked. The result: the record's key id, format and app id, its
    public key's members, and the challenge id recorded."""
    r = parse_registration(body)  # step 1
    if r["format"] not in formats:  # step 2
        raise SpecError("formatNotAccepted")
    c = r["challenge"]
    key = named_key(keys, c["kid"], CHALLENGE_KEY_ALGS)  # step 3
    if key is None or not signature_verifies(key, CHALLENGE_CONTEXT, c["body"], c["tag"]):
        raise SpecError("challengeForged")
    if not now < c["issuedAt"] + c["ttl"] * 1000 + skew:  # step 4
        raise SpecError("registrationExpired")
    if c["origin"] != origin_digest(origin):  # step 5
        raise SpecError("challengeScopeMismatch")
    if r["format"] != "signcore":  # a platform format's token is verified by §9.7-§9.8, not by this version
        raise SpecError("formatNotAccepted")
    thumbprint = key_thumbprint(r["key"])
    if r["keyId"] != b64u(thumbprint) or r["key"].kid != r["keyId"]:  # step 6
        raise SpecError("deviceKeyMismatch")
    if signed_by is None or key_thumbprint(signed_by) != thumbprint:  # step 7
        raise SpecError("deviceKeyMismatch")
    if c["key"] != UNBOUND and c["key"] != thumbprint:  # step 8
        raise SpecError("challengeKeyMismatch")
    if r["appId"] not in app_ids:  # step 9
        raise SpecError("appMismatch")
    if r["keyId"] in revoked:  # step 10
        raise SpecError("deviceRevoked")
    if challenge_id(c["bytes"]).hex() in redeemed:  # step 11
        raise SpecError("challengeRedeemed")
    public = {n: r["key"].jwk[n] for n in ("crv", "kty", "x", "y") if n in r["key"].jwk}
    return dict(keyId=r["keyId"], id=challenge_id(c["bytes"]).hex(), format=r["format"], appId=r["appId"], publicKey=public)


def observe_counter(highest, window, n):
    """ATTEST §9.5: (verdict, highest, window) after counter n; window a 128-bit integer, bit i
    for counter highest - i."""
    if n == 0:
        return ("accepted" if highest == 0 else "counterMissing"), highest, window
    if n > highest:
        return "accepted", n, ((window << (n - highest)) | 1) & ((1 << COUNTER_WINDOW) - 1)
    behind = highest - n
    if behind >= COUNTER_WINDOW:
        return "counterTooOld", highest, window
    if window >> behind & 1:
        return "counterRepeated", highest, window
    return "accepted", highest, window | 1 << behind


def counter_field(value: str) -> int:
    """ATTEST §9.5: 0, or 1-19 decimal digits without a leading zero, at most 2^63 - 1; else invalidHeader."""
    if (not 1 <= len(value) <= 19 or any(c not in "0123456789" for c in value) or (len(value) > 1 and value[0] == "0")
            or int(value) > MAX_COUNTER):
        raise SpecError("invalidHeader")
    return int(value)


def device_challenge_case(keys: dict, tc: dict) -> dict:
    def run():
        ch = issue_bound_challenge([keys[tc["serverKey"]]], tc["type"], 0, 0, tc["levels"], tc["issuedAt"], tc["ttl"], 0,
                                   bytes.fromhex(tc["bound"]) if "bound" in tc else UNBOUND, tc["origin"], bytes.fromhex(tc["random"]))
        return dict(body=ch[:-32].hex(), challenge=b64u(ch), id=challenge_id(ch).hex())
    return attest_outcome(run)


def device_register_case(keys: dict, tc: dict) -> dict:
    body = bytes.fromhex(tc["bodyHex"]) if "bodyHex" in tc else tc["body"].encode()
    signer = keys[tc["signedBy"]] if "signedBy" in tc else None
    return attest_outcome(lambda: register(body, signer, tc["origin"], [keys[n] for n in tc["serverKeys"]], tc["now"],
                                           tc.get("skew", ATTEST_SKEW), tc["formats"], tc["appIds"], set(tc.get("redeemed", [])),
                                           set(tc.get("revoked", []))))


def device_counter_case(keys: dict, tc: dict) -> dict:
    highest, window, verdicts = tc["highest"], int(tc["window"], 16), []
    for n in tc["counters"]:
        verdict, highest, window = observe_counter(highest, window, n)
        verdicts.append(verdict)
    return {"result": "valid", "expected": dict(verdicts=verdicts, highest=highest, window="%032x" % window)}


def device_field_case(keys: dict, tc: dict) -> dict:
    return attest_outcome(lambda: dict(counter=counter_field(tc["value"])))


def device_redeem_case(keys: dict, tc: dict) -> dict:
    devices = {keys[n].thumbprint: record for n, record in tc.get("devices", {}).items()}
    return attest_outcome(lambda: redeem(tc["body"].encode(), keys[tc["clientKey"]], tc["origin"], [keys[n] for n in tc["serverKeys"]],
                                         tc["now"], tc.get("skew", ATTEST_SKEW), set(tc.get("redeemed", [])), devices,
                                         tc.get("platformLevels", 0), tc.get("formats")))


DEVICE_SECTIONS = {"challenge": device_challenge_case, "register": device_register_case, "counter": device_counter_case,
                   "field": device_field_case, "redeem": device_redeem_case}


DEVICE_KEYS = dict(ATTEST_KEYS, **{
    "deviceEd25519": jwk_for("OKP", seed("device Ed25519"), private=False),
    "deviceP256": jwk_for("EC", seed("device P-256"), private=False),
    "deviceNamed": jwk_for("OKP", seed("device Ed25519"), kid="my-phone", private=False),
    "deviceThumbprintKid": dict(jwk_for("OKP", seed("device Ed25519"), private=False),
                                kid=Key(jwk_for("OKP", seed("device Ed25519"), private=False)).thumbprint),
    "devicePrivate": jwk_for("OKP", seed("device Ed25519 private")),
    "deviceOther": jwk_for("EC", seed("another device P-256"), private=False),
})
APP = "com.example.app"


def generate_device():
    keys = {n: Key(j) for n, j in DEVICE_KEYS.items()}
    sections = {name: [] for name in DEVICE_SECTIONS}
    randoms = iter(seed("device random %d" % i)[:16] for i in range(400))
    SERVER = ("challengeKey", "tokenKey")
    NOW = ISSUED + 10000

    def add(section, comment, want, inputs):
        case = dict({"tcId": 0, "comment": comment}, **inputs)
        case.update(DEVICE_SECTIONS[section](keys, case))
        got = case["error"] if case["result"] == "invalid" else "valid"
        assert got == want, (section, comment, got, want)
        sections[section].append(case)
        return case

    # ---- challenge cases (§9.3, §9.6): types 2 and 3, bound and unbound
    def add_challenge(comment, want="valid", type_=2, levels=0, ttl=300, bound=None, server="challengeKey", origin=ORIGIN):
        inputs = dict(serverKey=server, type=type_, levels=levels, issuedAt=ISSUED, ttl=ttl, origin=origin, random=next(randoms).hex())
        if bound is not None:
            inputs["bound"] = bound.hex()
        return add("challenge", comment, want, inputs)

    add_challenge("§9.3 a registration challenge, unbound (32 zero bytes)")
    add_challenge("§9.3 a registration challenge bound to a SignCore key's thumbprint", bound=key_thumbprint(keys["deviceEd25519"]))
    add_challenge("§9.3 a registration challenge bound to an App Attest key id", bound=seed("app attest key id"), ttl=3600)
    add_challenge("§9.6 a device challenge for level 14", type_=3, levels=1 << 14, bound=key_thumbprint(keys["deviceP256"]), ttl=120)
    add_challenge("§2.4 a registration challenge grants no level", "invalidConfiguration", levels=1)
    add_challenge("§2.4 a device challenge grants levels", "invalidConfiguration", type_=3, levels=0)
    add_challenge("§9.6 a payload (type 4) bound to an App Attest key id", type_=4, bound=seed("app attest key id"))
    add_challenge("§2.4 a payload grants no level", "invalidConfiguration", type_=4, levels=1)
    add_challenge("§2.4 type 5 is reserved", "invalidConfiguration", type_=5, levels=0)
    add_challenge("§2.4 a registration challenge's ttl is at most 3600 s", "invalidConfiguration", ttl=3601)
    add_challenge("§1 a set without an oct key issues no challenge", "invalidConfiguration", server="tokenKey")
    add_challenge("§2.4 a registration challenge's ttl is at least 1 s", "invalidConfiguration", ttl=0)
    add_challenge("§2.4 a device challenge may grant every level", type_=3, levels=0xFFFF, bound=key_thumbprint(keys["deviceP256"]))

    # ---- register cases (§9.4)
    def challenge(bound=None, issued=ISSUED, ttl=300, origin=ORIGIN, server="challengeKey", type_=2, levels=0):
        return b64u(issue_bound_challenge([keys[server]], type_, 0, 0, levels, issued, ttl, 0, UNBOUND if bound is None else bound,
                                          origin, next(randoms)))

    def craft(type_=2, d=0, k=0, levels=0, key_field=UNBOUND) -> str:
        """A challenge with any type, d, k and levels, tagged by the server's key (only those fields wrong)."""
        kid = keys["challengeKey"].kid.encode()
        body = challenge_body(type_, d, k, levels, ISSUED, 300, 0, key_field, origin_digest(ORIGIN), next(randoms), kid)
        return b64u(body + sign_message(keys["challengeKey"], CHALLENGE_CONTEXT, body)[1])

    def jwk_text(name):
        return json.dumps(DEVICE_KEYS[name], separators=(",", ":"))

    def body(key="deviceEd25519", ch=None, key_id=None, app=APP, fmt="signcore", jwk=None, extra=""):
        key_id = keys[key].thumbprint if key_id is None else key_id
        ch = challenge() if ch is None else ch
        jwk = jwk_text(key) if jwk is None else jwk
        return '{"platform":"ios","format":"%s","keyId":"%s","jwk":%s,"challenge":"%s","appId":"%s"%s}' % (fmt, key_id, jwk, ch, app, extra)

    def add_register(comment, want, text=None, body_hex=None, signed_by="deviceEd25519", now=NOW, skew=None, formats=("signcore",),
                     apps=(APP, "com.example.other"), redeemed=None, revoked=None):
        inputs = {"serverKeys": list(SERVER)}
        if body_hex is not None:
            inputs["bodyHex"] = body_hex
        else:
            inputs["body"] = text
        if signed_by is not None:
            inputs["signedBy"] = signed_by
        inputs.update(origin=ORIGIN, now=now, formats=list(formats), appIds=list(apps))
        if skew is not None:
            inputs["skew"] = skew
        if redeemed is not None:
            inputs["redeemed"] = redeemed
        if revoked is not None:
            inputs["revoked"] = revoked
        return add("register", comment, want, inputs)

    ED, P = keys["deviceEd25519"], keys["deviceP256"]
    add_register("§9.4 a signcore registration, unbound challenge, Ed25519", "valid", body())
    add_register("§9.4 a signcore registration, challenge bound to the key, P-256; the second app id", "valid",
                 body("deviceP256", challenge(key_thumbprint(P)), app="com.example.other"), signed_by="deviceP256")
    add_register("§9.4 step 6: a JWK whose kid is its thumbprint", "valid", body("deviceThumbprintKid"))
    add_register("§9.4 other members are ignored, platform too", "valid", body(extra=',"note":{"a":[1,2]},"token":"x"'))
    add_register("§9.4 step 4: the last millisecond before issuedAt + ttl x 1000 + skew", "valid", body(), now=ISSUED + 300000 + 4999)
    add_register("§9.4 step 4: skew 0, the last millisecond", "valid", body(), now=ISSUED + 299999, skew=0)
    add_register("§9.4 step 4: issuedAt + ttl x 1000 + skew is expired", "registrationExpired", body(), now=ISSUED + 305000)
    add_register("§9.4 step 4: skew 0, issuedAt + ttl x 1000 is expired", "registrationExpired", body(), now=ISSUED + 300000, skew=0)
    # step 1
    add_register("§9.4 step 1: over 16384 bytes", "bodyTooLarge", body(extra=',"pad":"%s"' % ("x" * 16384)))
    add_register("§9.4 step 1: exactly 16384 bytes", "valid",
                 (lambda b: b[:-1] + ',"pad":"%s"}' % ("x" * (16384 - len(b) - 9)))(body()))
    add_register("§9.4 step 1: not JSON", "registrationMalformed", "{format:signcore}")
    add_register("§9.4 step 1: not an object", "registrationMalformed", "[]")
    add_register("§9.4 step 1: not UTF-8", "registrationMalformed", body_hex=("{\"format\":\"sign\xffcore\"}").encode("latin-1").hex())
    add_register("§9.4 step 1: a duplicate member", "registrationMalformed", body()[:-1] + ',"format":"signcore"}')
    add_register("§9.4 step 1: no format", "registrationMalformed", body().replace('"format":"signcore",', ''))
    add_register("§9.4 step 1: format not a string", "registrationMalformed", body().replace('"format":"signcore"', '"format":1'))
    add_register("§9.4 step 1: a format of no version", "formatNotAccepted", body(fmt="webauthn"))
    add_register("§9.4 step 1: format is compared as bytes", "formatNotAccepted", body(fmt="SignCore"))
    add_register("§9.4 step 1: platform not a string", "registrationMalformed", body().replace('"platform":"ios"', '"platform":7'))
    add_register("§9.4 step 1: platform empty", "registrationMalformed", body().replace('"platform":"ios"', '"platform":""'))
    add_register("§9.4 step 1: no keyId", "registrationMalformed", body().replace('"keyId":"%s",' % ED.thumbprint, ''))
    add_register("§9.4 step 1: keyId of 257 bytes", "registrationMalformed", body(key_id="k" * 257))
    add_register("§9.4 step 1: keyId of 256 bytes (then not the thumbprint)", "deviceKeyMismatch", body(key_id="k" * 256))
    add_register("§9.4 step 1: no challenge", "registrationMalformed", body(ch="").replace('"challenge":"",', ''))
    add_register("§9.4 step 1: a challenge that does not parse", "registrationMalformed", body(ch="AQI"))
    add_register("§9.4 step 1: a proof-of-work challenge", "registrationMalformed",
                 body(ch=b64u(issue_challenge([keys["challengeKey"]], 1, 4, 1, 1, ISSUED, 300, 0, ED, ORIGIN, next(randoms)))))
    add_register("§9.4 step 1: a device challenge", "registrationMalformed", body(ch=challenge(key_thumbprint(ED), type_=3, levels=1)))
    add_register("§2.4 a registration challenge has d = 0", "registrationMalformed", body(ch=craft(d=1)))
    add_register("§2.4 a registration challenge has k = 0", "registrationMalformed", body(ch=craft(k=1)))
    add_register("§2.4 a registration challenge grants no level", "registrationMalformed", body(ch=craft(levels=1)))
    add_register("§2.4 a registration challenge crafted with d = k = 0 and no level parses", "valid", body(ch=craft()))
    add_register("§9.4 step 1: 16385 bytes", "bodyTooLarge", (lambda b: b[:-1] + ',"pad":"%s"}' % ("x" * (16385 - len(b) - 9)))(body()))
    add_register("§9.4 step 1: platform is optional", "valid", body().replace('"platform":"ios",', ''))
    add_register("§9.4 step 1: a member of 1 byte", "valid", body().replace('"platform":"ios"', '"platform":"i"'))
    add_register("§9.4 step 1: a member of 256 bytes", "valid", body(app="a" * 256), apps=(APP, "a" * 256))
    add_register("§9.4 step 1: appId is optional for a platform format", "formatNotAccepted",
                 body(fmt="apple-app-attest", extra=',"token":"AAEC"').replace(',"appId":"%s"' % APP, ''), formats=DEVICE_FORMATS)
    for token, want, comment in [("AA==", "formatNotAccepted", "padded with two"), ("AAA=", "formatNotAccepted", "padded with one"),
                                 ("AABA", "formatNotAccepted", "four characters, no padding"), ("AA", "formatNotAccepted", "unpadded"),
                                 ("AA=", "registrationMalformed", "padding in a length that is not a multiple of 4"),
                                 ("AB==", "registrationMalformed", "non-zero bits past the last byte"),
                                 ("", "registrationMalformed", "empty"), ("====", "registrationMalformed", "padding alone")]:
        add_register("§9.4 step 1: a token " + comment, want, body(fmt="apple-app-attest", extra=',"token":"%s"' % token), formats=DEVICE_FORMATS)
    add_register("§9.4 step 1 before step 3: a format of no version is refused even when configured", "formatNotAccepted",
                 body(fmt="webauthn", ch=challenge(server="challengeKeyImpostor")), formats=("webauthn",))
    add_register("§9.4 step 5 before the platform token's check", "challengeScopeMismatch",
                 body(fmt="apple-app-attest", ch=challenge(origin="https://other.example"), extra=',"token":"AAEC"'), formats=DEVICE_FORMATS)
    add_register("§9.4 step 6: keyId the JWK's kid, not its thumbprint", "deviceKeyMismatch", body("deviceNamed", key_id="my-phone"),
                 signed_by="deviceNamed")
    add_register("§9.4 step 1: no appId for signcore", "registrationMalformed", body().replace(',"appId":"%s"' % APP, ''))
    add_register("§9.4 step 1: appId of 257 bytes", "registrationMalformed", body(app="a" * 257))
    add_register("§9.4 step 1: no jwk", "registrationMalformed", body(jwk='null'))
    add_register("§9.4 step 1: jwk a string", "registrationMalformed", body(jwk=json.dumps(jwk_text("deviceEd25519"))))
    add_register("§9.4 step 1: jwk with a private member", "registrationMalformed", body("devicePrivate"), signed_by="devicePrivate")
    add_register("§9.4 step 1: jwk an oct key", "registrationMalformed", body("clientHmac"), signed_by="clientHmac")
    add_register("§9.4 step 1: jwk not a key (x of 31 bytes)", "registrationMalformed",
                 body(jwk='{"kty":"OKP","crv":"Ed25519","x":"%s"}' % b64u(bytes(31))))
    add_register("§9.4 step 1: a platform format without token", "registrationMalformed", body(fmt="apple-app-attest"),
                 formats=DEVICE_FORMATS)
    add_register("§9.4 step 1: a token that is not base64", "registrationMalformed",
                 body(fmt="apple-app-attest", extra=',"token":"a*b"').replace(',"token":"x"', ''), formats=DEVICE_FORMATS)
    add_register("§9.4 step 1: android-play-integrity's token is text, not base64", "formatNotAccepted",
                 body(fmt="android-play-integrity", extra=',"token":"eyJ.a.b.c.d"'), formats=("signcore",))
    add_register("§9.4 step 1: android-play-integrity's token is a string", "registrationMalformed",
                 body(fmt="android-play-integrity", extra=',"token":5'), formats=("signcore",))
    add_register("§9.4 step 1: android-play-integrity's token is not empty", "registrationMalformed",
                 body(fmt="android-play-integrity", extra=',"token":""'), formats=("signcore",))
    add_register("§9.4 step 1: android-play-integrity brings a jwk too", "registrationMalformed",
                 body(fmt="android-play-integrity", jwk='{"kty":"EC"}', extra=',"token":"AAEC+/8="'), formats=("signcore",))
    add_register("§9.4 step 1: apple-app-attest's jwk is not read; its token is (either alphabet, padded)", "formatNotAccepted",
                 body(fmt="apple-app-attest", jwk='{"kty":"EC"}', extra=',"token":"AAEC+/8="'), formats=("signcore",))
    # steps 2-12
    add_register("§9.4 step 2: a format the deployment does not accept", "formatNotAccepted",
                 body(fmt="apple-app-attest", extra=',"token":"AAEC"'), formats=("signcore",))
    add_register("§9.4 step 2 before step 3 (not accepted, forged)", "formatNotAccepted",
                 body(ch=challenge(server="challengeKeyImpostor")), formats=("android-play-integrity",))
    add_register("§9.4 a platform format's token is not verified by this version", "formatNotAccepted",
                 body(fmt="apple-app-attest", extra=',"token":"AAEC"'), formats=DEVICE_FORMATS)
    add_register("§9.4 step 3: a tag by another key of the same kid", "challengeForged", body(ch=challenge(server="challengeKeyImpostor")))
    add_register("§9.4 step 3: a kid the set does not hold", "challengeForged", body(ch=challenge(server="challengeKey1")))
    add_register("§9.4 step 3 before step 4 (forged, expired)", "challengeForged", body(ch=challenge(server="challengeKeyImpostor")),
                 now=ISSUED + 900000)
    add_register("§9.4 step 4 before step 5 (expired, another origin)", "registrationExpired",
                 body(ch=challenge(origin="https://other.example")), now=ISSUED + 900000)
    add_register("§9.4 step 5: a challenge issued at another origin", "challengeScopeMismatch", body(ch=challenge(origin="https://other.example")))
    add_register("§9.4 step 5 before step 6 (another origin, keyId wrong)", "challengeScopeMismatch",
                 body(ch=challenge(origin="http://api.example.com"), key_id=P.thumbprint))
    add_register("§9.4 step 6: keyId another key's thumbprint", "deviceKeyMismatch", body(key_id=P.thumbprint))
    add_register("§9.4 step 6: keyId the thumbprint in standard base64", "deviceKeyMismatch",
                 body(key_id=base64.b64encode(key_thumbprint(ED)).decode()))
    add_register("§9.4 step 6: a JWK kid that is not its thumbprint", "deviceKeyMismatch", body("deviceNamed", key_id=ED.thumbprint),
                 signed_by="deviceNamed")
    add_register("§9.4 step 7: signed by another key", "deviceKeyMismatch", body(), signed_by="deviceP256")
    add_register("§9.4 step 7: not signed", "deviceKeyMismatch", body(), signed_by=None)
    add_register("§9.4 step 6 before step 7", "deviceKeyMismatch", body(key_id=P.thumbprint), signed_by="deviceP256")
    add_register("§9.4 step 8: a challenge bound to another key", "challengeKeyMismatch", body(ch=challenge(key_thumbprint(P))))
    add_register("§9.4 step 7 before step 8", "deviceKeyMismatch", body(ch=challenge(key_thumbprint(P))), signed_by="deviceOther")
    add_register("§9.4 step 8 before step 9 (bound elsewhere, unknown app)", "challengeKeyMismatch",
                 body(ch=challenge(key_thumbprint(P)), app="com.example.nope"))
    add_register("§9.4 step 9: an app id the deployment does not serve", "appMismatch", body(app="com.example.nope"))
    add_register("§9.4 step 9: app ids are compared as bytes", "appMismatch", body(app="com.example.App"))
    add_register("§9.4 step 9 before step 10 (unknown app, revoked key)", "appMismatch", body(app="com.example.nope"),
                 revoked=[ED.thumbprint])
    add_register("§9.4 step 10: a revoked key never registers again", "deviceRevoked", body(), revoked=[ED.thumbprint])
    add_register("§9.4 step 10: another key's revocation is not this key's", "valid", body(), revoked=[P.thumbprint])
    spent = challenge()
    spent_id = challenge_id(unb64u(spent)).hex()
    add_register("§9.4 step 11: a challenge redeemed already", "challengeRedeemed", body(ch=spent), redeemed=[spent_id])
    add_register("§9.4 step 10 before step 11", "deviceRevoked", body(ch=spent), redeemed=[spent_id], revoked=[ED.thumbprint])
    add_register("§9.4 step 11: another challenge's redemption is not this one's", "valid", body(), redeemed=[spent_id])

    # ---- counter cases (§9.5)
    def add_counter(comment, counters, highest=0, window=0):
        return add("counter", comment, "valid", dict(highest=highest, window="%032x" % window, counters=counters))

    add_counter("§9.5 no counter from a device that never sent one; then counters; then none is missing", [0, 0, 1, 0, 2])
    add_counter("§9.5 concurrent requests arrive in any order: all accepted once", [3, 1, 2, 5, 4, 3, 5, 1])
    add_counter("§9.5 127 behind is the oldest told apart, 128 behind too old", [200, 73, 72, 73])
    add_counter("§9.5 a slide of 64 moves the lower half up whole", [100, 90, 164, 100, 90, 37, 36, 101])
    add_counter("§9.5 a slide of 127 keeps the highest; of 128 forgets everything", [10, 137, 10, 265, 137, 138])
    add_counter("§9.5 a slide of more than 128", [5, 5000, 4999, 4873, 4872, 5])
    add_counter("§9.5 from a stored state: bits 0 and 127 set", [1000, 873, 999, 872, 1001, 873], highest=1000, window=1 | 1 << 127)
    add_counter("§9.5 up to 2^63 - 1", [MAX_COUNTER, MAX_COUNTER - 127, MAX_COUNTER - 128, 1, MAX_COUNTER])
    add_counter("§9.5 a jump from 0 to a large counter", [1 << 40, (1 << 40) - 1, 1])

    # ---- field cases (§9.5)
    for value, want, comment in [("0", "valid", "0: no counter"), ("1", "valid", "1"), ("9223372036854775807", "valid", "2^63 - 1"),
                                 ("9223372036854775808", "invalidHeader", "2^63"), ("01", "invalidHeader", "a leading zero"),
                                 ("00", "invalidHeader", "two zeros"), ("", "invalidHeader", "empty"), ("+1", "invalidHeader", "a sign"),
                                 ("1 ", "invalidHeader", "a space"), ("1e3", "invalidHeader", "an exponent"),
                                 ("12345678901234567890", "invalidHeader", "20 digits"), ("1234567890123456789", "valid", "19 digits"),
                                 ("\u0661", "invalidHeader", "an Arabic-Indic digit")]:
        add("field", "§9.5 " + comment, want, dict(value=value))

    # ---- redeem cases (§9.6)
    def device_challenge(client="deviceEd25519", levels=1 << 14, origin=ORIGIN, issued=ISSUED, ttl=120):
        return issue_challenge([keys["challengeKey"]], 3, 0, 0, levels, issued, ttl, 0, keys[client], origin, next(randoms))

    def add_redeem(comment, want, ch, client="deviceEd25519", devices=None, platform=1 << 15, body=None, now=NOW, redeemed=None, formats=None):
        inputs = dict(serverKeys=list(SERVER), body=body if body is not None else '{"challenge":"%s"}' % b64u(ch), clientKey=client,
                      origin=ORIGIN, now=now, platformLevels=platform)
        if formats is not None:
            inputs["formats"] = formats
        inputs["devices"] = {"deviceEd25519": dict(format="signcore", status="active")} if devices is None else devices
        if redeemed is not None:
            inputs["redeemed"] = redeemed
        return add("redeem", comment, want, inputs)

    d = device_challenge()
    add_redeem("§9.6 a registered signcore key answers a device challenge", "valid", d)
    add_redeem("§9.6 answer is not read for type 3", "valid", d, body='{"challenge":"%s","answer":7}' % b64u(d))
    add_redeem("§9.6 a platform level for a key registered with Play Integrity", "valid", device_challenge(levels=1 << 15 | 1 << 14),
               devices={"deviceEd25519": dict(format="android-play-integrity", status="active")})
    add_redeem("§9.6 a platform level for a signcore key", "formatNotAccepted", device_challenge(levels=1 << 15 | 1 << 14))
    add_redeem("§9.6 a key registered in a format the deployment no longer accepts", "formatNotAccepted", d, formats=["apple-app-attest"])
    add_redeem("§9.6 revoked before the format's check", "deviceRevoked", d, formats=["apple-app-attest"],
               devices={"deviceEd25519": dict(format="signcore", status="revoked")})
    add_redeem("§9.6 platformLevels 0: every level is for any device", "valid", device_challenge(levels=1 << 15), platform=0)
    add_redeem("§9.6 not registered", "deviceUnknown", d, devices={"deviceP256": dict(format="signcore", status="active")})
    add_redeem("§9.6 an App Attest record does not sign requests", "deviceUnknown", d,
               devices={"deviceEd25519": dict(format="apple-app-attest", status="active")})
    add_redeem("§9.6 revoked", "deviceRevoked", d, devices={"deviceEd25519": dict(format="signcore", status="revoked")})
    add_redeem("§9.6 revoked before the platform check", "deviceRevoked", device_challenge(levels=1 << 15),
               devices={"deviceEd25519": dict(format="signcore", status="revoked")})
    add_redeem("§4.3 step 6 before step 7: another key's device challenge", "challengeKeyMismatch", device_challenge(client="deviceP256"))
    add_redeem("§4.3 step 8 after step 7", "challengeRedeemed", d, redeemed=[challenge_id(d).hex()])
    add_redeem("§4.3 step 7 before step 8", "deviceUnknown", d, devices={}, redeemed=[challenge_id(d).hex()])
    add_redeem("§4.3 step 3: a device challenge expires", "challengeExpired", d, now=ISSUED + 125000)
    ED_FIELD = key_thumbprint(keys["deviceEd25519"])
    for fields, want, comment in [(dict(d=1), "attestationMalformed", "a device challenge has d = 0"),
                                  (dict(k=1), "attestationMalformed", "a device challenge has k = 0"),
                                  (dict(levels=0), "attestationMalformed", "a device challenge grants levels"),
                                  (dict(levels=1), "valid", "a device challenge of level 0 alone"),
                                  (dict(levels=0xFFFF), "valid", "a device challenge of every level")]:
        crafted = dict(type_=3, levels=1, key_field=ED_FIELD)
        crafted.update(fields)
        add_redeem("§2.4 " + comment, want, None, body='{"challenge":"%s"}' % craft(**crafted), platform=0)
    add_redeem("§4.2 a payload (type 4) is not redeemed here, even with an assertion", "attestationMalformed", None,
               body='{"challenge":"%s","format":"apple-app-attest","keyId":"%s","token":"AAEC"}' % (craft(type_=4, key_field=ED_FIELD),
                                                                                                   base64.b64encode(ED_FIELD).decode()))
    add_redeem("§4.2 a registration challenge is not redeemed here", "attestationMalformed", None,
               body='{"challenge":"%s"}' % challenge(key_thumbprint(ED)))
    add_redeem("§4.2 a proof-of-work challenge still needs its answer", "attestationMalformed", None,
               body='{"challenge":"%s"}' % b64u(issue_challenge([keys["challengeKey"]], 1, 4, 1, 1, ISSUED, 300, 0, ED, ORIGIN, next(randoms))))

    number = 0
    for name in DEVICE_SECTIONS:
        for case in sections[name]:
            number += 1
            case["tcId"] = number
    return dict({"spec": "SignCore/3 attestation 1, device keys", "algorithm": "device",
                 "header": "docs/ATTEST.md §9.10. challenge: issue -> body, challenge, id; register: a registration body -> the record "
                           "and the challenge id, or the error; counter: a state and counters -> the verdicts and the state; field: a "
                           "signcore-counter value -> the counter or the error; redeem: an attest request of a type 3 challenge -> the "
                           "challenge id and levels, or the error. Times in milliseconds",
                 "numberOfTests": number, "keys": DEVICE_KEYS}, **sections)


# ---------------------------------------------------------------- docs/ATTEST.md §10: rate limits and their bypass
BYPASS_TYPES = ("SIGNCORE_DEVICE_KEY", "APPLE_DEVICE_CHECK", "ANDROID_PLAY_INTEGRITY", "SIGNCORE_POW")  # ATTEST §10.3
MAX_QUOTA = 1_000_000  # ATTEST §10.1: requests per window
MAX_WINDOW = 86400  # ATTEST §10.1: seconds
NS = 1_000_000_000  # ATTEST §10.1: nanoseconds a second
MAX_BUCKET = 64  # ATTEST §10.1: a bucket's name is 1-64 bytes of A-Z a-z 0-9 - _
CAPTCHA_TYPE, CAPTCHA_RESPONSE, CAPTCHA_SITE_KEY, CAPTCHA_KEY_ID = (  # ATTEST §10.4, lower-cased (field names are case-insensitive)
    "x-captcha-type", "x-captcha-response", "x-captcha-site-key", "x-captcha-key-id")
CAPTCHA_FIELDS = (CAPTCHA_TYPE, CAPTCHA_RESPONSE, CAPTCHA_SITE_KEY, CAPTCHA_KEY_ID)
REQUIRED_CAPTCHA = (CAPTCHA_TYPE, CAPTCHA_RESPONSE, CAPTCHA_SITE_KEY)  # ATTEST §10.5 step 1
MAX_RESPONSE = 16384  # ATTEST §10.5 step 1: X-Captcha-Response, bytes
APP_ATTEST_KEY_ID = 32  # ATTEST §10.4: X-Captcha-Key-Id is base64 of 32 bytes
MAX_PASSES = 4  # ATTEST §10.6: members of signcore-rate-pass
MAX_PASS_FIELD = 4096 + 16  # ATTEST §10.6: bytes of signcore-rate-pass
DEVICE_CODES = ("deviceUnknown", "deviceRevoked", "registrationMalformed", "registrationExpired", "deviceKeyMismatch",  # ATTEST §9.9
                "appMismatch", "formatNotAccepted", "counterRepeated", "counterTooOld", "counterMissing", "platformTokenMalformed",
                "certificateUntrusted", "nonceMismatch", "environmentMismatch", "platformCounterInvalid", "assertionInvalid",
                "integrityVerdictFailed")
DEVICE_REASONS = {"deviceUnknown": "notRegistered", "deviceRevoked": "revoked",  # ATTEST §10.5 step 6; any other: attestationFailed
                  "integrityVerdictFailed": "verdictTooWeak"}


def gcra_limit(quota, window, burst=None):
    """ATTEST §10.1: a limit's emission interval T = ⌊w × 10^9 / q⌋ ns and tolerance τ = T × (b − 1);
    burst absent: the quota. A limit out of its ranges is a deployment's error (invalidConfiguration)."""
    burst = quota if burst is None else burst
    if not 1 <= quota <= MAX_QUOTA or not 1 <= window <= MAX_WINDOW or not 1 <= burst <= quota:
        raise SpecError("invalidConfiguration")
    interval = window * NS // quota
    return interval, interval * (burst - 1)


def gcra(arrival, t, interval, tolerance):
    """ATTEST §10.1: a request at t (ns) that finds the client's arrival time `arrival` (None:
    absent) -> (its verdict, the arrival time it leaves). A refused request leaves it as it was."""
    a = t if arrival is None else max(arrival, t)
    if a - t > tolerance:  # retry after ⌈(A' − t − τ) / 10^9⌉ s, at least 1 since A' − t > τ
        return dict(allowed=False, retryAfter=-(-(a - t - tolerance) // NS)), arrival
    return dict(allowed=True, remaining=(tolerance + interval - (a + interval - t)) // interval), a + interval


def bucket_digest(url: str, bucket: str) -> bytes:
    """ATTEST §10.3: SHA-256("SignCore/3 rate bucket\\n" || origin || "\\n" || bucket), the origin as §1's."""
    return hashlib.sha256(b"SignCore/3 rate bucket\n" + origin_of(url.encode()) + b"\n" + bucket.encode()).digest()


def issue_offer(keys, type_name, d, k, levels, issued_at, ttl, client, origin: str, bucket: str, random: bytes) -> bytes:
    """ATTEST §10.3: the offer of bypass type `type_name`, a challenge of type 5 tagged by the first
    `oct` key of the set (§1): `d`, `k` the policy's work, carried by SIGNCORE_POW's offer alone;
    `levels` the pass levels; `client` the key the request's signature proved (None: unbound).
    A bucket, type, work, levels or ttl out of range is a deployment's error (invalidConfiguration)."""
    key = issuing_key(keys, CHALLENGE_KEY_ALGS)
    work = type_name == "SIGNCORE_POW"
    if not work:
        d, k = 0, 0
    name = bucket.encode()
    if (type_name not in BYPASS_TYPES or not 1 <= len(name) <= MAX_BUCKET or any(c not in KID_BYTES for c in name)
            or work and d == 0 or not kind_admits(OFFER_TYPE, d, k, levels) or not 1 <= ttl <= MAX_CHALLENGE_TTL):
        raise SpecError("invalidConfiguration")
    key_field = UNBOUND if client is None else key_thumbprint(client)
    body = challenge_body(OFFER_TYPE, d, k, levels, issued_at, ttl, 0, key_field, bucket_digest(origin, bucket), random, key.kid.encode())
    return body + sign_message(key, CHALLENGE_CONTEXT, body)[1]


def issue_pass(keys, levels, issued_at, ttl, client: Key, origin: str, bucket: str, token_id: bytes) -> bytes:
    """ATTEST §10.6: a token (§5) with the pass levels, bound to the client's key, with the bucket
    digest in its origin field; by the first `OKP` or `EC` key of the set (§1)."""
    key = issuing_key(keys, TOKEN_KEY_ALGS)
    body = token_body(levels, issued_at, ttl, key_thumbprint(client), bucket_digest(origin, bucket), token_id, key.kid.encode())
    return body + sign_message(key, TOKEN_CONTEXT, body)[1]


def bypass_refusal(code) -> SpecError:
    """ATTEST §10.5 step 6: how a refusal of the device flow answers a bypass: platformTokenMalformed
    as bypassMalformed, nonceMismatch as bypassNonceMismatch, every other code of §9.9 as
    bypassDeviceRejected with its reason and cause; any other refusal is itself."""
    if code not in DEVICE_CODES:
        return SpecError(code)
    if code == "platformTokenMalformed":
        return SpecError("bypassMalformed")
    if code == "nonceMismatch":
        return SpecError("bypassNonceMismatch")
    return SpecError("bypassDeviceRejected", reason=DEVICE_REASONS.get(code, "attestationFailed"), cause=code)


def bypass_response_reads(type_name, response: str, key_id, offer: dict, signer) -> bool:
    """ATTEST §10.5 step 1, the response by type (its length checked before)."""
    if type_name == "SIGNCORE_DEVICE_KEY":  # a verified request whose key's thumbprint it is
        return signer is not None and response == b64u(key_thumbprint(signer))
    try:
        if type_name == "APPLE_DEVICE_CHECK":  # base64 (not empty: at least one byte), and the App Attest key id
            decode_base64(response)
            return key_id is not None and len(decode_base64(key_id)) == APP_ATTEST_KEY_ID
        if type_name == "SIGNCORE_POW":  # an offer with work, and base64url of its 8k bytes
            return offer["d"] >= 1 and len(unb64u(response)) == 8 * offer["count"]
    except ValueError:
        return False
    return True  # ANDROID_PLAY_INTEGRITY: the integrity token as the platform wrote it, read at step 6


def platform_answer(type_name):
    """ATTEST §10.5 step 6 for APPLE_DEVICE_CHECK (§9.6's assertion, §9.7) and ANDROID_PLAY_INTEGRITY
    (§9.8): their artefacts carry certificates and keys made at test time, so this reference does
    not verify them, and no vector reaches this step with them (docs/ATTEST.md §10.10)."""
    raise NotImplementedError("ATTEST §10.5 step 6 for " + type_name)


def redeem_bypass(fields, covered, signer, types, pass_levels, pass_ttl, bucket: str, origin: str, keys, now, skew, redeemed,
                  devices, formats, token_id: bytes) -> dict:
    """ATTEST §10.5, in order, the first failure being the result. `fields`: the request's header
    fields, (name, value) pairs; `covered`: the names its wtoken covers; `signer`: the key its
    signature proved (None: not verified); `types`, `pass_levels`, `pass_ttl`: the limit's policy
    (a policy out of range is invalidConfiguration, before anything is read); `redeemed`: the offer
    ids (hex) the store holds; `devices`, `formats`: as registered_device. The result: the offer's id
    (recorded in the store) and, for a verified request, the pass (§10.6, its tokenID `token_id`)."""
    if any(t not in BYPASS_TYPES for t in types) or not 1 <= pass_levels <= MAX_LEVELS or not 1 <= pass_ttl <= MAX_TOKEN_TTL:
        raise SpecError("invalidConfiguration")
    names = [n.lower() for n, _ in fields]  # step 1
    if any(names.count(n) > 1 for n in CAPTCHA_FIELDS) or any(n not in names for n in REQUIRED_CAPTCHA):
        raise SpecError("bypassMalformed")
    if signer is not None and any(n in names and n not in covered for n in CAPTCHA_FIELDS):
        raise SpecError("headerNotCovered")
    value = {n.lower(): v for n, v in fields}
    type_name, response = value[CAPTCHA_TYPE], value[CAPTCHA_RESPONSE]
    if type_name not in BYPASS_TYPES:
        raise SpecError("bypassMalformed")
    if type_name not in types:
        raise SpecError("bypassNotOffered")
    try:
        offer = parse_challenge(value[CAPTCHA_SITE_KEY])
    except SpecError:
        offer = None
    if offer is None or offer["type"] != OFFER_TYPE:
        raise SpecError("bypassMalformed")
    if (not 1 <= len(response.encode()) <= MAX_RESPONSE
            or (offer["d"] >= 1) != (type_name == "SIGNCORE_POW")  # answered as the type it was made for
            or not bypass_response_reads(type_name, response, value.get(CAPTCHA_KEY_ID), offer, signer)):
        raise SpecError("bypassMalformed")
    key = named_key(keys, offer["kid"], CHALLENGE_KEY_ALGS)  # step 2
    if key is None or not signature_verifies(key, CHALLENGE_CONTEXT, offer["body"], offer["tag"]):
        raise SpecError("bypassNonceMismatch")
    if not now < offer["issuedAt"] + offer["ttl"] * 1000 + skew:  # step 3
        raise SpecError("bypassExpired")
    if offer["origin"] != bucket_digest(origin, bucket):  # step 4
        raise SpecError("bypassNonceMismatch")
    if offer["key"] != UNBOUND and (signer is None or offer["key"] != key_thumbprint(signer)):  # step 5
        raise SpecError("bypassNonceMismatch")
    if type_name == "SIGNCORE_POW":  # step 6
        if not answer_meets(offer["bytes"], offer["d"], offer["count"], unb64u(response)):
            raise SpecError("bypassWrongAnswer")
    elif type_name == "SIGNCORE_DEVICE_KEY":
        try:
            registered_device(devices, b64u(key_thumbprint(signer)), formats)
        except SpecError as e:
            raise bypass_refusal(e.code)
    else:
        platform_answer(type_name)
    offer_id = challenge_id(offer["bytes"]).hex()
    if offer_id in redeemed:  # step 7: insert if absent
        raise SpecError("bypassReplayed")
    out = dict(id=offer_id)
    if signer is not None:  # the pass (§10.6)
        token = issue_pass(keys, pass_levels, now, pass_ttl, signer, origin, bucket, token_id)
        out["pass"] = dict(levels=pass_levels, issuedAt=now, ttl=pass_ttl, body=token[:-64].hex(), token=b64u(token))
    return out


def rate_pass(field: str, client: Key, bucket: str, origin: str, keys, now, skew, pass_levels):
    """ATTEST §10.6: the first pass of a signcore-rate-pass field valid for the limit's bucket at
    `origin` and the key that signed the request, or None. A pass that is not valid is ignored, and
    so is the whole field when it is over 4112 bytes or holds more than 4 members."""
    members = field.split(",")
    if len(field.encode()) > MAX_PASS_FIELD or len(members) > MAX_PASSES:
        return None
    digest = bucket_digest(origin, bucket)
    for member in members:
        try:
            t = parse_attest_token(member.strip(" "))
        except SpecError:
            continue
        key = named_key(keys, t["kid"], TOKEN_KEY_ALGS)
        if (key is not None and signature_verifies(key, TOKEN_CONTEXT, t["body"], t["signature"])
                and t["issuedAt"] - skew <= now < t["issuedAt"] + t["ttl"] * 1000 + skew
                and t["origin"] == digest and t["key"] == key_thumbprint(client) and t["levels"] & pass_levels == pass_levels):
            return dict(tokenID=t["tokenID"].hex())
    return None


def rate_outcome(run) -> dict:
    """A case's result as ratelimit.json writes it: `valid` and `expected`, `none` (a pass field
    without a valid pass), or the error (with bypassDeviceRejected's reason and cause)."""
    try:
        expected = run()
    except SpecError as e:
        out = {"result": "invalid", "error": e.code}
        if e.reason is not None:
            out.update(reason=e.reason, cause=e.cause)
        return out
    return {"result": "none"} if expected is None else {"result": "valid", "expected": expected}


def rate_gcra_case(keys: dict, tc: dict) -> dict:
    def run():
        interval, tolerance = gcra_limit(tc["quota"], tc["window"], tc.get("burst"))
        arrival, verdicts = None, []
        for t in tc["requests"]:
            verdict, arrival = gcra(arrival, t, interval, tolerance)
            verdicts.append(verdict)
        return dict(interval=interval, tolerance=tolerance, verdicts=verdicts)
    return rate_outcome(run)


def rate_offer_case(keys: dict, tc: dict) -> dict:
    server = [keys[n] for n in tc["serverKeys"]] if "serverKeys" in tc else [keys[tc["serverKey"]]]

    def run():
        offer = issue_offer(server, tc["type"], tc["difficulty"], tc["count"], tc["levels"], tc["issuedAt"], tc["ttl"],
                            keys[tc["clientKey"]] if "clientKey" in tc else None, tc["origin"], tc["bucket"], bytes.fromhex(tc["random"]))
        out = dict(bucketDigest=bucket_digest(tc["origin"], tc["bucket"]).hex(), body=offer[:-32].hex(), siteKey=b64u(offer),
                   id=challenge_id(offer).hex())
        if tc.get("solve"):
            out["answer"] = b64u(solve(offer, offer[2], offer[3]))
        return out
    return rate_outcome(run)


def rate_redeem_case(keys: dict, tc: dict) -> dict:
    signer = keys[tc["signedBy"]] if "signedBy" in tc else None
    devices = {keys[n].thumbprint: record for n, record in tc.get("devices", {}).items()}
    policy = tc["policy"]
    return rate_outcome(lambda: redeem_bypass([tuple(f) for f in tc["fields"]], tc.get("covered", []), signer, policy["types"],
                                              policy["passLevels"], policy["passTTL"], tc["bucket"], tc["origin"],
                                              [keys[n] for n in tc["serverKeys"]], tc["now"], tc.get("skew", ATTEST_SKEW),
                                              set(tc.get("redeemed", [])), devices, tc.get("formats"),
                                              bytes.fromhex(tc.get("tokenID", "00" * 16))))


def rate_pass_case(keys: dict, tc: dict) -> dict:
    return rate_outcome(lambda: rate_pass(tc["field"], keys[tc["clientKey"]], tc["bucket"], tc["origin"],
                                          [keys[n] for n in tc["serverKeys"]], tc["now"], tc.get("skew", ATTEST_SKEW), tc["passLevels"]))


def rate_rejection_case(keys: dict, tc: dict) -> dict:
    def run():
        raise bypass_refusal(tc["deviceError"])
    return rate_outcome(run)


def rate_action_case(keys: dict, tc: dict) -> dict:
    return rate_outcome(lambda: dict(action=action_of(tc["advice"])))


RATE_SECTIONS = {"gcra": rate_gcra_case, "offer": rate_offer_case, "redeem": rate_redeem_case, "rejection": rate_rejection_case,
                 "pass": rate_pass_case, "attest": attest_redeem_case, "action": rate_action_case}
RATE_KEYS = ATTEST_KEYS


def generate_ratelimit():
    keys = {n: Key(j) for n, j in RATE_KEYS.items()}
    sections = {name: [] for name in RATE_SECTIONS}
    randoms = iter(seed("rate random %d" % i)[:16] for i in range(400))
    token_ids = iter(seed("rate pass id %d" % i)[:16] for i in range(400))

    def add(section, comment, want, inputs):
        case = dict({"tcId": 0, "comment": comment}, **inputs)
        case.update(RATE_SECTIONS[section](keys, case))
        got = case["error"] if case["result"] == "invalid" else case["result"]
        assert got == want, (section, comment, got, want)
        sections[section].append(case)
        return case

    # ---- gcra cases (§10.1): request times in ns of a monotonic clock
    T0 = 5_000_000_000_000
    SEC = NS

    def add_gcra(comment, quota, window, burst, requests, want="valid"):
        inputs = dict(quota=quota, window=window)
        if burst is not None:
            inputs["burst"] = burst
        inputs["requests"] = [T0 + t for t in requests]
        return add("gcra", comment, want, inputs)

    g = add_gcra("§10.1 burst = quota (5 per second): 5 at once, the 6th refused; one more each 200 ms; full again after a second",
                 5, 1, 5, [0, 0, 0, 0, 0, 0, SEC // 5 - 1, SEC // 5, SEC // 5, 2 * SEC, 2 * SEC])
    v = g["expected"]["verdicts"]
    assert [x["allowed"] for x in v] == [True] * 5 + [False, False, True, False, True, True] and v[10]["remaining"] == 3
    g = add_gcra("§10.1 burst 1 (10 a minute, one each 6 s): the retry rounded up to whole seconds; waiting longer saves nothing",
                 10, 60, 1, [0, SEC, 6 * SEC - 1, 6 * SEC, 6 * SEC, 100 * SEC, 100 * SEC + 1])
    assert [x.get("retryAfter") for x in g["expected"]["verdicts"]] == [None, 5, 1, None, 6, None, 6]
    g = add_gcra("§10.1 burst below quota (100 a minute, burst 10): 10 at once, the 11th waits 0.6 s: retry after 1 s",
                 100, 60, 10, [0] * 11 + [SEC * 6 // 10 - 1, SEC * 6 // 10, SEC * 6 // 10])
    assert [x["allowed"] for x in g["expected"]["verdicts"]] == [True] * 10 + [False, False, True, False]
    g = add_gcra("§10.1 a window not divisible by the quota: T = ⌊10^9 / 3⌋ = 333333333 ns; the boundary to the nanosecond",
                 3, 1, 3, [0, 0, 0, 0, 333333332, 333333333, 333333333, 666666666])
    assert g["expected"]["interval"] == 333333333 and [x["allowed"] for x in g["expected"]["verdicts"]] == [True] * 3 + [False, False, True, False, True]
    g = add_gcra("§10.1 T = ⌊10 × 10^9 / 7⌋ = 1428571428 ns, burst 2", 7, 10, 2,
                 [0, 0, 0, 1428571427, 1428571428, 2 * 1428571428, 2 * 1428571428, 2 * 1428571428 + 3 * 1428571428])
    g = add_gcra("§10.1 remaining is rounded down: 4 per 4 s, 2.5 s after a burst of 4 one is allowed and 1 left",
                 4, 4, 4, [0, 0, 0, 0, 2 * SEC + SEC // 2, 2 * SEC + SEC // 2, 2 * SEC + SEC // 2])
    assert [x.get("remaining") for x in g["expected"]["verdicts"]] == [3, 2, 1, 0, 1, 0, None]
    g = add_gcra("§10.1 the retry in whole seconds, rounded up: 1 per 2 s; 2 s ahead: 2; 2 s - 1 ns: 2; 1 s: 1; 1 s - 1 ns: 1",
                 1, 2, 1, [0, 0, 1, SEC, SEC + 1, 2 * SEC, 2 * SEC])
    assert [x.get("retryAfter") for x in g["expected"]["verdicts"]] == [None, 2, 2, 1, 1, None, 2]
    add_gcra("§10.1 recovery: a client idle for long is a fresh one (A below t: A' = t)", 3, 3, 3,
             [0, 0, 0, 0, 3600 * SEC, 3600 * SEC, 3600 * SEC + SEC, 3600 * SEC + SEC, 3600 * SEC + SEC])
    add_gcra("§10.1 burst absent: the quota", 3, 60, None, [0, 0, 0, 0, 20 * SEC])
    add_gcra("§10.1 the largest quota (1000000 a second, T = 1000 ns) and burst 1", 1_000_000, 1, 1, [0, 0, 999, 1000, 1000, 1001])
    add_gcra("§10.1 the largest window (1 a day): retry after 86400 s", 1, 86400, 1, [0, 0, 86400 * SEC - 1, 86400 * SEC])
    add_gcra("§10.1 the largest burst (1000000 at once, the quota), the smallest window", 1_000_000, 1, 1_000_000, [0, 0, 0])
    for what, q, w, b in (("quota 0", 0, 60, 1), ("quota 1000001", 1_000_001, 60, 1), ("window 0", 10, 0, 1),
                          ("window 86401", 10, 86401, 1), ("burst 0", 10, 60, 0), ("burst above the quota", 10, 60, 11)):
        add_gcra("§10.1 a limit out of range is not configured: %s" % what, q, w, b, [0], want="invalidConfiguration")

    # ---- offer cases (§10.3)
    PASS = 1 << 15
    LOGIN = "LOGIN"

    def add_offer(comment, want="valid", server="challengeKey", bucket=LOGIN, type_="SIGNCORE_POW", d=18, k=4, levels=PASS, issued=ISSUED,
                  ttl=60, client="clientEd25519", origin=ORIGIN, solve_=False):
        inputs = {"serverKeys": list(server)} if isinstance(server, (list, tuple)) else {"serverKey": server}
        inputs.update(bucket=bucket, type=type_, difficulty=d, count=k, levels=levels, issuedAt=issued, ttl=ttl)
        if client is not None:
            inputs["clientKey"] = client
        inputs.update(origin=origin, random=next(randoms).hex())
        if solve_:
            inputs["solve"] = True
        return add("offer", comment, want, inputs)

    o = add_offer("§10.3 SIGNCORE_POW's offer carries the work, bound to the key the request's signature proved; its answer",
                  d=12, k=2, solve_=True)
    assert bytes.fromhex(o["expected"]["body"])[:4] == bytes([1, 5, 12, 2])
    o = add_offer("§10.3 SIGNCORE_DEVICE_KEY's offer carries no work (d = k = 0), whatever the policy's", type_="SIGNCORE_DEVICE_KEY")
    assert bytes.fromhex(o["expected"]["body"])[2:4] == bytes(2)
    add_offer("§10.3 APPLE_DEVICE_CHECK's offer carries no work", type_="APPLE_DEVICE_CHECK", client="clientP256")
    add_offer("§10.3 ANDROID_PLAY_INTEGRITY's offer carries no work, unbound (a limit that fired before any key was verified)",
              type_="ANDROID_PLAY_INTEGRITY", client=None)
    o = add_offer("§10.3 an unbound proof of work offer: the key field is 32 zero bytes", client=None, d=26, k=1)
    assert bytes.fromhex(o["expected"]["body"])[22:54] == UNBOUND
    add_offer("§10.3 the bucket digest is the origin's (another spelling of it) and the bucket's; the offer TTL at its largest",
              origin="HTTPS://API.Example.COM:443/v1/login?x=1", ttl=3600, bucket="login-v2_EU")
    add_offer("§10.3 an origin with a port; a bucket of 1 byte; the offer TTL at its smallest", origin="http://127.0.0.1:8080/x",
              bucket="L", ttl=1)
    add_offer("§10.1 a bucket of 64 bytes", bucket="B" * 64, d=12, k=16)
    add_offer("§10.3 pass levels of every level, a policy's largest work (d 26, k 16), an HMAC client key", levels=0xFFFF, d=26, k=16,
              client="clientHmac")
    add_offer("§10.3 a policy's smallest work (d 12, k 1), pass levels 1", d=12, k=1, levels=1)
    add_offer("§10.3 a server key id of 1 character; the first oct key of the set issues", server=["tokenKey", "challengeKey1", "challengeKey"])
    add_offer("§1 a set without an oct key issues no offer", "invalidConfiguration", server="tokenKey")
    for what, changes in (("a bucket of 0 bytes", dict(bucket="")), ("a bucket of 65 bytes", dict(bucket="B" * 65)),
                          ("a bucket with a dot", dict(bucket="login.v2")), ("a bucket with a non-ASCII letter", dict(bucket="lögin")),
                          ("a bucket with a space", dict(bucket="LOG IN")),
                          ("a type of no §10.3 (SIGNCORE_CAPTCHA)", dict(type_="SIGNCORE_CAPTCHA")),
                          ("SIGNCORE_POW without work (d 0, k 0)", dict(d=0, k=0)), ("SIGNCORE_POW of d 0", dict(d=0)),
                          ("SIGNCORE_POW of d 33", dict(d=33)), ("SIGNCORE_POW of k 0", dict(k=0)), ("SIGNCORE_POW of k 17", dict(k=17)),
                          ("pass levels 0", dict(levels=0)), ("pass levels 0 on an offer without work", dict(levels=0, type_="SIGNCORE_DEVICE_KEY")),
                          ("pass levels 65536 (not a u16)", dict(levels=65536)), ("an offer TTL of 0", dict(ttl=0)),
                          ("an offer TTL of 3601", dict(ttl=3601))):
        add_offer("§10.3 an offer out of range is not issued: %s (a deployment's setting)" % what, "invalidConfiguration", **changes)

    # ---- redeem cases (§10.4, §10.5)
    SERVER = ("challengeKey", "tokenKey")
    NOW = ISSUED + 10000
    POLICY = dict(types=list(BYPASS_TYPES), passLevels=PASS, passTTL=300)
    ED = keys["clientEd25519"]
    APPLE_KEY_ID = base64.b64encode(seed("app attest key id")).decode()
    ASSERTION = base64.b64encode(b"\xa2isignatureX@" + bytes(2) + bytes([0xfb, 0xef, 0xff]) * 20 + bytes(2) + b"qauthenticatorDataX%" + bytes(37)).decode()
    assert "+" in ASSERTION and "/" in ASSERTION and ASSERTION.endswith("=")  # standard base64, padded

    def offer(type_="SIGNCORE_POW", d=4, k=2, client="clientEd25519", bucket=LOGIN, origin=ORIGIN, issued=ISSUED, ttl=60, levels=PASS,
              key="challengeKey") -> bytes:
        return issue_offer([keys[key]], type_, d, k, levels, issued, ttl, keys[client] if client else None, origin, bucket, next(randoms))

    def craft(key="challengeKey", kid=None, type_=OFFER_TYPE, d=4, k=2, levels=PASS, ttl=60, key_field=None, bucket=LOGIN) -> bytes:
        """An offer with any header and kid, tagged by `key` (so that only the field under test is wrong)."""
        kid = keys[key].kid.encode() if kid is None else kid
        body = challenge_body(type_, d, k, levels, ISSUED, ttl, 0, key_thumbprint(ED) if key_field is None else key_field,
                              bucket_digest(ORIGIN, bucket), next(randoms), kid)
        return body + sign_message(keys[key], CHALLENGE_CONTEXT, body)[1]

    def pow_fields(site, ans=None, extra=()):
        ans = b64u(solve(site, site[2], site[3])) if ans is None else ans if isinstance(ans, str) else b64u(ans)
        return [["X-Captcha-Type", "SIGNCORE_POW"], ["X-Captcha-Response", ans], ["X-Captcha-Site-Key", b64u(site)]] + list(extra)

    def device_fields(site, response=None, type_="SIGNCORE_DEVICE_KEY"):
        return [["X-Captcha-Type", type_], ["X-Captcha-Response", ED.thumbprint if response is None else response],
                ["X-Captcha-Site-Key", b64u(site) if isinstance(site, bytes) else site]]

    def apple_fields(site, response=ASSERTION, key_id=APPLE_KEY_ID):
        out = [["X-Captcha-Type", "APPLE_DEVICE_CHECK"], ["X-Captcha-Response", response], ["X-Captcha-Site-Key", b64u(site)]]
        return out + ([["X-Captcha-Key-Id", key_id]] if key_id is not None else [])

    def android_fields(site, response="eyJhbGciOiJBMjU2S1ciLCJlbmMiOiJBMjU2R0NNIn0.a.b.c.d"):
        return [["X-Captcha-Type", "ANDROID_PLAY_INTEGRITY"], ["X-Captcha-Response", response], ["X-Captcha-Site-Key", b64u(site)]]

    ACTIVE = {"clientEd25519": dict(format="signcore", status="active")}

    def add_redeem(comment, want, fields, signed_by="clientEd25519", covered=None, policy=None, bucket=LOGIN, origin=ORIGIN, now=NOW,
                   skew=None, devices=None, formats=None, redeemed=None, server=SERVER):
        inputs = dict(serverKeys=list(server), policy=dict(POLICY, **(policy or {})), bucket=bucket, fields=fields)
        if signed_by is not None:
            inputs["signedBy"] = signed_by
            inputs["covered"] = sorted({n.lower() for n, _ in fields}) if covered is None else covered
        inputs.update(origin=origin, now=now)
        if skew is not None:
            inputs["skew"] = skew
        inputs["devices"] = ACTIVE if devices is None else devices
        if formats is not None:
            inputs["formats"] = formats
        if redeemed is not None:
            inputs["redeemed"] = redeemed
        if want == "valid" and signed_by is not None:
            inputs["tokenID"] = next(token_ids).hex()
        return add("redeem", comment, want, inputs)

    def rejected(case, reason, cause):
        assert (case["reason"], case["cause"]) == (reason, cause), case

    # valid answers
    p = offer()
    v = add_redeem("§10.5 a proof of work answers a bound offer (d 4, k 2; the smallest counters): the offer's id and the pass",
                   "valid", pow_fields(p))
    assert v["expected"]["pass"]["levels"] == PASS
    dk = offer("SIGNCORE_DEVICE_KEY")
    add_redeem("§10.5 a registered active signcore key answers SIGNCORE_DEVICE_KEY: the pass", "valid", device_fields(dk))
    add_redeem("§10.5 a key registered with Play Integrity signs requests too", "valid", device_fields(dk),
               devices={"clientEd25519": dict(format="android-play-integrity", status="active")})
    up = offer(client=None)
    add_redeem("§10.5 an unsigned request answers an unbound offer with a proof of work: valid, no pass", "valid", pow_fields(up),
               signed_by=None)
    add_redeem("§10.5 step 5: a signed request answers an unbound offer: the pass is bound to its key", "valid", pow_fields(up))
    add_redeem("§10.5 step 1: a device key answering an offer with work (made for SIGNCORE_POW)", "bypassMalformed",
               device_fields(offer()))
    add_redeem("§10.5 step 1: a proof of work answering an offer without work (made for a device)", "bypassMalformed",
               pow_fields(offer("SIGNCORE_DEVICE_KEY"), bytes(8)))
    add_redeem("§10.4 field names are case-insensitive; the wtoken covers them lower-cased", "valid",
               [[n.lower(), v_] for n, v_ in pow_fields(offer())])
    add_redeem("§10.4 the fields come in any order; other fields are ignored, covered or not", "valid",
               list(reversed(pow_fields(offer()))) + [["Content-Type", "application/json"]],
               covered=["x-captcha-response", "x-captcha-site-key", "x-captcha-type"])
    add_redeem("§10.4 X-Captcha-Key-Id sent with another type, covered, is not read", "valid",
               pow_fields(offer(), extra=[["X-Captcha-Key-Id", "not read"]]))
    add_redeem("§10.6 the pass: the policy's levels and TTL, issued now; a P-256 client key, an origin with a port", "valid",
               pow_fields(offer(client="clientP256", origin="http://127.0.0.1:8080", levels=3 << 14)), signed_by="clientP256",
               origin="http://127.0.0.1:8080/v1/login", policy=dict(passLevels=3 << 14, passTTL=86400))
    add_redeem("§10.6 the pass TTL at its smallest, levels 1", "valid", pow_fields(offer(levels=1)), policy=dict(passLevels=1, passTTL=1))
    add_redeem("§10.6 pass levels of every level", "valid", pow_fields(offer(levels=0xFFFF)), policy=dict(passLevels=0xFFFF))
    add_redeem("§1 the first OKP key of the set signs the pass; the offer of the old oct key, still in the set, is this server's",
               "valid", pow_fields(offer(key="challengeKeyOld")), server=("challengeKey", "challengeKeyOld", "tokenKeyOld", "tokenKey"))
    add_redeem("§10.5 a policy of one type", "valid", pow_fields(offer()), policy=dict(types=["SIGNCORE_POW"]))
    add_redeem("§2.4 an offer of d 1, k 1", "valid", pow_fields(offer(d=1, k=1)))
    add_redeem("§10.5 step 3: the last millisecond before issuedAt + ttl × 1000 + skew (default 5000)", "valid", pow_fields(p),
               now=ISSUED + 64999)
    add_redeem("§10.5 step 3: skew 0, the last millisecond before issuedAt + ttl × 1000", "valid", pow_fields(p), now=ISSUED + 59999,
               skew=0)
    add_redeem("§10.5 step 3: an offer issued ahead of this node's clock is not refused", "valid", pow_fields(p), now=ISSUED - 60000)
    add_redeem("§10.5 step 7: a store holding other ids", "valid", pow_fields(p), redeemed=[challenge_id(dk).hex()])
    add_redeem("§10.5 step 1: a response of 16384 bytes is read (the offer forged: step 2)", "bypassNonceMismatch",
               android_fields(craft(key="challengeKeyImpostor", d=0, k=0), "x" * 16384))
    # configuration
    for what, changes in (("a type of no §10.3", dict(types=["SIGNCORE_POW", "SIGNCORE_CAPTCHA"])), ("pass levels 0", dict(passLevels=0)),
                          ("pass levels 65536", dict(passLevels=65536)), ("a pass TTL of 0", dict(passTTL=0)),
                          ("a pass TTL of 86401", dict(passTTL=86401))):
        add_redeem("§10.3, §10.6 a policy out of range is not configured, before anything is read: %s" % what, "invalidConfiguration",
                   [["X-Captcha-Type", "SIGNCORE_POW"]], policy=changes)
    # step 1: the fields
    q = offer()
    qf = pow_fields(q)
    for i, name in enumerate(("X-Captcha-Type", "X-Captcha-Response", "X-Captcha-Site-Key")):
        add_redeem("§10.5 step 1: %s missing" % name, "bypassMalformed", qf[:i] + qf[i + 1:])
        add_redeem("§10.5 step 1: %s sent twice (the same value)" % name, "bypassMalformed", qf + [qf[i]])
    add_redeem("§10.5 step 1: X-Captcha-Key-Id sent twice", "bypassMalformed", apple_fields(q) + [["X-Captcha-Key-Id", APPLE_KEY_ID]])
    add_redeem("§10.5 step 1: a field twice in two spellings of its name", "bypassMalformed", qf + [["x-captcha-type", "SIGNCORE_POW"]])
    add_redeem("§10.5 step 1: an unsigned request missing a field", "bypassMalformed", qf[:2], signed_by=None)
    for i, name in enumerate(("x-captcha-type", "x-captcha-response", "x-captcha-site-key")):
        add_redeem("§10.5 step 1: %s not covered by the wtoken" % name, "headerNotCovered", qf,
                   covered=[n for n in ("x-captcha-response", "x-captcha-site-key", "x-captcha-type") if n != name])
    add_redeem("§10.5 step 1: X-Captcha-Key-Id present and not covered", "headerNotCovered",
               qf + [["X-Captcha-Key-Id", APPLE_KEY_ID]], covered=["x-captcha-response", "x-captcha-site-key", "x-captcha-type"])
    add_redeem("§10.5 step 1: an unsigned request has no wtoken to cover its fields", "valid", pow_fields(offer(client=None)),
               signed_by=None)
    add_redeem("§10.5 step 1 order: a field missing before one not covered", "bypassMalformed", qf[:2], covered=[])
    add_redeem("§10.5 step 1 order: a field twice before one not covered", "bypassMalformed", qf + [qf[0]], covered=[])
    add_redeem("§10.5 step 1 order: not covered before an unknown type", "headerNotCovered",
               [["X-Captcha-Type", "SIGNCORE_CAPTCHA"]] + qf[1:], covered=["x-captcha-response"])
    add_redeem("§10.5 step 1: a type of no §10.3", "bypassMalformed", [["X-Captcha-Type", "SIGNCORE_CAPTCHA"]] + qf[1:])
    add_redeem("§10.5 step 1: types are compared as they are written (signcore_pow)", "bypassMalformed",
               [["X-Captcha-Type", "signcore_pow"]] + qf[1:])
    add_redeem("§10.5 step 1: a type the limit does not offer", "bypassNotOffered", qf, policy=dict(types=["SIGNCORE_DEVICE_KEY"]))
    add_redeem("§10.5 step 1 order: an unknown type before one not offered", "bypassMalformed", [["X-Captcha-Type", "SIGNCORE_CAPTCHA"]] + qf[1:],
               policy=dict(types=["SIGNCORE_DEVICE_KEY"]))
    add_redeem("§10.5 step 1 order: a type not offered before a site key that is not an offer", "bypassNotOffered",
               qf[:2] + [["X-Captcha-Site-Key", "AAAA"]], policy=dict(types=["SIGNCORE_DEVICE_KEY", "APPLE_DEVICE_CHECK"]))
    # step 1: the site key
    qs = b64u(q)
    for what, site in (("empty", ""), ("not base64url", qs[:10] + "+" + qs[11:]), ("with padding", qs + "="),
                       ("one byte short", b64u(q[:-1])), ("of more than 1024 bytes", qs + "A" * (1028 - len(qs)))):
        add_redeem("§10.5 step 1: a site key %s is not an offer" % what, "bypassMalformed", qf[:2] + [["X-Captcha-Site-Key", site]])
    ch1 = issue_challenge([keys["challengeKey"]], 1, 4, 2, PASS, ISSUED, 60, 0, ED, ORIGIN, next(randoms))
    add_redeem("§10.5 step 1: a proof of work challenge of type 1 (§2) is not an offer", "bypassMalformed", pow_fields(ch1))
    ch3 = issue_challenge([keys["challengeKey"]], 3, 0, 0, PASS, ISSUED, 60, 0, ED, ORIGIN, next(randoms))
    add_redeem("§10.5 step 1: a device challenge (type 3) is not an offer", "bypassMalformed", device_fields(ch3))
    for what, changes in (("d 0, k 1", dict(d=0, k=1)), ("d 1, k 0", dict(d=1, k=0)), ("d 33", dict(d=33)), ("k 17", dict(k=17)),
                          ("levels 0", dict(levels=0)), ("ttl 0", dict(ttl=0)), ("ttl 3601", dict(ttl=3601))):
        c = craft(**changes)
        add_redeem("§2.4 an offer of %s, its tag valid, does not parse" % what, "bypassMalformed",
                   device_fields(c) if c[2] == 0 or c[3] == 0 else pow_fields(c, bytes(8 * c[3])))
    big = craft(d=32, k=16, levels=0xFFFF, ttl=3600)
    add_redeem("§2.4 an offer of d 32, k 16, levels 65535 and ttl 3600 parses (the zero answer is then a wrong answer)",
               "bypassWrongAnswer", pow_fields(big, bytes(128)))
    add_redeem("§2.4 an offer without work parses (d 0, k 0)", "valid", device_fields(craft(d=0, k=0)))
    # step 1: the response
    add_redeem("§10.5 step 1: an empty response", "bypassMalformed", device_fields(dk, ""))
    add_redeem("§10.5 step 1: a response of 1 byte is read (the offer expired: step 3)", "bypassExpired",
               android_fields(offer("ANDROID_PLAY_INTEGRITY"), "x"), now=ISSUED + 65000)
    add_redeem("§10.5 step 1: an empty ANDROID_PLAY_INTEGRITY response (the offer expired too)", "bypassMalformed",
               android_fields(offer("ANDROID_PLAY_INTEGRITY"), ""), now=ISSUED + 65000)
    add_redeem("§10.5 step 1: a response of 16385 bytes", "bypassMalformed", android_fields(offer("ANDROID_PLAY_INTEGRITY"), "x" * 16385))
    add_redeem("§10.5 step 1: SIGNCORE_DEVICE_KEY naming another key than the one that signed", "bypassMalformed",
               device_fields(dk, keys["clientOther"].thumbprint))
    add_redeem("§10.5 step 1: SIGNCORE_DEVICE_KEY naming the key that signed by its kid, not its thumbprint", "bypassMalformed",
               device_fields(dk, "device-7"), signed_by="clientEd25519Named")
    add_redeem("§10.5 step 1: SIGNCORE_DEVICE_KEY names the thumbprint whatever the key's kid", "valid", device_fields(dk),
               signed_by="clientEd25519Named")
    add_redeem("§10.5 step 1: SIGNCORE_DEVICE_KEY on an unsigned request", "bypassMalformed", device_fields(offer("SIGNCORE_DEVICE_KEY",
                                                                                                               client=None)), signed_by=None)
    add_redeem("§10.5 step 1: SIGNCORE_POW answering an offer without work", "bypassMalformed", pow_fields(dk, ""))
    add_redeem("§10.5 step 1: SIGNCORE_POW answering an offer without work (a response of 8 bytes)", "bypassMalformed", pow_fields(dk, bytes(8)))
    qa = solve(q, 4, 2)
    add_redeem("§10.5 step 1: a proof of work answer one byte short (8k - 1)", "bypassMalformed", pow_fields(q, qa[:-1]))
    add_redeem("§10.5 step 1: a proof of work answer one byte long (8k + 1)", "bypassMalformed", pow_fields(q, qa + b"\x00"))
    add_redeem("§10.5 step 1: a proof of work answer of one counter more (8k + 8)", "bypassMalformed", pow_fields(q, qa + bytes(8)))
    add_redeem("§10.5 step 1: a proof of work answer in base64url with padding", "bypassMalformed", pow_fields(q, b64u(qa) + "="))
    add_redeem("§10.5 step 1: a proof of work answer in standard base64 (+ and /)", "bypassMalformed",
               pow_fields(q, base64.b64encode(bytes([0xfb, 0xff]) + qa[2:]).decode().rstrip("=")))
    ao = offer("APPLE_DEVICE_CHECK", client="clientEd25519")
    add_redeem("§10.5 step 1: APPLE_DEVICE_CHECK without X-Captcha-Key-Id", "bypassMalformed", apple_fields(ao, key_id=None))
    add_redeem("§10.5 step 1: APPLE_DEVICE_CHECK with a key id of 31 bytes", "bypassMalformed",
               apple_fields(ao, key_id=base64.b64encode(bytes(31)).decode()))
    add_redeem("§10.5 step 1: APPLE_DEVICE_CHECK with a key id that is not base64", "bypassMalformed", apple_fields(ao, key_id="not base64!"))
    add_redeem("§10.5 step 1: APPLE_DEVICE_CHECK with an assertion that is not base64", "bypassMalformed", apple_fields(ao, response="a*b"))
    add_redeem("§10.5 step 1: APPLE_DEVICE_CHECK with an assertion of padding alone", "bypassMalformed", apple_fields(ao, response="===="))
    # steps 2-5 of the platform types (their answers are checked at step 6, which these vectors do not reach)
    add_redeem("§10.5 step 3: APPLE_DEVICE_CHECK (its assertion base64url, unpadded) to an expired offer", "bypassExpired",
               apple_fields(ao, response=ASSERTION.rstrip("=").replace("+", "-").replace("/", "_")), now=ISSUED + 65000)
    add_redeem("§10.5 step 2: APPLE_DEVICE_CHECK to a forged offer", "bypassNonceMismatch",
               apple_fields(craft(key="challengeKeyImpostor", d=0, k=0)))
    add_redeem("§10.5 step 4: APPLE_DEVICE_CHECK to an offer of another bucket", "bypassNonceMismatch", apple_fields(ao), bucket="SEARCH")
    add_redeem("§10.5 step 5: APPLE_DEVICE_CHECK to an offer of another key", "bypassNonceMismatch", apple_fields(ao), signed_by="clientOther")
    ap = offer("ANDROID_PLAY_INTEGRITY")
    add_redeem("§10.5 step 2: ANDROID_PLAY_INTEGRITY to an offer of an oct key removed from the set", "bypassNonceMismatch",
               android_fields(offer("ANDROID_PLAY_INTEGRITY", key="challengeKeyOld")))
    add_redeem("§10.5 step 3: ANDROID_PLAY_INTEGRITY to an expired offer", "bypassExpired", android_fields(ap), now=ISSUED + 65000)
    add_redeem("§10.5 step 4: ANDROID_PLAY_INTEGRITY to an offer of another origin", "bypassNonceMismatch", android_fields(ap),
               origin="https://www.example.com")
    add_redeem("§10.5 step 5: ANDROID_PLAY_INTEGRITY to a bound offer on an unsigned request", "bypassNonceMismatch", android_fields(ap),
               signed_by=None)
    # step 2
    add_redeem("§10.5 step 2: a site key whose tag has one bit flipped", "bypassNonceMismatch", pow_fields(q[:-1] + bytes([q[-1] ^ 1])))
    add_redeem("§10.5 step 2: an offer of an unknown kid", "bypassNonceMismatch", pow_fields(craft(kid=b"challenge-2099")))
    add_redeem("§10.5 step 2: the kid of the server's key, tagged by another secret", "bypassNonceMismatch",
               pow_fields(craft(key="challengeKeyImpostor")))
    add_redeem("§10.5 step 2: a kid that names the server's OKP key", "bypassNonceMismatch", pow_fields(craft(kid=b"token-2026")))
    lv = bytearray(q)
    lv[5] = 0xFF
    add_redeem("§10.5 step 2: the pass levels raised after issue", "bypassNonceMismatch", pow_fields(bytes(lv)))
    # step 3
    add_redeem("§10.5 step 3: expired at issuedAt + ttl × 1000 + skew (default 5000)", "bypassExpired", pow_fields(p), now=ISSUED + 65000)
    add_redeem("§10.5 step 3: skew 0, expired at issuedAt + ttl × 1000", "bypassExpired", pow_fields(p), now=ISSUED + 60000, skew=0)
    add_redeem("§10.5 step 3: skew 60000, the last millisecond", "valid", pow_fields(p), now=ISSUED + 119999, skew=60000)
    add_redeem("§10.5 step 3: skew 60000, expired at issuedAt + ttl × 1000 + 60000", "bypassExpired", pow_fields(p), now=ISSUED + 120000,
               skew=60000)
    # step 4
    add_redeem("§10.5 step 4: an offer of another bucket", "bypassNonceMismatch", pow_fields(p), bucket="SEARCH")
    add_redeem("§10.5 step 4: bucket names are compared as bytes (login)", "bypassNonceMismatch", pow_fields(p), bucket="login")
    add_redeem("§10.5 step 4: an offer of the same bucket at another origin", "bypassNonceMismatch", pow_fields(p),
               origin="https://evil.example.com")
    add_redeem("§10.5 step 4: another port", "bypassNonceMismatch", pow_fields(p), origin="https://api.example.com:8443")
    add_redeem("§10.5 step 4: the origin in another spelling is the same origin", "valid", pow_fields(p),
               origin="HTTPS://API.EXAMPLE.COM:443/v1/login")
    # step 5
    add_redeem("§10.5 step 5: an offer bound to another key", "bypassNonceMismatch", pow_fields(p), signed_by="clientOther")
    add_redeem("§10.5 step 5: an offer bound to a key, answered by an unsigned request", "bypassNonceMismatch", pow_fields(p), signed_by=None)
    add_redeem("§10.5 step 5: an offer bound to a key, answered by a P-256 key's request", "bypassNonceMismatch", pow_fields(p),
               signed_by="clientP256")
    # step 6: SIGNCORE_DEVICE_KEY
    c = add_redeem("§10.5 step 6: a key the registry does not hold: notRegistered (deviceUnknown)", "bypassDeviceRejected", device_fields(dk),
                   devices={"clientOther": dict(format="signcore", status="active")})
    rejected(c, "notRegistered", "deviceUnknown")
    c = add_redeem("§10.5 step 6: an empty registry", "bypassDeviceRejected", device_fields(dk), devices={})
    rejected(c, "notRegistered", "deviceUnknown")
    c = add_redeem("§10.5 step 6: a revoked key: revoked (deviceRevoked)", "bypassDeviceRejected", device_fields(dk),
                   devices={"clientEd25519": dict(format="signcore", status="revoked")})
    rejected(c, "revoked", "deviceRevoked")
    c = add_redeem("§10.5 step 6: an App Attest record does not sign requests: notRegistered (deviceUnknown)", "bypassDeviceRejected",
                   device_fields(dk), devices={"clientEd25519": dict(format="apple-app-attest", status="active")})
    rejected(c, "notRegistered", "deviceUnknown")
    c = add_redeem("§10.5 step 6: a revoked App Attest record is not a signing key's either", "bypassDeviceRejected", device_fields(dk),
                   devices={"clientEd25519": dict(format="apple-app-attest", status="revoked")})
    rejected(c, "notRegistered", "deviceUnknown")
    c = add_redeem("§10.5 step 6: a format the deployment does not accept: attestationFailed (formatNotAccepted)", "bypassDeviceRejected",
                   device_fields(dk), formats=["apple-app-attest", "android-play-integrity"])
    rejected(c, "attestationFailed", "formatNotAccepted")
    c = add_redeem("§10.5 step 6: revoked before the format's check", "bypassDeviceRejected", device_fields(dk), formats=["apple-app-attest"],
                   devices={"clientEd25519": dict(format="signcore", status="revoked")})
    rejected(c, "revoked", "deviceRevoked")
    add_redeem("§10.5 step 6: a Play Integrity key, its format accepted alone", "valid", device_fields(dk), formats=["android-play-integrity"],
               devices={"clientEd25519": dict(format="android-play-integrity", status="active")})
    # step 6: SIGNCORE_POW
    j = offer(d=8, k=2)
    ja = solve(j, 8, 2)
    assert not answer_meets(j, 8, 2, bytes(16))
    add_redeem("§10.5 step 6: a proof of work answer of zeros", "bypassWrongAnswer", pow_fields(j, bytes(16)))
    add_redeem("§3.3 no splice: the counters swapped", "bypassWrongAnswer", pow_fields(j, ja[8:] + ja[:8]))
    add_redeem("§3.4 the last sub-solution wrong", "bypassWrongAnswer", pow_fields(j, ja[:8] + bytes(8)))
    firstbad = next(c for c in range(10 ** 6) if not meets_difficulty(sub_solution(pow_prefix(j), 0, c), 8))
    add_redeem("§3.4 the first sub-solution wrong", "bypassWrongAnswer", pow_fields(j, firstbad.to_bytes(8, "big") + ja[8:]))
    j2 = offer(d=8, k=2)
    assert not answer_meets(j, 8, 2, solve(j2, 8, 2))
    add_redeem("§3.3 the answer of another offer", "bypassWrongAnswer", pow_fields(j, solve(j2, 8, 2)))
    add_redeem("§3.2 d 8: the smallest counters", "valid", pow_fields(j))
    # step 7
    add_redeem("§10.5 step 7: an offer answered already", "bypassReplayed", pow_fields(p), redeemed=[challenge_id(p).hex()])
    add_redeem("§10.5 step 7: a device key's offer answered already", "bypassReplayed", device_fields(dk), redeemed=[challenge_id(dk).hex()])
    # the order of adjacent steps
    forged = q[:-1] + bytes([q[-1] ^ 1])
    add_redeem("§10.5 order: step 1 before step 2 (an answer one byte short to a forged offer)", "bypassMalformed",
               pow_fields(forged, qa[:-1]))
    add_redeem("§10.5 order: step 2 before step 3 (forged and expired)", "bypassNonceMismatch", pow_fields(forged, qa), now=ISSUED + 65000)
    add_redeem("§10.5 order: step 3 before step 4 (expired, another bucket)", "bypassExpired", pow_fields(p), now=ISSUED + 65000,
               bucket="SEARCH")
    add_redeem("§10.5 order: step 3 before step 5 (expired, another key)", "bypassExpired", pow_fields(p), now=ISSUED + 65000,
               signed_by="clientOther")
    add_redeem("§10.5 order: step 5 before step 6 (another key, a wrong answer)", "bypassNonceMismatch", pow_fields(j, bytes(16)),
               signed_by="clientOther")
    add_redeem("§10.5 order: step 5 before step 6 (another key, not registered)", "bypassNonceMismatch", device_fields(dk, keys["clientP256"].thumbprint),
               signed_by="clientP256")
    add_redeem("§10.5 order: step 3 before step 6 (expired, a wrong answer)", "bypassExpired", pow_fields(j, bytes(16)), now=ISSUED + 65000)
    add_redeem("§10.5 order: step 6 before step 7 (a wrong answer to an offer answered already)", "bypassWrongAnswer",
               pow_fields(j, bytes(16)), redeemed=[challenge_id(j).hex()])
    c = add_redeem("§10.5 order: step 6 before step 7 (revoked, answered already)", "bypassDeviceRejected", device_fields(dk),
                   redeemed=[challenge_id(dk).hex()], devices={"clientEd25519": dict(format="signcore", status="revoked")})
    rejected(c, "revoked", "deviceRevoked")
    add_redeem("§10.5 order: step 3 before step 7 (expired, answered already)", "bypassExpired", pow_fields(p), now=ISSUED + 65000,
               redeemed=[challenge_id(p).hex()])

    # ---- rejection cases (§10.5 step 6): a refusal of the device flow -> the bypass refusal
    for code in DEVICE_CODES + ("unavailable", "attestationMalformed"):
        want = {"platformTokenMalformed": "bypassMalformed", "nonceMismatch": "bypassNonceMismatch"}.get(
            code, "bypassDeviceRejected" if code in DEVICE_CODES else code)
        add("rejection", "§10.5 step 6: %s" % code, want, dict(deviceError=code))

    # ---- pass cases (§10.6)
    def mint(levels=PASS, issued=ISSUED, ttl=300, client="clientEd25519", bucket=LOGIN, origin=ORIGIN, key="tokenKey") -> bytes:
        return issue_pass([keys[key]], levels, issued, ttl, keys[client], origin, bucket, next(token_ids))

    CHECKERS = ("challengeKey", "tokenKey")

    def add_pass(comment, want, field, server=CHECKERS, client="clientEd25519", bucket=LOGIN, origin=ORIGIN, now=ISSUED + 60000, skew=None,
                 levels=PASS, expect=None):
        field = b64u(field) if isinstance(field, bytes) else field
        inputs = dict(serverKeys=list(server), field=field, clientKey=client, bucket=bucket, origin=origin, now=now)
        if skew is not None:
            inputs["skew"] = skew
        inputs["passLevels"] = levels
        case = add("pass", comment, want, inputs)
        if expect is not None:
            assert case["expected"]["tokenID"] == expect[79:95].hex(), comment
        return case

    t = mint()
    tt = b64u(t)
    add_pass("§10.6 a pass valid for its bucket: its tokenID", "valid", t, expect=t)
    add_pass("§10.6 an ES256 pass (a P-256 server key)", "valid", mint(key="tokenKeyP256"), server=("tokenKey", "tokenKeyP256"))
    add_pass("§10.6 a pass of the old token key, still in the set", "valid", mint(key="tokenKeyOld"), server=("tokenKey", "tokenKeyOld"))
    add_pass("§10.6 the origin in another spelling is the same origin", "valid", t, origin="https://API.example.com:443/login")
    add_pass("§10.6 a pass holding more levels than the pass levels", "valid", mint(levels=PASS | 1))
    add_pass("§10.6 a pass holding the pass levels of two levels", "valid", mint(levels=3 << 14), levels=3 << 14)
    add_pass("§10.6 a pass lacking the pass levels", "none", mint(levels=1 << 14))
    add_pass("§10.6 a pass lacking one of two pass levels", "none", t, levels=3 << 14)
    add_pass("§10.6 within its time: now = issuedAt - skew", "valid", t, now=ISSUED - 5000)
    add_pass("§10.6 not yet valid: now = issuedAt - skew - 1", "none", t, now=ISSUED - 5001)
    add_pass("§10.6 the last millisecond before issuedAt + ttl × 1000 + skew", "valid", t, now=ISSUED + 304999)
    add_pass("§10.6 expired at issuedAt + ttl × 1000 + skew", "none", t, now=ISSUED + 305000)
    add_pass("§10.6 skew 0: now = issuedAt", "valid", t, now=ISSUED, skew=0)
    add_pass("§10.6 skew 0: not yet valid at issuedAt - 1", "none", t, now=ISSUED - 1, skew=0)
    add_pass("§10.6 skew 0: the last millisecond", "valid", t, now=ISSUED + 299999, skew=0)
    add_pass("§10.6 skew 0: expired at issuedAt + ttl × 1000", "none", t, now=ISSUED + 300000, skew=0)
    add_pass("§10.6 skew 60000: expired at issuedAt + ttl × 1000 + 60000", "none", t, now=ISSUED + 360000, skew=60000)
    add_pass("§10.6 skew 60000: valid from issuedAt - 60000", "valid", t, now=ISSUED - 60000, skew=60000)
    add_pass("§10.6 a pass of another bucket", "none", t, bucket="SEARCH")
    add_pass("§10.6 a pass of the bucket at another origin", "none", t, origin="https://evil.example.com")
    add_pass("§10.6 a pass of another key", "none", t, client="clientOther")
    add_pass("§10.6 a pass with one bit of its signature flipped", "none", t[:-1] + bytes([t[-1] ^ 1]))
    add_pass("§10.6 a pass of a token key removed from the set", "none", mint(key="tokenKeyOld"))
    add_pass("§10.6 a pass whose kid names no key of the set (a set without it)", "none", t, server=("challengeKey", "tokenKeyP256"))
    oct_named = token_body(PASS, ISSUED, 300, key_thumbprint(ED), bucket_digest(ORIGIN, LOGIN), next(token_ids), b"challenge-2026")
    add_pass("§10.6 a pass whose kid names the server's oct key", "none", oct_named + sign_message(keys["tokenKey"], TOKEN_CONTEXT, oct_named)[1])
    att = issue_token([keys["tokenKey"]], PASS, ISSUED, 300, ED, ORIGIN, next(token_ids))
    add_pass("§10.6 an attestation token (§5) is no pass: its origin field is the origin digest", "none", att)
    add_pass("§10.6 a member that does not parse is ignored, a later valid one taken", "valid", "AAAA," + tt, expect=t)
    add_pass("§10.6 passes of other buckets before the valid one", "valid",
             ",".join([b64u(mint(bucket="SEARCH")), b64u(mint(bucket="UPLOAD")), b64u(mint(client="clientOther")), tt]), expect=t)
    add_pass("§10.6 spaces around the commas", "valid", "AAAA ,  " + tt + " , AAAA", expect=t)
    add_pass("§10.6 spaces before and after the field's only pass", "valid", "   " + tt + "  ", expect=t)
    add_pass("§10.6 5 members: the field is ignored, even with a valid pass first", "none", ",".join([tt] + ["AAAA"] * 4))
    add_pass("§10.6 4 members: read", "valid", ",".join(["AAAA"] * 3 + [tt]), expect=t)
    add_pass("§10.6 a field of 4112 bytes is read", "valid", tt + " " * (4112 - len(tt)), expect=t)
    add_pass("§10.6 a field of 4113 bytes is ignored", "none", tt + " " * (4113 - len(tt)))
    add_pass("§10.6 an empty field", "none", "")
    add_pass("§10.6 a pass with padding does not parse", "none", tt + "=")

    # ---- attest cases (§4.2): an offer is never redeemed at the attest endpoint
    for what, o in (("with work", offer()), ("without work", offer("SIGNCORE_DEVICE_KEY"))):
        add("attest", "§4.2 an offer %s is not redeemed at the attest endpoint" % what, "attestationMalformed",
            dict(serverKeys=list(SERVER), body='{"challenge":"%s","answer":"%s"}' % (b64u(o), b64u(solve(o, o[2], o[3]))),
                 clientKey="clientEd25519", origin=ORIGIN, now=NOW))

    # ---- action cases (§10.9)
    for advice in ("attest", "bypass", "register", "reSign", "refreshKeys", "resyncClock", "retryLater", "fixRequest", "fixConfiguration",
                   "updateClient", "solveCaptcha", "Attest", ""):
        add("action", "§10.9 %s" % (advice or "an empty advice"), "valid", dict(advice=advice))

    number = 0
    for name in RATE_SECTIONS:
        for case in sections[name]:
            number += 1
            case["tcId"] = number
    return dict({"spec": "SignCore/3 attestation 1, rate limits", "algorithm": "ratelimit",
                 "header": "docs/ATTEST.md §10.10. gcra: a limit and request times (ns) -> T, τ and one verdict per request. offer: "
                           "issue -> bucketDigest, body, siteKey, id (answer: the smallest counters, when solve is true). redeem: "
                           "an answer's fields -> the offer id recorded and the pass, or the error (reason and cause for "
                           "bypassDeviceRejected). rejection: a device flow's refusal -> the bypass refusal. pass: a signcore-rate-pass "
                           "field -> the tokenID of the pass taken, or none. attest: attest requests of offers, as attest.json's redeem "
                           "cases. action: an advice -> its action. skew absent: 5000. Times in milliseconds but gcra's",
                 "numberOfTests": number, "keys": RATE_KEYS}, **sections)


# ---- docs/HTTPSIG.md: SignCore's profile of RFC 9421 (HTTP Message Signatures) and RFC 9530 -----
# Written from docs/HTTPSIG.md's text alone. RFC 8941 structured fields are parsed and serialised
# by http_sfv (PyPI), held to RFC 8941: it also reads RFC 9651's Dates and Display Strings, which
# are no RFC 8941 values, and decodes byte sequences leniently (`:YQ==YQ==:`), so those two
# readers are replaced below.
import http_sfv
from http_sfv import item as sfv_item, byteseq as sfv_byteseq

class SfBytes(bytes):
    """An RFC 8941 byte sequence as read, with whether its text was padded base64 (RFC 4648 §4)."""
    padded = False


def sf_byte_sequence(data: bytes):
    """RFC 8941 §4.2.7: base64 between colons. Missing padding is synthesised and non-zero pad bits
    are accepted (its two SHOULDs); a byte outside base64's alphabet, `=` inside the text, more `=`
    than the length needs, or a length of 1 modulo 4 does not decode (ValueError)."""
    end = data.index(b":", 1)
    text = data[1:end]
    bare = text.rstrip(b"=")
    if len(text) - len(bare) > -len(bare) % 4:
        raise ValueError("more padding than the length needs")
    value = SfBytes(base64.b64decode(bare + b"=" * (-len(bare) % 4), validate=True))
    value.padded = len(text) % 4 == 0
    return end + 1, value


sfv_item._parse_map[ord(":")] = sf_byte_sequence
sfv_item._ser_map[SfBytes] = sfv_byteseq.ser_byteseq
for _start in b"@%":  # RFC 9651's Date and Display String: not RFC 8941
    sfv_item._parse_map.pop(_start, None)


def parse_sf(text: str, kind: str):
    """RFC 8941 §4.2: `text` as a dictionary, a list or an item; ValueError when it is not one. An
    empty (or all-space) text is an empty dictionary or list, and no item."""
    value = {"dictionary": http_sfv.Dictionary, "list": http_sfv.List, "item": http_sfv.Item}[kind]()
    if kind == "item" or text.strip(" "):
        try:
            value.parse(text.encode())
        except Exception as e:  # http_sfv raises ValueError, and IndexError for some truncated lists
            raise ValueError("not a structured field") from e
    return value


def serialise_sf(value) -> str:
    """RFC 8941 §4.1; an empty dictionary or list is the empty text."""
    return str(value) if not isinstance(value, (http_sfv.Dictionary, http_sfv.List)) or len(value) else ""


# §1, §3.1: the algorithms, by their RFC 9421 names, and the key algorithm (SPEC §6) of each
SIGNATURE_ALGORITHMS = {"hmac-sha256": "HS256", "ed25519": "EdDSA", "ecdsa-p256-sha256": "ES256"}
# §1, §2.2
DERIVED_COMPONENTS = ("@method", "@target-uri", "@authority", "@scheme", "@request-target", "@path", "@query", "@query-param",
                      "@status")
FIELD_NAME_BYTES = set(b"abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~")  # lower-case tchar (RFC 9110 §5.6.2)
# §2.3: the fields `sf` knows, and their types
SF_FIELD_TYPES = dict({n: "dictionary" for n in ("content-digest", "repr-digest", "want-content-digest", "want-repr-digest", "signature",
                                               "signature-input", "accept-signature", "signature-agent", "priority", "example-dict")},
                      **{n: "list" for n in ("cache-status", "proxy-status", "accept-ch", "example-list")}, **{"example-item": "item"})
DEFAULT_PORTS = {"https": ":443", "http": ":80"}  # §2.3 @authority
FORM_SAFE = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789*-._")  # §2.3 @query-param
SIGNATURE_PARAMS_LINE = b'"@signature-params": '  # §2.5, §3.3
# §2.6 limits
MAX_SIGNATURE_FIELD = 8192
MAX_SIGNATURES = 8
MAX_COMPONENTS = 32
MAX_PARAMETER_TEXT = 256
MAX_FIELD_NAME = 128
MAX_SF_FIELD = 16384
MAX_DIGEST_FIELD = 8192
MAX_BASE = 65536
# §4
DIGEST_ALGORITHMS = {"sha-256": hashlib.sha256, "sha-512": hashlib.sha512}
DIGEST_LENGTHS = {"sha-256": 32, "sha-512": 64}
RFC9421_NONCE = b"SignCore/3 rfc9421 nonce\n"  # §5.3
RFC9421_NONCE_BYTES = 16


def field_lines(fields, name: str):
    """A field's lines, in order (field names compare case-insensitively)."""
    return [value for n, value in fields if n.lower() == name]


def component_identifier(item):
    """§2.2: an RFC 8941 item as a component identifier -> (name, parameters, as written)."""
    if type(item.value) is not str:
        raise SpecError("componentInvalid")
    name, params = item.value, dict(item.params)
    for k, v in params.items():
        if not (k in ("sf", "bs", "req") and v is True or k in ("key", "name") and type(v) is str):
            raise SpecError("componentInvalid")
    if name.startswith("@"):
        if name not in DERIVED_COMPONENTS or any(k in params for k in ("sf", "key", "bs")) or ("name" in params) != (name == "@query-param"):
            raise SpecError("componentInvalid")
    elif not 1 <= len(name) <= MAX_FIELD_NAME or any(c not in FIELD_NAME_BYTES for c in name.encode()) or "name" in params \
            or "bs" in params and ("sf" in params or "key" in params):
        raise SpecError("componentInvalid")
    return name, params, str(item)


def identifier_key(component):
    """§2.1 step 3: the same identifier is the same name and the same parameters, in any order."""
    return component[0], frozenset(component[1].items())


def written_identifier(text: str):
    """A component identifier as a policy writes it (`"content-type"`, `"@query-param";name="id"`)."""
    return component_identifier(parse_sf(text, "item"))  # a policy's own identifiers are configuration: one that does not parse raises


def read_signature_fields(fields):
    """§2.1: the entries of Signature-Input, in order, as (label, components, inner list, signature
    bytes or None)."""
    inputs = field_lines(fields, "signature-input")
    if not inputs:
        raise SpecError("signatureNotFound")
    texts = (", ".join(inputs), ", ".join(field_lines(fields, "signature")))
    if any(len(t.encode()) > MAX_SIGNATURE_FIELD for t in texts):
        raise SpecError("signatureFieldsMalformed")
    try:
        declared, signatures = [parse_sf(t, "dictionary") for t in texts]
    except ValueError:
        raise SpecError("signatureFieldsMalformed")
    if len(declared) > MAX_SIGNATURES or len(signatures) > MAX_SIGNATURES:
        raise SpecError("signatureFieldsMalformed")
    entries = []
    for label, member in declared.items():
        if not isinstance(member, http_sfv.InnerList) or len(member) > MAX_COMPONENTS:
            raise SpecError("signatureFieldsMalformed")
        components = [component_identifier(item) for item in member]
        if len({identifier_key(c) for c in components}) != len(components):
            raise SpecError("componentInvalid")
        for name, value in member.params.items():
            if name in ("created", "expires") and (type(value) is not int or value < 0):
                raise SpecError("signatureFieldsMalformed")
            if name in ("nonce", "alg", "keyid", "tag") and (type(value) is not str or len(value) > MAX_PARAMETER_TEXT):
                raise SpecError("signatureFieldsMalformed")
        sig = signatures.get(label)
        ok = isinstance(sig, http_sfv.Item) and isinstance(sig.value, SfBytes) and sig.value.padded and not sig.params
        entries.append((label, components, member, bytes(sig.value) if ok else None))
    return entries


def form_decode(text: bytes) -> bytes:
    """§2.3: `+` is a space, `%` and two hex digits a byte, any other byte itself."""
    out, i = bytearray(), 0
    while i < len(text):
        h = text[i + 1:i + 3]
        if text[i] == 0x25 and len(h) == 2 and all(c in HEX for c in h):
            out.append(int(h, 16))
            i += 3
        else:
            out.append(0x20 if text[i] == 0x2B else text[i])
            i += 1
    return bytes(out)


def form_encode(data: bytes) -> str:
    """§2.3: every byte but A-Z a-z 0-9 * - . _ as % and two upper-case hex digits."""
    return "".join(chr(c) if c in FORM_SAFE else "%%%02X" % c for c in data)


def query_param(query: str, name: str) -> str:
    """§2.3 @query-param: the value of the one parameter whose decoded name is the decoded `name`."""
    wanted = form_decode(name.encode())
    pieces = (piece.partition(b"=") for piece in query.encode().split(b"&") if piece)
    values = [form_decode(v) for k, _, v in pieces if form_decode(k) == wanted]
    if not values:
        raise SpecError("componentMissing")
    if len(values) > 1:
        raise SpecError("componentInvalid")
    (value,) = values
    return form_encode(value)


def derived_value(name: str, params, request) -> str:
    """§2.3: a derived component of a request."""
    scheme = request["scheme"].lower()
    authority = request["authority"].lower().removesuffix(DEFAULT_PORTS.get(scheme, ""))
    target = request["target"]
    path, _, query = target.partition("?")
    if name == "@query-param":
        return query_param(query, params["name"])
    return {"@method": request["method"], "@authority": authority, "@scheme": scheme, "@target-uri": scheme + "://" + authority + target,
            "@request-target": target, "@path": path, "@query": "?" + query}[name]


def component_value(component, message) -> str:
    """§2.3: a component's value in `message`: a request (method, scheme, authority, target,
    fields), or a response (status, fields, and its request or None)."""
    name, params, _ = component
    if "req" in params:
        if "status" not in message:
            raise SpecError("componentInvalid")
        message = message["request"]
        if message is None:
            raise SpecError("componentMissing")
    if name.startswith("@"):
        if "status" in message:
            if name != "@status":
                raise SpecError("componentInvalid")
            return "%03d" % message["status"]
        if name == "@status":
            raise SpecError("componentMissing")
        return derived_value(name, params, message)
    lines = [line.strip(" \t") for line in field_lines(message["fields"], name)]
    if not lines:
        raise SpecError("componentMissing")
    if "bs" in params:
        return ", ".join(":%s:" % base64.b64encode(line.encode()).decode() for line in lines)
    value = ", ".join(lines)
    if "key" not in params and "sf" not in params:
        return value
    if len(value.encode()) > MAX_SF_FIELD:
        raise SpecError("componentInvalid")
    kind = "dictionary" if "key" in params else SF_FIELD_TYPES.get(name)
    if kind is None:
        raise SpecError("componentInvalid")
    try:
        parsed = parse_sf(value, kind)
    except ValueError:
        raise SpecError("componentInvalid")
    if "key" not in params:
        return serialise_sf(parsed)
    if params["key"] not in parsed:
        raise SpecError("componentMissing")
    return str(parsed[params["key"]])


def signature_base(entry, message) -> bytes:
    """§2.4-§2.5: the base of an entry over `message`."""
    base = b""
    for component in entry[1]:
        value = component_value(component, message).encode()
        if any(c < 0x20 and c != 0x09 or c == 0x7F for c in value):
            raise SpecError("componentInvalid")
        base += component[2].encode() + b": " + value + b"\n"
    base += SIGNATURE_PARAMS_LINE + str(entry[2]).encode()
    if len(base) > MAX_BASE:
        raise SpecError("signatureFieldsMalformed")
    return base


def is_signature_base(data: bytes) -> bool:
    """§3.3: the inputs a key signs or verifies as signature bases."""
    return len(data) <= MAX_BASE and data[:1] == b'"' and data[data.rfind(b"\n") + 1:].startswith(SIGNATURE_PARAMS_LINE)


def sign_base(key: Key, base: bytes) -> bytes:
    """§3.1, §3.3."""
    if not is_signature_base(base):
        raise SpecError("invalidInput")
    return key.sign(base)


def verify_base(key: Key, base: bytes, signature: bytes) -> bool:
    """§3.1, §3.3: a signature of another length does not verify."""
    return is_signature_base(base) and len(signature) == LENGTHS[key.alg] and key.verify(base, signature)


def content_digest(body: bytes, algorithms=("sha-256",)) -> str:
    """§4.1."""
    return ", ".join("%s=:%s:" % (a, base64.b64encode(DIGEST_ALGORITHMS[a](body).digest()).decode()) for a in algorithms)


def claimed_digests(fields):
    """§4.2 steps 1-4: the claimed digests, in order, as (algorithm, bytes); None without a field."""
    lines = field_lines(fields, "content-digest")
    if not lines:
        return None
    text = ", ".join(lines)
    if len(text.encode()) > MAX_DIGEST_FIELD:
        raise SpecError("contentDigestUnsupported")
    try:
        members = parse_sf(text, "dictionary")
    except ValueError:
        raise SpecError("contentDigestUnsupported")
    claimed = []
    for name, member in members.items():
        if name in DIGEST_LENGTHS:
            if not (isinstance(member, http_sfv.Item) and isinstance(member.value, SfBytes) and member.value.padded
                    and len(member.value) == DIGEST_LENGTHS[name]):
                raise SpecError("contentDigestUnsupported")
            claimed.append((name, bytes(member.value)))
    if not claimed:
        raise SpecError("contentDigestUnsupported")
    return claimed


def digests_match(claimed, body: bytes) -> bool:
    """§4.2 step 5: the content digested (§4.1) with the claimed algorithms, in their order, is the claimed list."""
    return content_digest(body, [a for a, _ in claimed]) == ", ".join("%s=:%s:" % (a, base64.b64encode(v).decode()) for a, v in claimed)


def policy_components(policy):
    """§5.1: the required components, as written."""
    return [written_identifier(text) for text in policy["requiredComponents"]]


def select_entry(entries, policy):
    """§5.2 step 2; a policy setting both a label and a tag selects the entry of that label only if
    it carries that tag."""
    label, tag = policy["label"], policy["tag"]
    chosen = [e for e in entries if (label is None or e[0] == label) and (tag is None or e[2].params.get("tag") == tag)]
    if not chosen:
        raise SpecError("signatureNotFound")
    return chosen[0]


def covers(components, name: str) -> bool:
    """§5.1: some covered component has that name (whatever its parameters)."""
    return any(c[0] == name for c in components)


def check_coverage(components, policy, fields, body: bytes):
    """§5.2 step 5."""
    if policy["coverage"] == "agent":
        enough = covers(components, "@authority") and (not field_lines(fields, "signature-agent") or covers(components, "signature-agent"))
    else:
        enough = covers(components, "@method") and (covers(components, "@target-uri") or covers(components, "@authority") and (
            covers(components, "@request-target") or covers(components, "@path") and covers(components, "@query"))) and (
            not body or covers(components, "content-digest"))
    written = {identifier_key(c) for c in components}
    if not enough or any(identifier_key(r) not in written for r in policy_components(policy)):
        raise SpecError("headerNotCovered")


def valid_authority(authority: str) -> bool:
    """§2.3: `host[:port]` as SPEC §2.4-§2.5 read it, and nothing after it."""
    if any(c in b"/?#" for c in authority.encode()):
        return False
    try:
        canonical_url(b"https://" + authority.encode() + b"/")
    except SpecError:
        return False
    return True


def origin_form(target: str) -> bool:
    """§2.3: an origin-form path (SIGND.md's reading: `/` first; no `#`, `\\`, space, control or
    non-ASCII byte; each `%` followed by two hex digits)."""
    t = target.encode()
    if not t.startswith(b"/") or any(c <= 0x20 or c >= 0x7F or c in b"#\\" for c in t):
        return False
    return all(len(h) == 2 and all(x in HEX for x in h) for h in (t[i + 1:i + 3] for i, c in enumerate(t) if c == 0x25))


def addressed(origin, request):
    """§2.3, §5.2 step 8: the request as the server reads it, with the origin's scheme and, when it
    fixes one, its authority."""
    if field_lines(request["fields"], "host"):
        raise SpecError("invalidHeader")
    if request["authority"] is None or not valid_authority(request["authority"]) or not origin_form(request["target"]):
        raise SpecError("invalidURL")
    return {"method": request["method"], "scheme": origin["scheme"], "authority": origin["authority"] or request["authority"],
            "target": request["target"], "fields": request["fields"]}


def replay_nonce(nonce: str) -> bytes:
    """§5.3."""
    return hashlib.sha256(RFC9421_NONCE + nonce.encode()).digest()[:RFC9421_NONCE_BYTES]


def verify_request(keys, policy, now, origin, request, body: bytes, seen):
    """§5.2: `keys` by key id, `seen` the (key id, replay nonce) pairs already recorded -> the
    identity, with the replay nonce recorded (or None) and until when it is kept."""
    entry = select_entry(read_signature_fields(request["fields"]), policy)
    params = entry[2].params
    if entry[3] is None:
        raise SpecError("signatureFieldsMalformed")
    alg = params.get("alg")
    if alg is not None and alg not in SIGNATURE_ALGORITHMS:
        raise SpecError("signatureAlgorithmUnsupported")
    key = keys.get(params.get("keyid"))
    if key is None:
        raise SpecError("unknownKey")
    if alg is not None and SIGNATURE_ALGORITHMS[alg] != key.alg:
        raise SpecError("algorithmMismatch")
    check_coverage(entry[1], policy, request["fields"], body)
    created, expires = params.get("created"), params.get("expires")
    if created is None:
        raise SpecError("signatureCreatedMissing")
    if created > now + policy["skew"]:
        raise SpecError("notYetValid")
    if now > created + policy["maxAge"] or expires is not None and now > expires:
        raise SpecError("expired")
    if policy["nonce"] == "required" and "nonce" not in params:
        raise SpecError("signatureNonceMissing")
    if not verify_base(key, signature_base(entry, addressed(origin, request)), entry[3]):
        raise SpecError("badSignature")
    claimed = claimed_digests(request["fields"])
    if claimed is not None and not digests_match(claimed, body):
        raise SpecError("contentDigestMismatch")
    nonce = replay_nonce(params["nonce"]) if "nonce" in params else None
    if (key.kid, nonce) in seen:
        raise SpecError("replayed")
    expiry = created + policy["maxAge"] if expires is None else min(expires, created + policy["maxAge"])
    return {"format": "rfc9421-agent" if policy["coverage"] == "agent" else "rfc9421", "keyID": key.kid,
            "algorithm": next(n for n, a in SIGNATURE_ALGORITHMS.items() if a == key.alg), "created": created, "expires": expiry,
            "covered": [c[2] for c in entry[1]], "replayNonce": None if nonce is None else nonce.hex(),
            "rememberUntil": None if nonce is None else expiry + policy["skew"]}


def accept_signature(policy, method: str) -> str:
    """§5.5: the Accept-Signature field of a 401 refusal."""
    if policy["coverage"] == "agent":
        names = ['"@authority"']
    else:
        names = ['"@method"', '"@target-uri"'] + (['"content-digest"'] if method in BODY_METHODS else [])
    components = [written_identifier(n) for n in names]
    for r in policy_components(policy):
        if identifier_key(r) not in {identifier_key(c) for c in components}:
            components.append(r)
    inner = http_sfv.InnerList([parse_sf(c[2], "item") for c in components])
    inner.params["created"] = True
    if policy["nonce"] == "required":
        inner.params["nonce"] = True
    inner.params["keyid"] = True
    if policy["tag"] is not None:
        inner.params["tag"] = policy["tag"]
    return "%s=%s" % (policy["label"] or "sig1", inner)


def httpsig_outcome(run, name) -> dict:
    try:
        return {name: run()}
    except SpecError as e:
        return {"error": e.code}


def httpsig_message(m):
    """A vector's message: a request, or a response (status, fields, its request or null)."""
    if m is None:
        return None
    if "status" in m:
        return {"status": m["status"], "fields": m["fields"], "request": httpsig_message(m["request"])}
    return {n: m[n] for n in ("method", "scheme", "authority", "target", "fields")}


def httpsig_base_case(keys: dict, tc: dict) -> dict:
    def run():
        fields = [["Signature-Input", line] for line in tc["signatureInput"]] + [["Signature", line] for line in tc.get("signature", [])]
        chosen = [e for e in read_signature_fields(fields) if tc["label"] is None or e[0] == tc["label"]]
        if not chosen:
            raise SpecError("signatureNotFound")
        return signature_base(chosen[0], httpsig_message(tc["message"])).decode()
    return httpsig_outcome(run, "base")


def httpsig_sign_case(keys: dict, tc: dict) -> dict:
    return httpsig_outcome(lambda: b64u(sign_base(keys[tc["key"]], tc["base"].encode())), "signature")


def httpsig_verify_case(keys: dict, tc: dict) -> dict:
    """The verifier's key set: the HMAC key and the public parts of the Ed25519 and P-256 keys."""
    verifier = {keys[n].kid: keys[n] for n in ("hmac", "ed25519", "p256")}
    seen = {(kid, replay_nonce(nonce)) for kid, nonce in tc["seen"]}
    return httpsig_outcome(lambda: verify_request(verifier, tc["policy"], tc["now"], tc["origin"], tc["request"], unb64u(tc["body"]), seen),
                           "result")


def httpsig_digest_case(keys: dict, tc: dict) -> dict:
    def run():
        claimed = claimed_digests(tc["fields"])
        if claimed is None:
            return {"claimed": None, "matches": None}
        return {"claimed": [[a, base64.b64encode(v).decode()] for a, v in claimed], "matches": digests_match(claimed, unb64u(tc["body"]))}
    return httpsig_outcome(run, "result")


def httpsig_accept_case(keys: dict, tc: dict) -> dict:
    return {"field": accept_signature(tc["policy"], tc["method"])}


def httpsig_domain_case(keys: dict, tc: dict) -> dict:
    """Whether the Ed25519 key signs the input as a base, and verifies its own signature of it as one."""
    key, data = keys["ed25519"], unb64u(tc["input"])
    try:
        sign_base(key, data)
        taken = True
    except SpecError:
        taken = False
    return {"isBase": taken if verify_base(key, data, key.sign(data)) == taken else "sign and verify disagree"}


HTTPSIG_GROUPS = {"base": httpsig_base_case, "sign": httpsig_sign_case, "verify": httpsig_verify_case, "digest": httpsig_digest_case,
                  "accept": httpsig_accept_case, "domain": httpsig_domain_case}
HTTPSIG_OUTPUTS = {"base": ("base", "error"), "sign": ("signature", "error"), "verify": ("result", "error"), "digest": ("result", "error"),
                   "accept": ("field",), "domain": ("isBase",)}
HTTPSIG_CODES = ("signatureFieldsMalformed", "signatureNotFound", "componentMissing", "componentInvalid", "signatureNonceMissing",
                 "contentDigestMismatch", "contentDigestUnsupported", "signatureFormatsMixed", "signatureCreatedMissing",
                 "signatureAlgorithmUnsupported")
# RFC 9421 Appendix B.1.4, B.1.5 keys, and the request of B.2 (test-request)
RFC9421_HMAC = "uzvJfB4u3N0Jy4T7NZ75MDVcr8zSTInedJtkgcu46YW4XByzNJjxBdtjUkdJPBtbmHhIDi6pcl8jsasjlTMtDQ"
HTTPSIG_KEYS = {
    "hmac": jwk_for("oct", seed("httpsig HMAC key"), kid="hmac"),
    "ed25519": jwk_for("OKP", seed("httpsig Ed25519 seed")),
    "p256": jwk_for("EC", seed("httpsig P-256 key"), kid="p256"),
    "test-shared-secret": {"kty": "oct", "kid": "test-shared-secret", "k": RFC9421_HMAC},
    "test-key-ed25519": {"kty": "OKP", "crv": "Ed25519", "kid": "test-key-ed25519", "d": "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU",
                         "x": "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"},
}
RFC9421_REQUEST = {"method": "POST", "scheme": "https", "authority": "example.com", "target": "/foo?param=Value&Pet=dog", "fields": [
    ["Host", "example.com"], ["Date", "Tue, 20 Apr 2021 02:07:55 GMT"], ["Content-Type", "application/json"],
    ["Content-Digest", "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:"],
    ["Content-Length", "18"]]}
RFC9421_B25 = ('sig-b25=("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"',
               '"date": Tue, 20 Apr 2021 02:07:55 GMT\n"@authority": example.com\n"content-type": application/json\n"@signature-params": '
               '("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"',
               "pxcQw6G3AjtMBQjwo8XzkZf/bws5LelbaMk5rGIGtE8=")
RFC9421_B26 = ('sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"',
               '"date": Tue, 20 Apr 2021 02:07:55 GMT\n"@method": POST\n"@path": /foo\n"@authority": example.com\n"content-type": '
               'application/json\n"content-length": 18\n"@signature-params": ("date" "@method" "@path" "@authority" "content-type" '
               '"content-length");created=1618884473;keyid="test-key-ed25519"',
               "wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==")


def httpsig_codes() -> dict:
    """§6: the codes this document adds, with their status and advice."""
    return {name: {"code": CODES[name][0], "status": STATUS_OF[CODES[name][0]], "advice": CODES[name][1]} for name in HTTPSIG_CODES}


def generate_httpsig():
    keys = {n: Key(j) for n, j in HTTPSIG_KEYS.items()}
    groups = {name: [] for name in HTTPSIG_GROUPS}

    def add(group, comment, want, inputs):
        case = dict({"tcId": 0, "comment": comment}, **inputs)
        case.update(HTTPSIG_GROUPS[group](keys, case))
        got = case.get("error", case.get("isBase", "valid"))
        assert got == want, (group, comment, got, want)
        groups[group].append(case)
        return case

    # ---- base (§2): a message and Signature-Input -> the base or the code -----------------------------------------------------
    body = b'{"id":42,"note":"caf\xc3\xa9"}'
    request = {"method": "POST", "scheme": "https", "authority": "api.example.com", "target": "/v1/orders?id=42&sort=desc", "fields": [
        ["Content-Type", "application/json"], ["Content-Digest", content_digest(body)], ["Date", "Tue, 20 Apr 2021 02:07:56 GMT"],
        ["Cache-Control", "max-age=60"], ["Cache-Control", "must-revalidate"], ["X-Empty", ""],
        ["Example-Dict", "a=1,    b=2;x=1;y=2,   c=(a   b   c), d"], ["Example-Header", "value, with, lots"], ["Example-Header", "of, commas"]]}
    created = ";created=1790000000"

    def msg(**changes):
        return dict(request, **changes)

    def add_base(comment, want, components=None, params=created, message=None, label=None, inputs=None, signature=None):
        case = {"message": message or request, "signatureInput": inputs if inputs is not None else ["sig1=(%s)%s" % (components, params)]}
        if signature is not None:
            case["signature"] = signature
        case["label"] = label
        return add("base", comment, want, case)

    case = add_base("RFC 9421 B.2.5: hmac-sha256 over test-request", "valid", inputs=[RFC9421_B25[0]], message=RFC9421_REQUEST)
    assert case["base"] == RFC9421_B25[1]
    case = add_base("RFC 9421 B.2.6: ed25519 over test-request", "valid", inputs=[RFC9421_B26[0]], message=RFC9421_REQUEST)
    assert case["base"] == RFC9421_B26[1]
    response = {"status": 503, "fields": [
        ["Date", "Tue, 20 Apr 2021 02:07:56 GMT"], ["Content-Type", "application/json"], ["Content-Length", "62"],
        ["Content-Digest", "sha-512=:0Y6iCBzGg5rZtoXS95Ijz03mslf6KAMCloESHObfwnHJDbkkWWQz6PhhU9kxsTbARtY2PTBOzq24uJFpHsMuAg==:"]],
        "request": dict(RFC9421_REQUEST, fields=[RFC9421_REQUEST["fields"][i] for i in (0, 1, 3, 2, 4)])}
    case = add_base("RFC 9421 §2.4: a response covering its request's components with req", "valid", message=response, inputs=[
        'reqres=("@status" "content-digest" "content-type" "@authority";req "@method";req "@path";req "content-digest";req)'
        ';created=1618884479;keyid="test-key-ecc-p256"'])
    assert case["base"].startswith('"@status": 503\n"content-digest": sha-512=:0Y6iCBzGg5rZ') and '"@path";req: /foo\n' in case["base"]
    rfc = {"method": "POST", "scheme": "https", "authority": "www.example.com", "target": "/path?param=value", "fields": []}
    add_base("RFC 9421 §2.2: every derived component of a request but @query-param", "valid",
             '"@method" "@target-uri" "@authority" "@scheme" "@request-target" "@path" "@query"', message=rfc)
    add_base("RFC 9421 §2.2.8: @query-param, an empty value included", "valid",
             '"@query-param";name="baz" "@query-param";name="qux" "@query-param";name="param"',
             message=dict(rfc, target="/path?param=value&foo=bar&baz=batman&qux="))
    add_base("RFC 9421 §2.2.8: @query-param values decoded, then re-encoded (%0A, + as %20, a name with escapes)", "valid",
             '"@query-param";name="var" "@query-param";name="bar" "@query-param";name="fa%C3%A7ade%22%3A%20"',
             message=dict(rfc, target="/parameters?var=this%20is%20a%20big%0Amultiline%20value&bar=with+plus+whitespace"
                                      "&fa%C3%A7ade%22%3A%20=something"))
    rfc_fields = dict(rfc, fields=[["Host", "www.example.com"], ["Date", "Tue, 20 Apr 2021 02:07:56 GMT"],
                                   ["X-OWS-Header", "   Leading and trailing whitespace.   "], ["Cache-Control", "max-age=60"],
                                   ["Cache-Control", "   must-revalidate"], ["Example-Dict", " a=1,    b=2;x=1;y=2,   c=(a   b   c)"],
                                   ["X-Empty-Header", ""]])
    add_base("RFC 9421 §2.1: fields: lines trimmed, joined with ', ', an empty value", "valid",
             '"host" "date" "x-ows-header" "cache-control" "example-dict" "x-empty-header"', message=rfc_fields)
    add_base("RFC 9421 §2.1.1: sf re-serialises a dictionary", "valid", '"example-dict";sf', message=rfc_fields)
    rfc_dict = dict(rfc, fields=[["Example-Dict", " a=1, b=2;x=1;y=2, c=(a   b    c), d"]])
    add_base("RFC 9421 §2.1.2: key: an integer, a Boolean true, an item with parameters, an inner list", "valid",
             '"example-dict";key="a" "example-dict";key="d" "example-dict";key="b" "example-dict";key="c"', message=rfc_dict)
    add_base("RFC 9421 §2.1.3: bs: each line base64, joined with ', '", "valid", '"example-header";bs',
             message=dict(rfc, fields=[["Example-Header", "value, with, lots"], ["Example-Header", "of, commas"]]))

    # §2.3 derived components of a request
    add_base("§2.3 @authority in lower case without :443 for https; @target-uri with it", "valid", '"@authority" "@target-uri"',
             message=msg(authority="API.Example.COM:443"))
    add_base("§2.3 @authority without :80 for http", "valid", '"@authority" "@target-uri" "@scheme"',
             message=msg(scheme="http", authority="api.example.com:80"))
    add_base("§2.3 @authority keeps :80 for https", "valid", '"@authority" "@target-uri"', message=msg(authority="api.example.com:80"))
    add_base("§2.3 @authority keeps :443 for http", "valid", '"@authority" "@target-uri"',
             message=msg(scheme="http", authority="api.example.com:443"))
    add_base("§2.3 @authority keeps any other port (:8443 ends in 443)", "valid", '"@authority"', message=msg(authority="api.example.com:8443"))
    add_base("§2.3 @scheme in lower case, and in @target-uri; the default port of the lower-case scheme", "valid",
             '"@scheme" "@target-uri" "@authority"', message=msg(scheme="HTTPS", authority="api.example.com:443"))
    add_base("§2.3 @authority of an IPv6 literal with the default port", "valid", '"@authority"', message=msg(authority="[::1]:443"))
    add_base("§2.3 @method as received (not upper-cased)", "valid", '"@method"', message=msg(method="get"))
    add_base("§2.3 @query is ? alone without a query", "valid", '"@path" "@query" "@request-target"', message=msg(target="/v1/orders"))
    add_base("§2.3 @query is ? alone for an empty query", "valid", '"@path" "@query"', message=msg(target="/v1/orders?"))
    add_base("§2.3 @path ends at the first ?, @query is everything after it", "valid", '"@path" "@query" "@request-target"',
             message=msg(target="/a?b?c=d"))
    add_base("§2.3 @request-target is the target exactly as received (escapes kept)", "valid", '"@request-target" "@path"',
             message=msg(target="/a%2Fb/%7e?q=%c3%a9"))

    # §2.3 @query-param
    q = "/search?q=caf%c3%a9+au+lait&star=*&tilde=~&amp=%26&pct=%zz&tail=%4&eq=a=b=c&flag&&&a+b=1&x%20y=2&empty=&dup=1&dup=2&ID=3&=v"
    add_base("§2.3 @query-param: + is a space, escapes in either case, re-encoded in upper case", "valid", '"@query-param";name="q"',
             message=msg(target=q))
    add_base("§2.3 @query-param: * - . _ are kept, ~ is encoded", "valid", '"@query-param";name="star" "@query-param";name="tilde"',
             message=msg(target=q))
    add_base("§2.3 @query-param: %26 is data", "valid", '"@query-param";name="amp"', message=msg(target=q))
    add_base("§2.3 @query-param: a % without two hex digits is itself", "valid", '"@query-param";name="pct" "@query-param";name="tail"',
             message=msg(target=q))
    add_base("§2.3 @query-param: split at the first =", "valid", '"@query-param";name="eq"', message=msg(target=q))
    add_base("§2.3 @query-param: a piece without = has an empty value", "valid", '"@query-param";name="flag" "@query-param";name="empty"',
             message=msg(target=q))
    add_base("§2.3 @query-param: the name is compared decoded (+ and %20 are one space)", "valid",
             '"@query-param";name="a%20b" "@query-param";name="x+y"', message=msg(target=q))
    add_base("§2.3 @query-param: names are case-sensitive", "componentMissing", '"@query-param";name="id"', message=msg(target="/s?ID=3"))
    add_base("§2.3 @query-param: an empty name names the piece =v", "valid", '"@query-param";name=""', message=msg(target=q))
    add_base("§2.3 @query-param: empty pieces are skipped, not parameters with an empty name", "componentMissing", '"@query-param";name=""',
             message=msg(target="/s?&&a=1&"))
    add_base("§2.3 @query-param present twice", "componentInvalid", '"@query-param";name="dup"', message=msg(target=q))
    add_base("§2.3 @query-param absent", "componentMissing", '"@query-param";name="nope"', message=msg(target=q))
    add_base("§2.3 @query-param without a query", "componentMissing", '"@query-param";name="id"', message=msg(target="/v1/orders"))
    add_base("§2.3 @query-param of non-ASCII bytes and of an escaped quote", "valid", '"@query-param";name="n"',
             message=msg(target='/s?n=%22caf%C3%A9%22%FF'))

    # §2.3 fields
    add_base("§2.3 a field's lines joined with ', ', names compared case-insensitively", "valid", '"cache-control" "content-type"')
    add_base("§2.3 an empty line is an empty value", "valid", '"x-empty"')
    add_base("§2.3 an empty line joined with others", "valid", '"x-list"',
             message=msg(fields=[["X-List", "a"], ["X-List", ""], ["x-list", "b"]]))
    add_base("§2.3 a value holding a tab and non-ASCII bytes", "valid", '"x-text"', message=msg(fields=[["X-Text", "a\tb caf\u00e9 ~"]]))
    add_base("§2.3 a field absent", "componentMissing", '"content-type" "x-absent"')
    add_base("§2.3 key: a member of a field of no known type", "valid", '"x-dict";key="b"',
             message=msg(fields=[["X-Dict", "a=1, b=(x  y);p=?0"]]))
    add_base("§2.3 key: over the lines joined", "valid", '"example-dict";key="z"',
             message=msg(fields=[["Example-Dict", "a=1"], ["Example-Dict", "z=:YWJj:;q"]]))
    add_base("§2.3 key and sf together: the member", "valid", '"example-dict";key="b";sf "example-dict";sf;key="c"')
    add_base("§2.3 key: the member absent", "componentMissing", '"example-dict";key="e"')
    add_base("§2.3 key: a value that is no dictionary", "componentInvalid", '"content-type";key="a"')
    add_base("§2.3 key: the field absent", "componentMissing", '"x-absent";key="a"')
    add_base("§2.3 sf: every dictionary type", "valid", " ".join('"%s";sf' % n for n, t in SF_FIELD_TYPES.items() if t == "dictionary"),
             message=msg(fields=[[n, "a=1,  b=?0;x, c=(1   2);y=\"z\""] for n, t in SF_FIELD_TYPES.items() if t == "dictionary"]))
    add_base("§2.3 sf: every list type and the item type", "valid", " ".join('"%s";sf' % n for n, t in SF_FIELD_TYPES.items() if t != "dictionary"),
             message=msg(fields=[[n, "1.50;a=tok,   (\"x\"   y)" if t == "list" else "1.50;a=tok"] for n, t in SF_FIELD_TYPES.items()
                                 if t != "dictionary"]))
    add_base("§2.3 sf: a list's lines joined, then parsed", "valid", '"example-list";sf',
             message=msg(fields=[["Example-List", "a,  b"], ["Example-List", "c"]]))
    add_base("§2.3 sf: a field of no known type", "componentInvalid", '"x-dict";sf', message=msg(fields=[["X-Dict", "a=1"]]))
    add_base("§2.3 sf: a dictionary type whose value is a list", "componentInvalid", '"example-dict";sf',
             message=msg(fields=[["Example-Dict", "1, 2"]]))
    add_base("§2.3 sf: a list type whose value is a dictionary", "componentInvalid", '"example-list";sf',
             message=msg(fields=[["Example-List", "a=1"]]))
    add_base("§2.3 sf: the item type whose value is a list", "componentInvalid", '"example-item";sf',
             message=msg(fields=[["Example-Item", "1, 2"]]))
    add_base("§2.3 sf: RFC 9651's Date is no RFC 8941 value", "componentInvalid", '"example-item";sf',
             message=msg(fields=[["Example-Item", "@1659578233"]]))
    add_base("§2.3 sf: RFC 9651's Display String is no RFC 8941 value", "componentInvalid", '"example-dict";sf',
             message=msg(fields=[["Example-Dict", 'a=%"caf%c3%a9"']]))
    add_base("§2.3 sf: an empty dictionary is the empty value", "valid", '"example-dict";sf', message=msg(fields=[["Example-Dict", ""]]))
    add_base("§2.3 sf: an empty item does not parse", "componentInvalid", '"example-item";sf', message=msg(fields=[["Example-Item", ""]]))
    add_base("§2.3 sf: RFC 8941 §4.2.7, a byte sequence without padding or with non-zero pad bits is read, and padded", "valid",
             '"example-dict";sf', message=msg(fields=[["Example-Dict", "a=:YQ:, b=:YR==:, c=:YWI=:, d=::"]]))
    add_base("§2.3 sf: a byte sequence with = inside does not parse", "componentInvalid", '"example-dict";sf',
             message=msg(fields=[["Example-Dict", "a=:YQ==YQ==:"]]))
    add_base("§2.3 sf: a byte sequence of a length of 1 modulo 4 does not parse", "componentInvalid", '"example-dict";key="a"',
             message=msg(fields=[["Example-Dict", "a=:YWJjZ:"]]))
    add_base("§2.3 sf: more padding than needed does not parse", "componentInvalid", '"example-dict";key="a"',
             message=msg(fields=[["Example-Dict", "a=:YWI==:"]]))
    add_base("§2.3 sf: base64url's alphabet is not base64's", "componentInvalid", '"example-dict";key="a"',
             message=msg(fields=[["Example-Dict", "a=:Y-8_:"]]))
    add_base("§2.3 sf: an unterminated inner list does not parse", "componentInvalid", '"example-list";sf',
             message=msg(fields=[["Example-List", "(1 2"]]))
    big = "a=" + "1" * 10 + ", " + "x=\"" + "y" * (MAX_SF_FIELD - 18) + "\""
    assert len(big) == MAX_SF_FIELD
    add_base("§2.6 a field of 16384 bytes is parsed for key", "valid", '"example-dict";key="a"', message=msg(fields=[["Example-Dict", big]]))
    add_base("§2.6 a field of 16385 bytes is not parsed for key", "componentInvalid", '"example-dict";key="a"',
             message=msg(fields=[["Example-Dict", big[:-1] + 'y"']]))
    add_base("§2.6 a field of 16384 bytes is parsed for sf (its lines joined)", "valid", '"example-dict";sf',
             message=msg(fields=[["Example-Dict", big[:8000]], ["Example-Dict", big[8002:]]]))
    add_base("§2.6 a field of 16385 bytes is not parsed for sf", "componentInvalid", '"example-dict";sf',
             message=msg(fields=[["Example-Dict", big[:8000]], ["Example-Dict", big[8002:-1] + 'y"']]))
    add_base("§2.3 bs: an empty line and non-ASCII bytes", "valid", '"x-text";bs',
             message=msg(fields=[["X-Text", "caf\u00e9"], ["X-Text", ""]]))
    add_base("§2.3 bs: the field absent", "componentMissing", '"x-absent";bs')

    # §2.3 responses, req
    resp = {"status": 200, "fields": [["Content-Type", "text/plain"], ["X-Cache", "hit"]], "request": msg()}
    add_base("§2.3 a response: @status, its own fields, its request's with req", "valid",
             '"@status" "content-type" "content-type";req "@method";req "@target-uri";req "@query-param";req;name="sort"', message=resp)
    add_base("§2.3 a response: a field only its request has, without req", "componentMissing", '"content-digest"', message=resp)
    add_base("§2.3 a response: bs and req", "valid", '"example-header";bs;req', message=resp)
    add_base("§2.3 a response: a derived component without req", "componentInvalid", '"@status" "@method"', message=resp)
    add_base("§2.3 a response: @query-param without req", "componentInvalid", '"@query-param";name="id"', message=resp)
    add_base("§2.3 a response: @status;req is the request's, which has none", "componentMissing", '"@status";req', message=resp)
    add_base("§2.3 a response whose request is not known: req", "componentMissing", '"@status" "@method";req',
             message=dict(resp, request=None))
    add_base("§2.3 a response whose request is not known: its own components", "valid", '"@status" "x-cache"',
             message=dict(resp, request=None, status=404))
    add_base("§2.3 req in a request's signature", "componentInvalid", '"@method";req')
    add_base("§2.3 req on a field in a request's signature", "componentInvalid", '"content-type";req')
    add_base("§2.3 @status in a request", "componentMissing", '"@method" "@status"')

    # §2.2 identifiers
    add_base("§2.2 a field name of every tchar", "valid", '"x!#$%&\'*+-.^_`|~09"', message=msg(fields=[["x!#$%&'*+-.^_`|~09", "v"]]))
    add_base("§2.2 a field name of 128 bytes", "valid", '"%s"' % ("x" * 128), message=msg(fields=[["x" * 128, "v"]]))
    add_base("§2.2 a field name of 129 bytes", "componentInvalid", '"%s"' % ("x" * 129), message=msg(fields=[["x" * 129, "v"]]))
    add_base("§2.2 an empty name", "componentInvalid", '""')
    add_base("§2.2 an upper-case field name", "componentInvalid", '"Content-Type"')
    add_base("§2.2 a field name with a byte outside tchar", "componentInvalid", '"x/y"')
    add_base("§2.2 a token, not a string", "componentInvalid", 'content-type')
    add_base("§2.2 an integer, not a string", "componentInvalid", '1')
    add_base("§2.2 an unknown derived component", "componentInvalid", '"@fragment"')
    add_base("§2.2 @signature-params is not a component", "componentInvalid", '"@signature-params"')
    add_base("§2.2 a derived component with sf", "componentInvalid", '"@method";sf')
    add_base("§2.2 a derived component with key", "componentInvalid", '"@authority";key="a"')
    add_base("§2.2 a derived component with bs", "componentInvalid", '"@path";bs')
    add_base("§2.2 @query-param without name", "componentInvalid", '"@query-param"')
    add_base("§2.2 name on another derived component", "componentInvalid", '"@query";name="id"')
    add_base("§2.2 name on a field", "componentInvalid", '"content-type";name="a"')
    add_base("§2.2 bs with sf", "componentInvalid", '"example-dict";bs;sf')
    add_base("§2.2 bs with key", "componentInvalid", '"example-dict";key="a";bs')
    add_base("§2.2 sf must be the Boolean true", "componentInvalid", '"example-dict";sf=?0')
    add_base("§2.2 bs must be the Boolean true", "componentInvalid", '"example-header";bs=1')
    add_base("§2.2 req must be the Boolean true", "componentInvalid", '"@method";req="yes"')
    add_base("§2.2 key must be a string", "componentInvalid", '"example-dict";key=a')
    add_base("§2.2 name must be a string", "componentInvalid", '"@query-param";name=id')
    add_base("§2.2 tr (trailers) is refused", "componentInvalid", '"content-type";tr')
    add_base("§2.2 any other parameter is refused", "componentInvalid", '"content-type";x=1')
    add_base("§2.2 any other parameter is refused, a string too", "componentInvalid", '"content-type";x="a"')
    add_base("§2.2 a field name of 1 byte", "valid", '"x"', message=msg(fields=[["X", "1"]]))
    add_base("§2.2 parameters written back in the order written", "valid", '"example-dict";key="a";sf "example-dict";sf;key="b"')
    add_base("§2.2 a repeated parameter: RFC 8941 keeps one, at its first place, with its last value", "valid",
             '"example-dict";key="x";sf;key="a"')
    add_base("§2.1 the same identifier twice", "componentInvalid", '"content-type" "@method" "content-type"')
    add_base("§2.1 the same identifier twice, parameters in another order", "componentInvalid", '"example-dict";key="a";sf "example-dict";sf;key="a"')
    add_base("§2.1 the same name with other parameters is another identifier", "valid",
             '"example-dict" "example-dict";sf "example-dict";key="a" "example-dict";key="b" "example-header";bs')

    # §2.1 entries
    add_base("§2.1 no components", "valid", "")
    add_base("§2.1 created = 0", "valid", '"@method"', ";created=0")
    add_base("§2.1 created < 0", "signatureFieldsMalformed", '"@method"', ";created=-1")
    add_base("§2.1 expires < 0", "signatureFieldsMalformed", '"@method"', ";created=1;expires=-1")
    add_base("§2.1 created not an integer (a decimal)", "signatureFieldsMalformed", '"@method"', ";created=1.0")
    add_base("§2.1 created not an integer (a Boolean)", "signatureFieldsMalformed", '"@method"', ";created")
    add_base("§2.1 expires not an integer (a string)", "signatureFieldsMalformed", '"@method"', ';expires="1"')
    for name in ("nonce", "alg", "keyid", "tag"):
        add_base("§2.1 %s of 256 bytes" % name, "valid", '"@method"', ';%s="%s"' % (name, "n" * 256))
        add_base("§2.6 %s of 257 bytes" % name, "signatureFieldsMalformed", '"@method"', ';%s="%s"' % (name, "n" * 257))
        add_base("§2.1 %s not a string (a token)" % name, "signatureFieldsMalformed", '"@method"', ";%s=abc" % name)
    add_base("§2.6 a nonce of 256 bytes once its escape is read (258 as written)", "valid", '"@method"', ';nonce="%s\\""' % ("n" * 255))
    add_base("§2.1 other parameters kept in place, RFC 8941 serialised", "valid", '"@method"',
             ';keyid="k";x=1.50;created=1;y=:YWJj:;z=?1;t=tok;alg="ed25519";s="a\\"b"')
    add_base("§2.1 an entry that is no inner list", "signatureFieldsMalformed", inputs=['sig1="@method"'])
    add_base("§2.1 32 components", "valid", " ".join('"x-%d"' % i for i in range(32)),
             message=msg(fields=[["x-%d" % i, str(i)] for i in range(32)]))
    add_base("§2.6 33 components", "signatureFieldsMalformed", " ".join('"x-%d"' % i for i in range(33)),
             message=msg(fields=[["x-%d" % i, str(i)] for i in range(33)]))
    add_base("§2.1 33 components refused before any is read", "signatureFieldsMalformed", '"@bad" ' + " ".join('"x-%d"' % i for i in range(32)))
    add_base("§2.1 components are read before parameters", "componentInvalid", '"@bad"', ";created=-1")
    add_base("§2.1 a duplicate before the parameters", "componentInvalid", '"@method" "@method"', ";created=-1")
    add_base("§2.1 entries in order: an invalid component in the first", "componentInvalid",
             inputs=['sig1=("@bad");created=1, sig2=("@method");created=-1'], label="sig2")
    add_base("§2.1 entries in order: an invalid parameter in the first", "signatureFieldsMalformed",
             inputs=['sig1=("@method");created=-1, sig2=("@bad");created=1'], label="sig2")
    add_base("§2.1 an entry other than the one read is read too (§5.2 step 1)", "signatureFieldsMalformed",
             inputs=['sig1=("@method");created=1', 'sig2=("@method");created=-1'])
    add_base("§2.1 lines joined: the second line's entry", "valid", inputs=['sig1=("@method");created=1', 'sig2=("@path");created=2'],
             label="sig2")
    add_base("§2.1 a label given twice: the last member, in the first one's place", "valid",
             inputs=['sig1=("@method");created=1, sig2=("@path")', 'sig1=("@authority");created=3'])
    add_base("§2.1 the label read is absent", "signatureNotFound", '"@method"', label="sig2")
    add_base("§2.1 no Signature-Input line (a Signature that does not parse)", "signatureNotFound", inputs=[], signature=["(("])
    add_base("§2.1 Signature-Input not a dictionary", "signatureFieldsMalformed", inputs=['sig1=("@method"'])
    add_base("§2.1 Signature-Input with an upper-case key", "signatureFieldsMalformed", inputs=['Sig1=("@method")'])
    add_base("§2.1 Signature not a dictionary", "signatureFieldsMalformed", '"@method"', signature=["sig1=:AAAA:, ,"])
    add_base("§2.1 Signature's members are not read for the base", "valid", '"@method"', signature=['sig1="x", sig2=(1 2)'])
    add_base("§2.1 an empty Signature-Input: no entry", "signatureNotFound", inputs=[""])
    eight = ", ".join("s%d=()" % i for i in range(1, 9))
    add_base("§2.1 8 Signature-Input members", "valid", inputs=[eight], label="s8")
    add_base("§2.6 9 Signature-Input members", "signatureFieldsMalformed", inputs=[eight + ", s9=()"], label="s8")
    add_base("§2.1 8 Signature members", "valid", '"@method"', signature=[", ".join("s%d=:AAAA:" % i for i in range(1, 9))])
    add_base("§2.6 9 Signature members", "signatureFieldsMalformed", '"@method"', signature=[", ".join("s%d=:AAAA:" % i for i in range(1, 10))])
    head = 'sig1=("@method");created=1;pad="'
    add_base("§2.1 Signature-Input of 8192 bytes", "valid", inputs=[head + "p" * (MAX_SIGNATURE_FIELD - len(head) - 1) + '"'])
    add_base("§2.6 Signature-Input of 8193 bytes", "signatureFieldsMalformed", inputs=[head + "p" * (MAX_SIGNATURE_FIELD - len(head)) + '"'])
    line1 = head + "p" * 4000 + '"'
    add_base("§2.6 Signature-Input of 8193 bytes once its lines are joined", "signatureFieldsMalformed",
             inputs=[line1, 's2=();x="%s"' % ("p" * (MAX_SIGNATURE_FIELD + 1 - len(line1) - 2 - 10))])
    shead = 'sig1=:AAAA:, pad="'
    add_base("§2.1 Signature of 8192 bytes", "valid", '"@method"', signature=[shead + "p" * (MAX_SIGNATURE_FIELD - len(shead) - 1) + '"'])
    add_base("§2.6 Signature of 8193 bytes", "signatureFieldsMalformed", '"@method"',
             signature=[shead + "p" * (MAX_SIGNATURE_FIELD - len(shead)) + '"'])

    # §2.5 the base: control bytes and its size
    add_base("§2.5 a tab in a value", "valid", '"@path"', message=msg(target="/a\tb"))
    add_base("§2.5 a space and ~ in a value", "valid", '"@path"', message=msg(target="/a b~"))
    for byte in (0x00, 0x01, 0x0A, 0x1F, 0x7F):
        add_base("§2.5 the byte 0x%02X in a value" % byte, "componentInvalid", '"@path"', message=msg(target="/a%cb" % byte))
    add_base("§2.5 a control byte in @query", "componentInvalid", '"@query"', message=msg(target="/a?b=\x01"))
    add_base("§2.5 components in order: a missing one before an invalid one", "componentMissing", '"x-absent" "@path"',
             message=msg(target="/a\x01"))
    add_base("§2.5 components in order: an invalid one before a missing one", "componentInvalid", '"@path" "x-absent"',
             message=msg(target="/a\x01"))
    pad_line = ("sig1=(\"x-pad\")%s" % created)
    fixed = len(b'"x-pad": \n"@signature-params": ("x-pad")' + created.encode())
    add_base("§2.5 a base of 65536 bytes", "valid", inputs=[pad_line], message=msg(fields=[["X-Pad", "p" * (MAX_BASE - fixed)]]))
    add_base("§2.6 a base of 65537 bytes", "signatureFieldsMalformed", inputs=[pad_line],
             message=msg(fields=[["X-Pad", "p" * (MAX_BASE - fixed + 1)]]))
    add_base("§2.6 the base's size is checked once it is made: a component missing after 65537 bytes", "componentMissing",
             '"x-pad" "x-absent"', message=msg(fields=[["X-Pad", "p" * MAX_BASE]]))

    # ---- sign (§3.1, §3.3): deterministic signatures over bases -----------------------------------------------------------------
    def add_sign(comment, key, base):
        return add("sign", comment, "valid", {"key": key, "base": base})

    case = add_sign("RFC 9421 B.2.5: hmac-sha256 with the B.1.5 secret", "test-shared-secret", RFC9421_B25[1])
    assert unb64u(case["signature"]) == base64.b64decode(RFC9421_B25[2])
    case = add_sign("RFC 9421 B.2.6: ed25519 with the B.1.4 key", "test-key-ed25519", RFC9421_B26[1])
    assert unb64u(case["signature"]) == base64.b64decode(RFC9421_B26[2])
    bases = [c["base"] for c in groups["base"] if "base" in c]
    add_sign("§3.3 a base of 65536 bytes", "hmac", [b for b in bases if len(b.encode()) == MAX_BASE][0])
    for key in ("hmac", "ed25519"):
        add_sign("§3.1 %s: the smallest base" % key, key, '"@signature-params": ()')
        add_sign("§3.1 %s: a request's base" % key, key, bases[3])
        add_sign("§3.1 %s: a response's base" % key, key, bases[2])
        add_sign("§3.1 %s: a base with non-ASCII bytes" % key, key, [b for b in bases if "caf\u00e9" in b][0])

    # ---- domain (§3.3) ------------------------------------------------------------------------------------------------------------
    def add_domain(comment, want, data: bytes):
        return add("domain", comment, want, {"input": b64u(data)})

    real = bases[3].encode()
    add_domain("§3.3 a base §2.5 makes", True, real)
    add_domain("§3.3 the smallest base", True, b'"@signature-params": ()')
    add_domain("§3.3 one line: the whole input is the last line", True, b'"@signature-params": ("@method");created=1')
    add_domain("§3.3 only the first byte and the last line are read", True, b'"\nanything\n"@signature-params": x')
    add_domain("§3.3 a CR before the last LF is part of an earlier line", True, b'"a": b\r\n"@signature-params": ()')
    add_domain("§3.3 65536 bytes", True, [b for b in bases if len(b.encode()) == MAX_BASE][0].encode())
    add_domain("§3.3 65537 bytes", False, b'"' + b"x" * (MAX_BASE - len(b'"\n"@signature-params": ()') + 1) + b'\n"@signature-params": ()')
    add_domain("§3.3 the empty input", False, b"")
    add_domain("§3.3 a quote alone", False, b'"')
    add_domain("§3.3 a base with a LF after it", False, real + b"\n")
    add_domain("§3.3 the last line without the space", False, b'"@signature-params":()')
    add_domain("§3.3 the parameters line not last", False, b'"@signature-params": ()\n"@method": GET')
    add_domain("§3.3 a first byte other than the quote", False, b' "@signature-params": ()')
    add_domain("§3.3 a base's last line after another first byte", False, b'x\n"@signature-params": ()')
    hk = keys["hmac"]
    add_domain("§3.3 a wtoken's signing input (SPEC §4) is no base", False,
               signing_input(hk.alg, hk.kid, bytes(32), bytes(32), CREATED, 60, NONCES[0], b""))
    add_domain("§3.3 a signed message's input (SPEC §10) is no base", False, message_input(hk, "signcore-challenge/1", real))

    # ---- digest (§4) ---------------------------------------------------------------------------------------------------------------
    hello = b'{"hello": "world"}'
    s256, s512 = (base64.b64encode(f(hello).digest()).decode() for f in (hashlib.sha256, hashlib.sha512))

    def add_digest(comment, want, lines, content=hello):
        return add("digest", comment, want, {"fields": [["Content-Digest", line] for line in lines] + [["Content-Type", "application/json"]],
                                             "body": b64u(content)})

    add_digest("§4.2 no Content-Digest: nothing claimed", "valid", [])
    add_digest("RFC 9530: sha-256", "valid", ["sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"])
    add_digest("RFC 9530: sha-512", "valid",
               ["sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:"])
    add_digest("§4.2 both, in the order claimed", "valid", ["sha-512=:%s:, sha-256=:%s:" % (s512, s256)])
    add_digest("§4.2 other content: no match", "valid", ["sha-256=:%s:" % s256], hello + b"\n")
    add_digest("§4.2 one of two digests does not match", "valid", ["sha-256=:%s:, sha-512=:%s:" % (s256, s512[:-4] + "AA==")])
    add_digest("§4.2 empty content", "valid", [content_digest(b"")], b"")
    add_digest("§4.2 empty content, another's digest", "valid", ["sha-256=:%s:" % s256], b"")
    add_digest("§4.2 the lines joined with ', '", "valid", ["sha-256=:%s:" % s256, "sha-512=:%s:" % s512])
    add_digest("§4.2 other members ignored, whatever their value", "valid", ["md5=:AAAA:, sha-256=:%s:, id-sha-256=?0, x=(1 2)" % s256])
    add_digest("§4.2 parameters on a digest are not read", "valid", ["sha-256=:%s:;x=1" % s256])
    add_digest("§4.2 a member given twice: the last value, in the first one's place", "valid",
               ["sha-256=:%s:, sha-512=:%s:, sha-256=:%s:" % (base64.b64encode(bytes(32)).decode(), s512, s256)])
    add_digest("§4.2 non-zero pad bits are read (RFC 8941 §4.2.7)", "valid", ["sha-256=:%s:" % (s256[:-2] + "F=")])
    add_digest("§4.2 only other members", "contentDigestUnsupported", ["md5=:AAAA:, sha-384=:AAAA:"])
    add_digest("§4.2 an empty field: no member", "contentDigestUnsupported", [""])
    add_digest("§4.2 sha-256 of 31 bytes", "contentDigestUnsupported", ["sha-256=:%s:" % base64.b64encode(bytes(31)).decode()])
    add_digest("§4.2 sha-256 of 33 bytes", "contentDigestUnsupported", ["sha-256=:%s:" % base64.b64encode(bytes(33)).decode()])
    add_digest("§4.2 sha-512 of 32 bytes", "contentDigestUnsupported", ["sha-512=:%s:" % s256])
    add_digest("§4.2 sha-512 of 63 bytes", "contentDigestUnsupported", ["sha-512=:%s:" % base64.b64encode(bytes(63)).decode()])
    add_digest("§4.2 sha-512 of 65 bytes", "contentDigestUnsupported", ["sha-512=:%s:" % base64.b64encode(bytes(65)).decode()])
    add_digest("§4.2 a valid digest, then an invalid one", "contentDigestUnsupported", ["sha-256=:%s:, sha-512=:AAAA:" % s256])
    add_digest("§4.2 a digest as a string", "contentDigestUnsupported", ['sha-256="%s"' % s256])
    add_digest("§4.2 a digest as a token", "contentDigestUnsupported", ["sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE"])
    add_digest("§4.2 a digest as an inner list", "contentDigestUnsupported", ["sha-256=(:%s:)" % s256])
    add_digest("§4.2 a digest as a Boolean", "contentDigestUnsupported", ["sha-256"])
    add_digest("§4.2 a digest without padding", "contentDigestUnsupported", ["sha-256=:%s:" % s256.rstrip("=")])
    add_digest("§4.2 a digest with = inside", "contentDigestUnsupported", ["sha-256=:%s:" % (s256[:20] + "=" + s256[21:])])
    add_digest("§4.2 a digest in base64url", "contentDigestUnsupported", ["sha-256=:%s:" % base64.urlsafe_b64encode(bytes([0xfb, 0xff, 0xbf] * 10 + [0, 0])).decode()])
    add_digest("§4.2 not a dictionary (upper-case key)", "contentDigestUnsupported", ["SHA-256=:%s:" % s256])
    add_digest("§4.2 not a dictionary (a trailing comma)", "contentDigestUnsupported", ["sha-256=:%s:," % s256])
    pad = ", x=\"" + "p" * (MAX_DIGEST_FIELD - len("sha-256=:%s:, x=\"\"" % s256)) + '"'
    add_digest("§2.6 Content-Digest of 8192 bytes", "valid", ["sha-256=:%s:%s" % (s256, pad)])
    first = "sha-256=:%s:, x=\"%s\"" % (s256, "p" * (MAX_DIGEST_FIELD + 1 - 5 - len("sha-256=:%s:, x=\"\"" % s256)))
    add_digest("§2.6 Content-Digest of 8193 bytes (joined)", "contentDigestUnsupported", [first, "y=1"])

    # ---- accept (§5.5) -------------------------------------------------------------------------------------------------------------
    policy = {"coverage": "request", "requiredComponents": [], "maxAge": 300, "skew": 30, "nonce": "required", "label": None, "tag": None}

    def pol(**changes):
        return dict(policy, **changes)

    def add_accept(comment, p, method="POST"):
        return add("accept", comment, "valid", {"policy": p, "method": method})

    case = add_accept("§5.5 the example: a POST under the default policy", policy)
    assert case["field"] == 'sig1=("@method" "@target-uri" "content-digest");created;nonce;keyid'
    add_accept("§5.5 a GET: no content-digest", policy, "GET")
    add_accept("§5.5 a PUT", policy, "PUT")
    add_accept("§5.5 a PATCH", policy, "PATCH")
    add_accept("§5.5 a DELETE", policy, "DELETE")
    add_accept("§5.5 nonces optional: no nonce parameter", pol(nonce="optional"))
    add_accept("§5.5 the policy's label", pol(label="proof"))
    add_accept("§5.5 the policy's tag", pol(tag="app-v1"), "GET")
    add_accept("§5.5 a tag with a quote and a backslash, serialised as an sf-string", pol(tag='a"b\\c'), "GET")
    add_accept("§5.5 required components after the coverage's, as written", pol(requiredComponents=['"content-type"', '"example-dict";key="a";sf']))
    add_accept("§5.5 a required component already named is not named again", pol(requiredComponents=['"@method"', '"content-digest"']))
    add_accept("§5.5 content-digest required on a GET", pol(requiredComponents=['"content-digest"']), "GET")
    add_accept("§5.5 a required component with other parameters is another one", pol(requiredComponents=['"content-digest";sf']))
    add_accept("§5.5 agent coverage: @authority", pol(coverage="agent"), "GET")
    case = add_accept("§5.5, §7 Web Bot Auth's policy", pol(coverage="agent", tag="web-bot-auth", nonce="optional", maxAge=60), "GET")
    assert case["field"] == 'sig1=("@authority");created;keyid;tag="web-bot-auth"'
    add_accept("§5.5 agent coverage with required components, on a POST", pol(coverage="agent", requiredComponents=['"signature-agent"', '"@authority"']))

    # ---- verify (§5) ---------------------------------------------------------------------------------------------------------------
    now = CREATED + 100
    origin = {"scheme": "https", "authority": None}
    content = b'{"id":42,"note":"caf\xc3\xa9"}'
    nonces = iter(b64u(seed("httpsig nonce %d" % i)[:16]) for i in range(1000))
    other = Key(jwk_for("OKP", seed("httpsig another Ed25519 seed")))
    standard = '"@method" "@target-uri" "content-digest" "content-type"'

    def vrequest(method="POST", authority="api.example.com", target="/v1/orders?id=42", fields=(), body=content, digest=True):
        head = [["Content-Type", "application/json"]] + ([["Content-Digest", content_digest(body)]] if digest and body else [])
        return {"method": method, "authority": authority, "target": target, "fields": head + [list(f) for f in fields]}, body

    def params(key="hmac", created=now - 10, expires=now + 50, nonce=True, alg=True, keyid=True, tag=None, extra=""):
        k = keys[key] if key in keys else other
        out = "" if created is None else ";created=%d" % created
        out += "" if expires is None else ";expires=%d" % expires
        out += ';nonce="%s"' % next(nonces) if nonce is True else "" if nonce is None else ";nonce=%s" % nonce
        out += ';alg="%s"' % [n for n, a in SIGNATURE_ALGORITHMS.items() if a == k.alg][0] if alg is True else "" if alg is None else ';alg="%s"' % alg
        out += ';keyid="%s"' % k.kid if keyid is True else "" if keyid is None else ';keyid="%s"' % keyid
        return out + ("" if tag is None else ';tag="%s"' % tag) + extra

    def sign(req, key="hmac", components=standard, p=None, label="sig1", at=origin, signature=None):
        """`req` with an entry `label` signed by `key` (the reference's base); `signature` turns the
        signature's bytes into the Signature member's value."""
        k = keys[key] if key in keys else other
        member = "%s=(%s)%s" % (label, components, params(key) if p is None else p)
        fields = req["fields"] + [["Signature-Input", member]]
        try:
            entry = [e for e in read_signature_fields(fields) if e[0] == label][0]
            raw = k.sign(signature_base(entry, addressed(at, dict(req, fields=fields))))
        except SpecError:
            raw = bytes(64)
        value = signature(raw) if signature else ":%s:" % base64.b64encode(raw).decode()
        return dict(req, fields=fields + [["Signature", "%s=%s" % (label, value)]])

    def add_verify(comment, want, req, body=content, p=policy, at=origin, seen=(), when=now):
        return add("verify", comment, want, {"policy": p, "now": when, "origin": at, "request": req, "body": b64u(body),
                                             "seen": [list(s) for s in seen]})

    def add_signed(comment, want, key="hmac", components=standard, p=None, label="sig1", policy_=policy, at=origin, signature=None,
                   seen=(), when=now, received=None, **request_args):
        req, body = vrequest(**request_args)
        return add_verify(comment, want, sign(req, key, components, p, label, at, signature), body if received is None else received,
                          policy_, at, seen, when)

    # accepted
    case = add_signed("§5.2 hmac-sha256: a POST with its content", "valid")
    add_signed("§5.2 ed25519 (the key known by its thumbprint)", "valid", "ed25519")
    case_p = add_signed("§5.2 ecdsa-p256-sha256", "valid", "p256")
    sig = [f[1] for f in case_p["request"]["fields"] if f[0] == "Signature"][0]
    raw = base64.b64decode(sig[len("sig1=:"):-1])
    r_, s_ = raw[:32], int.from_bytes(raw[32:], "big")
    high = dict(case_p["request"], fields=case_p["request"]["fields"][:-1] + [
        ["Signature", "sig1=:%s:" % base64.b64encode(r_ + (P256_N - s_).to_bytes(32, "big")).decode()]])
    add_verify("§3.1 ecdsa-p256-sha256 with n - s verifies too", "valid", high, seen=())
    long_sig = dict(case_p["request"], fields=case_p["request"]["fields"][:-1] + [
        ["Signature", "sig1=:%s:" % base64.b64encode(r_ + b"\x00" + raw[32:]).decode()]])
    add_verify("§3.1 an ecdsa-p256-sha256 signature of 65 bytes (r, a zero byte, s) does not verify", "badSignature", long_sig)
    add_signed("§5.2 a GET without content: @method and @target-uri", "valid", components='"@method" "@target-uri"', method="GET",
               body=b"", target="/v1/orders/42")
    add_signed("§5.1 the target as @authority and @request-target", "valid", "ed25519", '"@method" "@authority" "@request-target" "content-digest"')
    add_signed("§5.1 the target as @authority, @path and @query", "valid", "p256", '"@query" "@path" "@authority" "@method" "content-digest"')
    add_signed("§5.2 no alg: the key's algorithm", "valid", "ed25519", p=params("ed25519", alg=None))
    add_signed("§5.2 no expires: the identity expires at created + maximum age", "valid", p=params(expires=None))
    add_signed("§5.2 expires after created + maximum age: the earlier", "valid", p=params(expires=now + 1000))
    add_signed("§5.2 expires before created + maximum age", "valid", p=params(created=now - 200, expires=now + 5))
    add_signed("§5.1 nonces optional: a signature without one, nothing recorded", "valid", p=params(nonce=None),
               policy_=pol(nonce="optional"))
    add_signed("§5.1 nonces optional: a signature with one records it", "valid", p=params(), policy_=pol(nonce="optional"))
    add_signed("§5.3 a nonce with an escaped quote: the string's bytes", "valid", p=params(nonce='"a\\"b"'))
    add_signed("§5.1 another maximum age and skew", "valid", p=params(created=now - 100, expires=None), policy_=pol(maxAge=120, skew=5))
    add_signed("§5.2 created = now + skew", "valid", p=params(created=now + 30))
    add_signed("§5.2 now = created + maximum age", "valid", p=params(created=now - 300, expires=None))
    add_signed("§5.2 now = expires", "valid", p=params(expires=now))
    add_signed("§5.2 step 2: a policy without a tag takes an entry with one", "valid", p=params(tag="app"))
    add_signed("§5.2 a POST without content need not cover content-digest", "valid", components='"@method" "@target-uri"', body=b"")
    add_signed("§5.2 content of one byte must be covered", "headerNotCovered", components='"@method" "@target-uri"', body=b"x",
               digest=False)
    add_signed("§5.1 content-digest covered with sf", "valid", components='"@method" "@target-uri" "content-digest";sf')
    add_signed("§4 both digests claimed", "valid", components='"@method" "@target-uri" "content-digest"', digest=False,
               fields=[["Content-Digest", content_digest(content, ("sha-512", "sha-256"))]])
    add_signed("§4.2 Content-Digest without content, not covered: it must match the empty content", "valid",
               components='"@method" "@target-uri"', body=b"", fields=[["Content-Digest", content_digest(b"")]])
    add_signed("§4.2 Content-Digest without content, not covered, another content's digest", "contentDigestMismatch",
               components='"@method" "@target-uri"', body=b"", fields=[["Content-Digest", content_digest(b"x")]])
    add_signed("§5.1 required components covered", "valid", "ed25519",
               '"@method" "@target-uri" "content-digest" "content-type" "@query-param";name="id" "example-dict";sf;key="a"',
               policy_=pol(requiredComponents=['"content-type"', '"@query-param";name="id"', '"example-dict";key="a";sf']),
               fields=[["Example-Dict", "a=1"]])
    add_signed("§5.1 a required component covered with other parameters is not covered", "headerNotCovered", "ed25519",
               '"@method" "@target-uri" "content-digest" "content-type";bs', policy_=pol(requiredComponents=['"content-type"']))
    add_signed("§5.1 a required component not covered", "headerNotCovered", components='"@method" "@target-uri" "content-digest"',
               policy_=pol(requiredComponents=['"content-type"']))
    add_signed("§5.1 agent coverage: @authority", "valid", "ed25519", '"@authority"', method="GET", body=b"", policy_=pol(coverage="agent"))
    add_signed("§7 Web Bot Auth: agent coverage, its tag, signature-agent covered with key", "valid", "ed25519",
               '"@authority" "signature-agent";key="sig1"', p=params("ed25519", nonce=None, tag="web-bot-auth", expires=now + 50),
               policy_=pol(coverage="agent", tag="web-bot-auth", nonce="optional", maxAge=60), method="GET", body=b"",
               fields=[["Signature-Agent", 'sig1="https://agent.example"']])
    add_signed("§7.1 agent coverage: signature-agent covered without key", "valid", "ed25519", '"@authority" "signature-agent"',
               policy_=pol(coverage="agent"), method="GET", body=b"", fields=[["Signature-Agent", '"https://agent.example"']])
    add_signed("§7.1 agent coverage: Signature-Agent sent but not covered", "headerNotCovered", "ed25519", '"@authority"',
               policy_=pol(coverage="agent"), method="GET", body=b"", fields=[["Signature-Agent", '"https://agent.example"']])
    add_signed("§5.1 agent coverage without @authority", "headerNotCovered", "ed25519", '"@method" "@target-uri"',
               policy_=pol(coverage="agent"), method="GET", body=b"")
    add_signed("§5.1 agent coverage does not ask for content-digest", "valid", "ed25519", '"@authority"', policy_=pol(coverage="agent"))
    add_signed("§2.3 the origin's scheme: http, its default port dropped", "valid", "ed25519", at={"scheme": "http", "authority": None},
               authority="api.example.com:80")
    add_signed("§2.3 the origin's authority, not the request's", "valid", "ed25519", at={"scheme": "https", "authority": "api.example.com"},
               authority="internal.example:8443")
    add_signed("§2.3 the request's authority in lower case, without :443", "valid", authority="API.Example.com:443")
    add_signed("§2.3 an IPv6 literal authority", "valid", authority="[2001:db8::1]:8443")
    add_signed("§2.3 a target with every byte the origin form allows", "valid", components='"@method" "@target-uri"', method="GET",
               body=b"", target="/~!$&'()*+,;=:@-._/%2F%c3%a9?a=/?&b")

    # §5.2 step 1-3
    req, _ = vrequest()
    add_verify("§5.2 step 1: no Signature-Input", "signatureNotFound", req)
    add_verify("§5.2 step 1: a Signature but no Signature-Input", "signatureNotFound",
               dict(req, fields=req["fields"] + [["Signature", "sig1=:AAAA:"]]))
    add_verify("§5.2 step 1 before step 9: no Signature-Input and a Content-Digest that does not parse", "signatureNotFound",
               dict(req, fields=[["Content-Type", "application/json"], ["Content-Digest", "sha-256=:AAAA:"]]))
    add_verify("§5.2 step 1: Signature-Input does not parse", "signatureFieldsMalformed",
               dict(req, fields=req["fields"] + [["Signature-Input", "sig1=("]]))
    add_signed("§5.2 step 1: an invalid component", "componentInvalid", components='"@method" "@target-uri" "@fragment"')
    add_signed("§5.2 step 2: the policy's label", "valid", "ed25519", label="proof", policy_=pol(label="proof"))
    add_signed("§5.2 step 2: the policy's label absent", "signatureNotFound", "ed25519", policy_=pol(label="proof"))
    two = sign(sign(vrequest()[0], "hmac", p=params("hmac", expires=now - 1)), "ed25519", label="sig2")
    add_verify("§5.2 step 2: the labelled entry; the first (expired) is not checked", "valid", two, p=pol(label="sig2"))
    add_verify("§5.2 step 2: without a label, the first", "expired", two)
    tagged = sign(sign(sign(vrequest()[0], "hmac", p=params("hmac", tag="a")), "p256", label="sig2",
                        p=params("p256", tag="b")), "ed25519", label="sig3", p=params("ed25519", tag="b"))
    add_verify("§5.2 step 2: the first entry with the policy's tag", "valid", tagged, p=pol(tag="b"))
    add_verify("§5.2 step 2: no entry with the policy's tag", "signatureNotFound", tagged, p=pol(tag="c"))
    add_verify("§5.2 step 2: the label's entry with the policy's tag", "valid", tagged, p=pol(label="sig3", tag="b"))
    add_verify("§5.2 step 2: the label's entry without the policy's tag", "signatureNotFound", tagged, p=pol(label="sig1", tag="b"))
    add_verify("§5.2 step 2: a tag is compared exactly", "signatureNotFound", tagged, p=pol(tag="B"))
    unsigned = dict(two, fields=[f for f in two["fields"] if not (f[0] == "Signature" and f[1].startswith("sig1="))])
    add_verify("§5.2 step 2: another entry without a signature is not checked", "valid", unsigned, p=pol(label="sig2"))
    add_verify("§5.2 step 3: the selected entry without a signature", "signatureFieldsMalformed", unsigned)
    bad_other = dict(two, fields=two["fields"] + [["Signature-Input", 'sig3=("@method");created=-1']])
    add_verify("§5.2 step 1 before step 2: another entry that §2.1 refuses", "signatureFieldsMalformed", bad_other, p=pol(label="sig2"))
    req, body = vrequest()
    signed_req = sign(req)
    add_verify("§5.2 step 3: no Signature field at all", "signatureFieldsMalformed",
               dict(signed_req, fields=[f for f in signed_req["fields"] if f[0] != "Signature"]))
    add_verify("§2.1 step 4: the Signature member under another label", "signatureFieldsMalformed",
               dict(signed_req, fields=signed_req["fields"][:-1] + [["Signature", signed_req["fields"][-1][1].replace("sig1=", "sig2=")]]))
    add_signed("§2.1 step 4: a signature with parameters", "signatureFieldsMalformed", signature=lambda raw: ":%s:;x=1" % base64.b64encode(raw).decode())
    add_signed("§2.1 step 4: a signature that is a string", "signatureFieldsMalformed", signature=lambda raw: '"%s"' % base64.b64encode(raw).decode())
    add_signed("§2.1 step 4: a signature in an inner list", "signatureFieldsMalformed", signature=lambda raw: "(:%s:)" % base64.b64encode(raw).decode())
    add_signed("§2.1 step 4: a signature without padding", "signatureFieldsMalformed", "ed25519",
               signature=lambda raw: ":%s:" % base64.b64encode(raw).decode().rstrip("="))
    add_signed("§2.1 step 4: an HMAC signature without padding", "signatureFieldsMalformed",
               signature=lambda raw: ":%s:" % base64.b64encode(raw).decode().rstrip("="))

    # §5.2 step 4
    add_signed("§5.2 step 4: an algorithm §1 refuses", "signatureAlgorithmUnsupported", p=params(alg="rsa-pss-sha512"))
    add_signed("§5.2 step 4: algorithm names are case-sensitive", "signatureAlgorithmUnsupported", "ed25519", p=params("ed25519", alg="Ed25519"))
    add_signed("§5.2 step 4: the algorithm before the key id", "signatureAlgorithmUnsupported", p=params(alg="hs2019", keyid=None))
    add_signed("§5.2 step 4: no keyid", "unknownKey", p=params(keyid=None))
    add_signed("§5.2 step 4: a keyid no key has", "unknownKey", p=params(keyid="hmac-2027"))
    add_signed("§5.2 step 4: keyids are compared byte for byte", "unknownKey", p=params(keyid="HMAC"))
    add_signed("§5.2 step 4: the key's id before alg", "unknownKey", p=params(keyid="nobody", alg="ed25519"))
    add_signed("§5.2 step 4: alg names another algorithm than the key's", "algorithmMismatch", "ed25519", p=params("ed25519", alg="hmac-sha256"))
    add_signed("§5.2 step 4: ecdsa named for an Ed25519 key", "algorithmMismatch", "ed25519", p=params("ed25519", alg="ecdsa-p256-sha256"))
    add_signed("§5.2 step 4 before step 5", "algorithmMismatch", "p256", '"@path"', p=params("p256", alg="ed25519"))

    # §5.2 step 5
    add_signed("§5.2 step 5: @method not covered", "headerNotCovered", components='"@target-uri" "content-digest"')
    add_signed("§5.2 step 5: no target covered", "headerNotCovered", components='"@method" "content-digest" "@path" "@query"')
    add_signed("§5.2 step 5: @authority and @path without @query", "headerNotCovered", components='"@method" "@authority" "@path" "content-digest"')
    add_signed("§5.2 step 5: @authority and @query without @path", "headerNotCovered", components='"@method" "@authority" "@query" "content-digest"')
    add_signed("§5.2 step 5: @request-target without @authority", "headerNotCovered", components='"@method" "@request-target" "content-digest"')
    add_signed("§5.2 step 5: @authority alone", "headerNotCovered", components='"@method" "@authority" "content-digest"')
    add_signed("§5.2 step 5: content not bound", "headerNotCovered", components='"@method" "@target-uri" "content-type"')
    add_signed("§5.2 step 5 before step 6", "headerNotCovered", components='"@target-uri"', p=params(created=None))

    # §5.2 step 6-7
    add_signed("§5.2 step 6: no created", "signatureCreatedMissing", p=params(created=None))
    add_signed("§5.2 step 6 before step 7", "signatureCreatedMissing", p=params(created=None, nonce=None))
    add_signed("§5.2 step 6: created = now + skew + 1", "notYetValid", p=params(created=now + 31, expires=None))
    add_signed("§5.2 step 6: created in the future, under another skew", "notYetValid", p=params(created=now + 6),
               policy_=pol(skew=5))
    add_signed("§5.2 step 6: now = created + maximum age + 1", "expired", p=params(created=now - 301, expires=None))
    add_signed("§5.2 step 6: another maximum age", "expired", p=params(created=now - 61), policy_=pol(maxAge=60))
    add_signed("§5.2 step 6: now = expires + 1 (no skew after expires)", "expired", p=params(expires=now - 1))
    add_signed("§5.2 step 6 before step 7: not yet valid", "notYetValid", p=params(created=now + 100, nonce=None))
    add_signed("§5.2 step 6: not yet valid before expired", "notYetValid", p=params(created=now + 100, expires=now - 1))
    add_signed("§5.2 step 6 before step 7: expired", "expired", p=params(created=now - 400, nonce=None))
    add_signed("§5.2 step 7: no nonce", "signatureNonceMissing", p=params(nonce=None))
    add_signed("§5.2 step 7 before step 8", "signatureNonceMissing", p=params(nonce=None), target="/a#b")

    # §5.2 step 8
    add_signed("§2.3 a Host field besides :authority", "invalidHeader", fields=[["Host", "api.example.com"]])
    add_signed("§2.3 a Host field before a bad target", "invalidHeader", fields=[["Host", "api.example.com"]], target="*")
    add_signed("§2.3 no authority", "invalidURL", authority=None)
    for authority in ("api.example.com/x", "api.example.com?x", "api.example.com#x", "user@api.example.com", "api.example.com:0",
                      "api.example.com:65536", "api example.com", ""):
        add_signed("§2.3 an authority that is not host[:port]: %r" % authority, "invalidURL", authority=authority)
    for target in ("*", "https://api.example.com/v1/orders", "v1/orders", "/a#b", "/a b", "/a\\b", "/a%zz", "/a%4", "/caf\u00e9", "/a\x7f",
                   "/a\x01"):
        add_signed("§2.3 a target that is not an origin-form path: %r" % target, "invalidURL", target=target)
    add_signed("§2.3 the request is read even when the origin fixes the authority", "invalidURL",
               at={"scheme": "https", "authority": "api.example.com"}, authority="a@b")
    add_signed("§5.2 step 8: a covered field absent", "componentMissing", components=standard + ' "x-absent"')
    add_signed("§5.2 step 8: content-digest covered, no Content-Digest field", "componentMissing", digest=False)
    add_signed("§5.2 step 8: @status in a request", "componentMissing", components=standard + ' "@status"')
    add_signed("§5.2 step 8: req in a request", "componentInvalid", components=standard + ' "@method";req')
    add_signed("§5.2 step 8: sf on a field of no known type", "componentInvalid", components=standard + ' "content-type";sf')
    add_signed("§5.2 step 8: a base over 65536 bytes", "signatureFieldsMalformed", components=standard + ' "x-pad"',
               fields=[["X-Pad", "p" * MAX_BASE]])
    add_signed("§5.2 step 8: a signature by another key", "badSignature", "ed25519Other", p=params("ed25519"))
    req, body = vrequest()
    signed_req = sign(req)
    changed = dict(signed_req, fields=[["Content-Type", "text/plain"]] + signed_req["fields"][1:])
    add_verify("§5.2 step 8: a covered field changed", "badSignature", changed)
    add_verify("§5.2 step 8: the target changed", "badSignature", dict(signed_req, target="/v1/orders?id=43"))
    add_verify("§5.2 step 8: the method changed", "badSignature", dict(signed_req, method="PUT"))
    add_verify("§5.2 step 8: the authority changed", "badSignature", dict(signed_req, authority="api.example.org"))
    add_verify("§5.2 step 8: another scheme", "badSignature", signed_req, at={"scheme": "http", "authority": None})
    add_verify("§5.2 step 8: another fixed authority", "badSignature", signed_req, at={"scheme": "https", "authority": "api.example.org"})
    add_signed("§3.1 an HMAC tag of 31 bytes", "badSignature", signature=lambda raw: ":%s:" % base64.b64encode(raw[:31]).decode())
    add_signed("§3.1 an Ed25519 signature of 63 bytes", "badSignature", "ed25519", signature=lambda raw: ":%s:" % base64.b64encode(raw[:63]).decode())
    add_signed("§3.1 an empty signature", "badSignature", "p256", signature=lambda raw: "::")
    add_signed("§5.2 step 8: parameters changed after signing", "badSignature",
               signature=lambda raw: ":%s:" % base64.b64encode(keys["hmac"].sign(b'"@signature-params": ()')).decode())

    # §5.2 step 9-10
    add_signed("§5.2 step 9: Content-Digest does not match the content", "contentDigestMismatch", received=content + b" ",
               fields=[["X-Note", "the content was changed after signing"]])
    req, body = vrequest()
    bad_digest = dict(req, fields=[["Content-Type", "application/json"], ["Content-Digest", "sha-256=:AAAA:"]])
    add_verify("§5.2 step 9: Content-Digest does not parse (146 after the signature verifies)", "contentDigestUnsupported", sign(bad_digest))
    add_verify("§5.2 step 8 before step 9: a bad signature and a Content-Digest that does not parse", "badSignature",
               dict(sign(bad_digest), method="PUT"))
    add_signed("§5.2 step 9: Content-Digest of no known algorithm", "contentDigestUnsupported", components='"@method" "@target-uri"',
               body=b"", fields=[["Content-Digest", "sha-384=:AAAA:"]])
    n = next(nonces)
    replay = sign(vrequest()[0], "hmac", p=params(nonce='"%s"' % n))
    add_verify("§5.2 step 10: a nonce recorded before under the key", "replayed", replay, seen=[("hmac", n)])
    add_verify("§5.3 the same nonce under another key", "valid", replay, seen=[(keys["ed25519"].kid, n), ("hmac", n + "x")])
    add_verify("§5.2 step 9 before step 10", "contentDigestMismatch", replay, body=content + b"!", seen=[("hmac", n)])
    add_verify("§5.2 step 10: a signature without a nonce records nothing, nothing is replayed", "valid",
               sign(vrequest()[0], "hmac", p=params(nonce=None)), p=pol(nonce="optional"), seen=[("hmac", n)])
    add_verify("§5.2 the request's other fields do not matter", "valid", dict(replay, fields=replay["fields"] + [["X-Later", "1"]]))

    # ---- the file -----------------------------------------------------------------------------------------------------------------
    number = 0
    for name in HTTPSIG_GROUPS:
        for c in groups[name]:
            number += 1
            c["tcId"] = number
    return dict({"spec": "SignCore/3 httpsig 1", "algorithm": "httpsig",
                 "header": "docs/HTTPSIG.md §8. base: a message (a request, or a response with its request or null) and Signature-Input "
                           "(and Signature) lines, the label read (null: the first entry) -> the base or the error. sign: a key and a base -> "
                           "the signature (base64url). verify: a policy, now, the server's origin (its authority null when it fixes none), "
                           "a request (its authority null: none received) and its content (base64url), the (key id, nonce) pairs already "
                           "in the replay guard -> the identity, the replay nonce (hex) and until when it is kept, or the error; the "
                           "verifier's keys are hmac and the public parts of ed25519 and p256. digest: Content-Digest lines and content -> "
                           "the claimed digests (null: none claimed) and whether they match, or the error. accept: a policy and a method "
                           "-> Accept-Signature. domain: an input -> whether the ed25519 key signs it as a signature base. codes: §6's "
                           "codes 140-149",
                 "numberOfTests": number, "keys": HTTPSIG_KEYS, "codes": httpsig_codes()}, **groups)


def write(name, doc):
    (VECTORS / name).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    print(f"{name}: {doc['numberOfTests']} cases")


GENERATED = {"whash.json": generate_whash, "jwk.json": generate_jwk, "refusal.json": generate_refusal,
             "message.json": generate_message}
CHECKED = ("canonical_url.json", "wtoken.json", "attest.json", "device.json", "ratelimit.json", "httpsig.json")  # case by case


def check_files(expect):
    """Every vector file is present, and each has a check."""
    files = sorted(p.name for p in VECTORS.glob("*.json"))
    for name in files:
        expect(name in GENERATED or name in CHECKED, f"{name}: no check for this vector file")
    for name in ("canonical_url.json", "whash.json", "wtoken.json", "jwk.json", "refusal.json", "message.json", "attest.json",
                 "device.json", "ratelimit.json", "httpsig.json"):
        expect(name in files, f"{name} is missing")


def check_canonical_url(expect):
    cu = json.loads((VECTORS / "canonical_url.json").read_text())
    for tc in cu["tests"]:
        raw = bytes.fromhex(tc["inputHex"]) if "inputHex" in tc else tc["input"].encode()
        try:
            got = canonical_url(raw).decode()
            expect(tc["result"] == "valid" and got == tc["expected"], f"canonical_url {tc['tcId']}: {got}")
        except SpecError as e:
            expect(tc["result"] == "invalid" and e.code == tc["error"], f"canonical_url {tc['tcId']}: {e.code}")
    for tc in cu["pairs"]:
        same = canonical_url(tc["a"].encode()) == canonical_url(tc["b"].encode())
        expect(same == (tc["result"] == "same"), f"canonical_url pair {tc['tcId']}")


def check_sections(name, label, sections, outputs):
    """A file checked case by case: every case of every section, from its inputs (ATTEST §8, §9.10, §10.10;
    HTTPSIG §8)."""
    def run(expect):
        stored = json.loads((VECTORS / name).read_text())
        keys = {n: Key(j) for n, j in stored["keys"].items()}
        count = 0
        for section, outcome in sections.items():
            for tc in stored[section]:
                count += 1
                want = {k: tc[k] for k in outputs(section) if k in tc}
                got = outcome(keys, tc)
                expect(got == want, f"{label} {section} {tc['tcId']}: {got.get('error', got['result']) if label != 'httpsig' else got}")
        expect(count == stored["numberOfTests"], f"{name}: numberOfTests")
        if name == "httpsig.json":
            expect(stored["codes"] == httpsig_codes(), "httpsig.json: codes")
    return run


def check_wtoken(expect):
    stored = json.loads((VECTORS / "wtoken.json").read_text())
    keys = stored["keys"]
    for tc in stored["sign"]:
        key = Key(keys[tc["key"]])
        try:
            out = sign(key, tc["method"], tc["url"].encode(), body_of(tc.get("body")), tc["created"], tc["lifetime"],
                       bytes.fromhex(tc["nonce"]), tc["account"], tc.get("coveredHeaders", ()), fields_of(tc.get("headers")),
                       tc.get("allowUnsignedBody", False))
            if key.alg == "ES256":  # randomised: the stored signature cannot be reproduced
                continue
            expect(tc["result"] == "valid" and out == tc["expected"], f"wtoken sign {tc['tcId']}")
        except SpecError as e:
            expect(tc["result"] == "invalid" and e.code == tc["error"], f"wtoken sign {tc['tcId']}: {e.code}")
    for tc in stored["verify"]:
        ks = {}
        for n in tc["verifierKeys"]:
            k = Key(keys[n]); ks[k.kid] = k
        try:
            seen = {(p["kid"], p["nonce"], p["expires"]) for p in tc.get("seen", [])}
            out = verify(ks, tc["request"], tc["now"], tc.get("skew", 30), tc.get("maxLifetime", 300), seen,
                         tc.get("requireWhash", True), tc.get("requiredHeaders"), tc.get("allowUnsignedBody", False))
            expect(tc["result"] == "valid" and out == tc["expected"], f"wtoken verify {tc['tcId']}")
        except SpecError as e:
            expect(tc["result"] == "invalid" and e.code == tc["error"], f"wtoken verify {tc['tcId']}: {e.code}")


def check_generated(name):
    """A file the reference writes in full: regenerated and compared."""
    def run(expect):
        fresh = GENERATED[name]()
        stored = json.loads((VECTORS / name).read_text())
        same = all(stored.get(part) == fresh.get(part) for part in ("tests", "sets", "keys", "sign", "verify"))
        expect(same and stored["numberOfTests"] == fresh["numberOfTests"], f"{name} differs from the reference")
    return run


def check_stages():
    """The check in parts, (name, function of `expect`), in the order `check` runs them. The mutation
    check (mutate.py) runs them in its own order: a mutant is killed sooner by the part that killed
    the last one."""
    return [("files", check_files), ("canonical_url.json", check_canonical_url),
            ("attest.json", check_sections("attest.json", "attest", ATTEST_SECTIONS,
                                           lambda _: ("result", "expected", "error", "retryAfter"))),
            ("device.json", check_sections("device.json", "device", DEVICE_SECTIONS, lambda _: ("result", "expected", "error"))),
            ("ratelimit.json", check_sections("ratelimit.json", "ratelimit", RATE_SECTIONS,
                                              lambda _: ("result", "expected", "error", "retryAfter", "reason", "cause"))),
            ("httpsig.json", check_sections("httpsig.json", "httpsig", HTTPSIG_GROUPS, lambda group: HTTPSIG_OUTPUTS[group])),
            ("whash.json", check_generated("whash.json")), ("wtoken.json", check_wtoken),
            ("jwk.json", check_generated("jwk.json")), ("refusal.json", check_generated("refusal.json")),
            ("message.json", check_generated("message.json"))]


def check():
    failures = 0

    def expect(ok, what):
        nonlocal failures
        if not ok:
            failures += 1
            print("FAIL", what)
    for _, stage in check_stages():
        stage(expect)
    print(f"reference check: {failures} failed" if failures else "reference check: all vector files agree with the reference")
    return failures == 0

if __name__ == "__main__":
    if sys.argv[1:] == ["generate"]:
        write("whash.json", generate_whash())
        write("wtoken.json", generate_wtoken())
        write("jwk.json", generate_jwk())
        write("refusal.json", generate_refusal())
        write("message.json", generate_message())
        write("attest.json", generate_attest())
        write("device.json", generate_device())
        write("ratelimit.json", generate_ratelimit())
        write("httpsig.json", generate_httpsig())
    elif sys.argv[1:] == ["generate", "httpsig"]:
        write("httpsig.json", generate_httpsig())
    elif sys.argv[1:] == ["generate", "ratelimit"]:
        write("ratelimit.json", generate_ratelimit())
    elif sys.argv[1:] == ["generate", "device"]:
        write("device.json", generate_device())
    elif sys.argv[1:] == ["generate", "message"]:
        write("message.json", generate_message())
    elif sys.argv[1:] == ["generate", "attest"]:
        write("attest.json", generate_attest())
    sys.exit(0 if check() else 1)
