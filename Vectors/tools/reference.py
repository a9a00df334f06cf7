#!/usr/bin/env python3
"""A second implementation of docs/SPEC.md (SignCore/3), written from the specification alone,
in Python with hashlib/hmac and the `cryptography` package. It generates the computed vector
files (whash, wtoken, jwk) and checks every vector file, including the hand-written
canonical_url.json. SignCore's Swift tests then check the Swift implementation against the
same files, so the two implementations are compared through the vectors.

    python3 Vectors/tools/reference.py generate   # rewrite whash.json, wtoken.json, jwk.json, refusal.json, message.json
    python3 Vectors/tools/reference.py generate message   # rewrite message.json alone
    python3 Vectors/tools/reference.py check      # check every vector file against this code
"""
import base64, functools, hashlib, hmac, json, pathlib, sys

VECTORS = pathlib.Path(__file__).resolve().parent.parent


class SpecError(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


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
}
STATUS_OF = {1: 401, 2: 401, 3: 401, 10: 401, 11: 401, 12: 401, 20: 401, 21: 401, 22: 401, 23: 401, 30: 401, 31: 401, 32: 401,
             40: 400, 41: 400, 42: 400, 44: 400, 45: 400, 43: 413, 4: 431, 24: 503, 25: 503, 13: 500, 50: 500, 60: 500,
             70: 502, 71: 504}
REASON = {400: "Bad Request", 401: "Unauthorized", 413: "Content Too Large", 431: "Request Header Fields Too Large",
          500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


def refusal(name, detail, key_id=None, retry_after=None):
    """§7.1: the status, the header fields and the problem document refusing with error `name`
    (`detail`: the refusing side's fixed sentence; `retry_after`: the seconds a server asks for)."""
    code, advice = CODES[name]
    status = STATUS_OF[code]
    headers = {"Content-Type": "application/problem+json", "Cache-Control": "no-store",
               "signcore-error": "%s;code=%d;advice=%s" % (name, code, advice)}
    if status == 401:
        headers["WWW-Authenticate"] = 'SignCore error="%s"' % name
    if status == 503:
        headers["Retry-After"] = str(retry_after)
    problem = {"type": "about:blank", "title": REASON[status], "status": status, "detail": detail, "code": code, "name": name,
               "advice": advice, "retryable": advice not in ("fixRequest", "fixConfiguration")}
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
    for name, (code, _) in sorted(CODES.items(), key=lambda c: c[1][0]):
        add("§7.1 %s (%d)" % (name, code), name, "the rule that failed, in one fixed sentence",
            key_id="hmac-2027" if name == "unknownKey" else None, retry_after=1 if STATUS_OF[code] == 503 else None)
    add("§7.1 unknownKey without a key id to name: no keyID member", "unknownKey", "no key has the token's key id")
    add("§7.1 keyID is a member for unknownKey only", "badSignature", "the signature does not verify", key_id="hmac-2026")
    add("§7.1 Retry-After carries the seconds the server asks for", "overloaded", "the replay guard is full", retry_after=30)
    add("§7.1 Retry-After only with 503", "replayed", "the nonce was already used", retry_after=30)
    add("§7.1 the detail is the refusing side's sentence, carried as it is", "unavailable",
        "a key source or store cannot be reached", retry_after=5)
    return {"spec": "SignCore/3", "algorithm": "refusal",
            "header": "docs/SPEC.md §7.1. Each case: an error (name, detail, keyID when the refusal has one) and the server's "
                      "retryAfter (seconds, for 503) -> the status, every header field of the response and the members of its "
                      "application/problem+json body",
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


def write(name, doc):
    (VECTORS / name).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    print(f"{name}: {doc['numberOfTests']} cases")


def check():
    failures = 0
    def expect(ok, what):
        nonlocal failures
        if not ok:
            failures += 1
            print("FAIL", what)
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
    generated = {"whash.json": generate_whash, "jwk.json": generate_jwk, "refusal.json": generate_refusal,
                 "message.json": generate_message}
    files = sorted(p.name for p in VECTORS.glob("*.json"))
    for name in files:
        expect(name in generated or name in ("canonical_url.json", "wtoken.json"), f"{name}: no check for this vector file")
    for name in ("canonical_url.json", "whash.json", "wtoken.json", "jwk.json", "refusal.json", "message.json"):
        expect(name in files, f"{name} is missing")
    for name in [n for n in files if n in generated or n == "wtoken.json"]:
        fresh = generated[name]() if name in generated else None
        stored = json.loads((VECTORS / name).read_text())
        if name == "wtoken.json":
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
        else:
            same = all(stored.get(part) == fresh.get(part) for part in ("tests", "sets", "keys", "sign", "verify"))
            expect(same and stored["numberOfTests"] == fresh["numberOfTests"], f"{name} differs from the reference")
    print(f"reference check: {failures} failed" if failures else "reference check: all vector files agree with the reference")
    return failures == 0


if __name__ == "__main__":
    if sys.argv[1:] == ["generate"]:
        write("whash.json", generate_whash())
        write("wtoken.json", generate_wtoken())
        write("jwk.json", generate_jwk())
        write("refusal.json", generate_refusal())
        write("message.json", generate_message())
    elif sys.argv[1:] == ["generate", "message"]:
        write("message.json", generate_message())
    sys.exit(0 if check() else 1)
