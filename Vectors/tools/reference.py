#!/usr/bin/env python3
"""A second implementation of docs/SPEC.md (SignCore/2), written from the specification alone,
in Python with hashlib/hmac and the `cryptography` package. It generates the computed vector
files (whash, wtoken, jwk) and checks every vector file, including the hand-written
canonical_url.json. SignCore's Swift tests then check the Swift implementation against the
same files, so the two implementations are compared through the vectors.

    python3 Vectors/tools/reference.py generate   # rewrite whash.json, wtoken.json, jwk.json
    python3 Vectors/tools/reference.py check      # check every vector file against this code
"""
import base64, hashlib, hmac, json, pathlib, sys

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
        return hashlib.sha256(b"SignCore/2 whash url\n" + method.encode() + b" " + canonical_url(url)).digest()
    if method in BODY_METHODS:
        return hashlib.sha256(b"SignCore/2 whash body\n" + body).digest()
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


class Key:
    def __init__(self, jwk: dict):
        self.jwk = jwk
        kty = jwk.get("kty")
        alg = jwk.get("alg")
        if "use" in jwk and jwk["use"] != "sig":
            raise SpecError("invalidKey")
        try:
            if kty == "oct":
                self.alg = "HS256"
                self.secret = unb64u(jwk["k"])
                if not 32 <= len(self.secret) <= 1024:
                    raise SpecError("invalidKey")
                thumb = {"k": jwk["k"], "kty": "oct"}
            elif kty == "OKP":
                self.alg = "EdDSA"
                if jwk.get("crv") != "Ed25519":
                    raise SpecError("invalidKey")
                x = unb64u(jwk["x"])
                if len(x) != 32:
                    raise SpecError("invalidKey")
                self.public = ed25519.Ed25519PublicKey.from_public_bytes(x)
                self.private = None
                if "d" in jwk:
                    d = unb64u(jwk["d"])
                    if len(d) != 32:
                        raise SpecError("invalidKey")
                    self.private = ed25519.Ed25519PrivateKey.from_private_bytes(d)
                    if self.private.public_key().public_bytes_raw() != x:
                        raise SpecError("invalidKey")
                thumb = {"crv": "Ed25519", "kty": "OKP", "x": jwk["x"]}
            elif kty == "EC":
                self.alg = "ES256"
                if jwk.get("crv") != "P-256":
                    raise SpecError("invalidKey")
                x, y = unb64u(jwk["x"]), unb64u(jwk["y"])
                if len(x) != 32 or len(y) != 32:
                    raise SpecError("invalidKey")
                try:
                    self.public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + x + y)
                except ValueError:
                    raise SpecError("invalidKey")
                self.private = None
                if "d" in jwk:
                    d = unb64u(jwk["d"])
                    if len(d) != 32 or not 1 <= int.from_bytes(d, "big") < P256_N:
                        raise SpecError("invalidKey")
                    self.private = ec.derive_private_key(int.from_bytes(d, "big"), ec.SECP256R1())
                    nums = self.private.public_key().public_numbers()
                    if (nums.x, nums.y) != (int.from_bytes(x, "big"), int.from_bytes(y, "big")):
                        raise SpecError("invalidKey")
                thumb = {"crv": "P-256", "kty": "EC", "x": jwk["x"], "y": jwk["y"]}
            else:
                raise SpecError("invalidKey")
        except (KeyError, ValueError, TypeError):
            raise SpecError("invalidKey")
        if alg is not None and alg != self.alg:
            raise SpecError("algorithmMismatch")
        self.thumbprint = b64u(hashlib.sha256(json.dumps(thumb, separators=(",", ":")).encode()).digest())
        kid = jwk.get("kid", self.thumbprint)
        if not (1 <= len(kid) <= 64) or any(c not in ALPHABET for c in kid):
            raise SpecError("invalidKey")
        self.kid = kid

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
        return hashlib.sha256(b"SignCore/2 whash url\n" + method.encode() + b" " + canonical).digest()
    return hashlib.sha256(b"SignCore/2 target\n" + method.encode() + b" " + canonical).digest()


def signing_input(alg, kid, target, wh, created, lifetime, nonce, account: bytes) -> bytes:
    return (b"SignCore/2 wtoken\n" + bytes([len(alg)]) + alg.encode() + bytes([len(kid)]) + kid.encode()
            + target + wh + created.to_bytes(8, "big") + lifetime.to_bytes(4, "big") + nonce
            + len(account).to_bytes(2, "big") + account)


def sign(key: Key, method, url: bytes, body: bytes, created, lifetime, nonce, account: str):
    canonical = canonical_url(url)
    wh = whash(method, url, body)
    target = target_digest(method, canonical)
    si = signing_input(key.alg, key.kid, target, wh, created, lifetime, nonce, account.encode())
    token = ".".join(["v2", key.kid, str(created), str(lifetime), b64u(nonce), b64u(target[:6]), b64u(account.encode()), b64u(key.sign(si))])
    return dict(canonicalURL=canonical.decode(), whash=b64u(wh), targetDigest=target.hex(), signingInput=si.hex(), wtoken=token)


def parse_token(text: str):
    if len(text.encode()) > 1024:
        raise SpecError("headerTooLarge")
    f = text.split(".")
    if f[0] != "v2":
        raise SpecError("unsupportedVersion" if f[0].startswith("v") and len(f) > 1 else "malformedToken")
    if len(f) != 8:
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
        nonce, target, account, sig = unb64u(f[4]), unb64u(f[5]), unb64u(f[6]), unb64u(f[7])
        if len(nonce) != 16 or len(target) != 6 or len(account) > 256 or len(sig) not in (32, 64):
            raise SpecError("malformedToken")
        account.decode("utf-8", "strict")
    except (ValueError, UnicodeDecodeError):
        raise SpecError("malformedToken")
    return dict(kid=kid, created=created, lifetime=lifetime, nonce=nonce, target=target, account=account, signature=sig)


LENGTHS = {"HS256": 32, "EdDSA": 64, "ES256": 64}


def verify(keys: dict, req: dict, now: int, skew=30, max_lifetime=300, seen=(), require_whash=True):
    """§5 steps 1-9; returns the verified identity or raises SpecError."""
    if req.get("wtoken") is None:
        raise SpecError("missingHeader")
    t = parse_token(req["wtoken"])
    method = req["method"]
    if method not in URL_METHODS + BODY_METHODS:
        raise SpecError("unsupportedMethod")
    url = req["url"].encode()
    canonical = canonical_url(url)
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
    wh = whash(method, url, body_of(req.get("body")))
    if req.get("whash") is not None:
        try:
            sent = unb64u(req["whash"])
        except ValueError:
            raise SpecError("whashMismatch")
        if len(sent) != 32 or not hmac.compare_digest(sent, wh):
            raise SpecError("whashMismatch")
    elif require_whash:
        raise SpecError("missingHeader")
    target = target_digest(method, canonical)
    if target[:6] != t["target"]:
        raise SpecError("targetMismatch")
    si = signing_input(key.alg, key.kid, target, wh, t["created"], t["lifetime"], t["nonce"], t["account"])
    if not key.verify(si, t["signature"]):
        raise SpecError("badSignature")
    if t["nonce"].hex() in seen:
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
    return {"spec": "SignCore/2", "algorithm": "whash", "header": "docs/SPEC.md §3; bodies per §8", "numberOfTests": len(cases), "tests": cases}


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

    def add_sign(name, comment, key, method, url, body=None, account="", lifetime=60, nonce_index=None):
        nonce = NONCES[nonce_index if nonce_index is not None else len(signs)]
        out = sign(keys[key], method, url.encode(), body_of(body), CREATED, lifetime, nonce, account)
        case = {"tcId": len(signs) + 1, "comment": comment, "key": key, "method": method, "url": url}
        if body is not None:
            case["body"] = body
        case.update(created=CREATED, lifetime=lifetime, nonce=nonce.hex(), account=account, result="valid", expected=out)
        signs.append(case)
        tokens[name] = dict(method=method, url=url, body=body, whash=out["whash"], wtoken=out["wtoken"])

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

    # P-256 tokens are randomised: made here and given as verify-only cases.
    def p256_token(method, url, body=None, account=""):
        out = sign(keys["p256"], method, url.encode(), body_of(body), CREATED, 60, NONCES[40 + len(tokens) % 20], account)
        return dict(method=method, url=url, body=body, whash=out["whash"], wtoken=out["wtoken"])
    tokens["pget"] = p256_token("GET", TYPICAL)
    tokens["ppost"] = p256_token("POST", "https://api.example.com/v1/orders", {"utf8": "{\"item\":\"pen\"}"}, account="acct-7")

    def add_verify(comment, request, keys_=("hmac", "ed25519", "p256Public"), now=CREATED + 10, skew=30, max_lifetime=300, seen=(), require=True):
        case = {"tcId": len(signs) + len(verifies) + 1, "comment": comment, "verifierKeys": list(keys_), "now": now,
                "skew": skew, "maxLifetime": max_lifetime, "requireWhash": require, "seenNonces": list(seen), "request": request}
        try:
            out = verify(keyset(keys_), request, now, skew, max_lifetime, seen, require)
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
    add_verify("§5 step 8: tampered body with a matching whash header", req("hpost", body={"utf8": "{\"item\":\"book\",\"qty\":9}"},
               whash=b64u(whash("POST", b"", b"{\"item\":\"book\",\"qty\":9}"))))
    add_verify("§5 step 6: changed query on a GET (the whash covers the URL)", req("hget", url="https://api.example.com/v1/orders?id=43&sort=desc&q=caf%C3%A9"))
    add_verify("§5 step 7: changed query with a recomputed whash header", req("hget", url="https://api.example.com/v1/orders?id=43&sort=desc&q=caf%C3%A9",
               whash=b64u(whash("GET", b"https://api.example.com/v1/orders?id=43&sort=desc&q=caf%C3%A9", b""))))
    add_verify("§5 step 6: other method of the URL class (the whash covers the method)", req("hdel", method="GET"))
    add_verify("§5 step 7: other method of the URL class with a recomputed whash header", req("hdel", method="GET",
               whash=b64u(whash("GET", b"https://api.example.com/v1/orders/42", b""))))
    add_verify("§5 step 7: other host", req("hpost", url="https://evil.example.com/v1/orders"))
    add_verify("§5 step 7: other scheme", req("hpost", url="http://api.example.com/v1/orders"))
    add_verify("§5 step 7: other port", req("hpost", url="https://api.example.com:8443/v1/orders"))
    add_verify("§5 step 7: other path", req("hpost", url="https://api.example.com/v1/orders/"))
    add_verify("§5 step 7: other method of the same class", req("hpost", method="PUT"))
    add_verify("§5 step 5: expired at created + lifetime", req("hget"), now=CREATED + 60)
    add_verify("§5 step 5: created beyond the skew", req("hget"), now=CREATED - 31)
    add_verify("§5 step 9: replayed nonce", req("hget"), seen=(NONCES[0].hex(),))
    add_verify("§5 step 3: unknown key id", req("eget"), keys_=("hmac",))
    add_verify("§5 step 8: same key id, other secret (wrong key)", req("hget"), keys_=("hmacOther",))
    add_verify("§6.3 rotation: once the old key is removed its tokens are refused", req("eget"), keys_=("hmac", "ed25519Other", "p256Public"))
    add_verify("§5 step 3: a 32-byte signature under an EdDSA key", req("eget", wtoken=tok("eget", 7, b64u(bytes(32)))))
    add_verify("§5 step 4: lifetime beyond the verifier maximum", req("hdel"), max_lifetime=120)
    add_verify("§5 step 4: lifetime 86400 beyond the default maximum", req("edel"))
    add_verify("§4.1 truncated token", req("hget", wtoken=tokens["hget"]["wtoken"][:-10]))
    add_verify("§4.1 unsupported version (a SignCore/1 token)", req("hget", wtoken="v1" + tokens["hget"]["wtoken"][2:]))
    add_verify("§4.1 unsupported version", req("hget", wtoken="v3" + tokens["hget"]["wtoken"][2:]))
    add_verify("§4.1 too few fields", req("hget", wtoken="v2.hmac-2026.1790000000"))
    add_verify("§4.1 leading zero in created", req("hget", wtoken=tok("hget", 2, "0" + str(CREATED))))
    add_verify("§4.1 lifetime 0", req("hget", wtoken=tok("hget", 3, "0")))
    add_verify("§4.1 lifetime above 86400", req("hget", wtoken=tok("hget", 3, "86401")))
    add_verify("§4.1 created of 12 digits", req("hget", wtoken=tok("hget", 2, "1" + "0" * 11)))
    add_verify("§4.1 created with a sign", req("hget", wtoken=tok("hget", 2, "+" + str(CREATED))))
    add_verify("§4.1 kid of 65 characters", req("hget", wtoken=tok("hget", 1, "k" * 65)))
    add_verify("§4.1 kid with a character outside base64url", req("hget", wtoken=tok("hget", 1, "hmac+2026")))
    add_verify("§4.1 nonce of 15 bytes", req("hget", wtoken=tok("hget", 4, b64u(NONCES[0][:15]))))
    add_verify("§4.1 target of 8 bytes", req("hget", wtoken=tok("hget", 5, b64u(bytes(8)))))
    add_verify("§4.1 signature of 48 bytes", req("hget", wtoken=tok("hget", 7, b64u(bytes(48)))))
    add_verify("§4.1 account of 257 bytes", req("hget", wtoken=tok("hget", 6, b64u(b"a" * 257))))
    add_verify("§4.1 account that is not UTF-8", req("hget", wtoken=tok("hget", 6, b64u(b"\xc3\x28"))))
    add_verify("§4.1 nine fields", req("hget", wtoken=tokens["hget"]["wtoken"] + ".AA"))
    add_verify("§4.1 an empty wtoken header", req("hget", wtoken=""))
    add_verify("§1.2 padding in the nonce", req("hget", wtoken=tok("hget", 4, b64u(NONCES[0]) + "==")))
    hmac_sig = tokens["hget"]["wtoken"].split(".")[7]  # 43 characters: the last carries 2 unused bits
    add_verify("§1.2 non-canonical base64url in the signature (unused bits set)",
               req("hget", wtoken=tok("hget", 7, hmac_sig[:-1] + ALPHABET[ALPHABET.index(hmac_sig[-1]) ^ 1])))
    add_verify("§4.1 a token longer than 1024 bytes", req("hget", wtoken=tokens["hget"]["wtoken"] + "A" * 1024))
    add_verify("§5 step 1: no wtoken header", req("hget", wtoken=None))
    add_verify("§5 step 6: no whash header", req("hpost", whash=None))
    add_verify("§5 step 6: a whash header that is not 32 bytes", req("hpost", whash="abc"))
    add_verify("§5 step 8: one signature byte changed", req("hget", wtoken=tok("hget", 7, b64u(bytes([unb64u(tokens["hget"]["wtoken"].split(".")[7])[0] ^ 1]) + unb64u(tokens["hget"]["wtoken"].split(".")[7])[1:]))))
    add_verify("§5 step 8: account changed", req("hacct", wtoken=tok("hacct", 6, b64u(b"admin"))))
    add_verify("§5 step 8: account added", req("hget", wtoken=tok("hget", 6, b64u(b"admin"))))
    add_verify("§5 step 8: created changed by one second", req("hget", wtoken=tok("hget", 2, str(CREATED + 1))))
    add_verify("§5 step 8: lifetime changed", req("hget", wtoken=tok("hget", 3, "61")))
    add_verify("§5 step 8: nonce changed", req("hget", wtoken=tok("hget", 4, b64u(NONCES[9]))))
    add_verify("§5 step 3: key id changed to one not in the set", req("hget", wtoken=tok("hget", 1, "hmac-2027")))
    add_verify("§5 step 3: a 64-byte signature under the HS256 key", req("hget", wtoken=tok("hget", 7, tokens["eget"]["wtoken"].split(".")[7])))
    add_verify("§5 step 8: EdDSA signature changed", req("eget", wtoken=tok("eget", 7, b64u(bytes(64)))))
    add_verify("§5 step 8: ES256 signature changed", req("pget", wtoken=tok("pget", 7, b64u(bytes([1]) * 64))))
    add_verify("§5 step 3: an ES256 token at a verifier without the ES256 key", req("pget"), keys_=("hmac", "ed25519"))
    add_verify("§3.1 method not signable", req("hget", method="TRACE"))
    add_verify("§3.1 lower-case method", req("hget", method="get"))
    add_verify("§2 the received URL is invalid", req("hget", url="https://api.example.com/v1/orders?id=%4"))
    add_verify("§5 step 8: account replaced by a non-ASCII one", req("hget",
               wtoken=tok("hget", 6, b64u("用户".encode()))))
    return {"spec": "SignCore/2", "algorithm": "wtoken", "header": "docs/SPEC.md §4-§6. keys: JWKs by name. sign: deterministic cases. verify: requests against a verifier made of verifierKeys, a replay guard already holding seenNonces (hex), clock now",
            "keys": KEYS, "numberOfTests": len(signs) + len(verifies), "sign": signs, "verify": verifies}


def unique_members(pairs):
    """JSON object hook: §6.1 refuses duplicate member names."""
    if len({k for k, _ in pairs}) != len(pairs):
        raise SpecError("invalidKey")
    return dict(pairs)


def generate_jwk():
    cases = []
    def add(comment, text):
        case = {"tcId": len(cases) + 1, "comment": comment, "jwk": text}
        try:
            doc = json.loads(text, object_pairs_hook=unique_members)
            if not isinstance(doc, dict):
                raise SpecError("invalidKey")
            k = Key(doc)
            case.update(result="valid", expected={"kid": k.kid, "thumbprint": k.thumbprint, "alg": k.alg})
        except SpecError as e:
            case.update(result="invalid", error=e.code)
        except json.JSONDecodeError:
            case.update(result="invalid", error="invalidKey")
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

    sets = []
    def add_set(comment, text):
        case = {"tcId": len(cases) + len(sets) + 1, "comment": comment, "jwks": text}
        try:
            case.update(result="valid", kids=sorted(k.kid for k in parse_key_set(text)))
        except SpecError as e:
            case.update(result="invalid", error=e.code)
        sets.append(case)

    add_set("§6.1 a JWK Set of three keys", dumps({"keys": [KEYS["hmac"], KEYS["ed25519"], KEYS["p256Public"]]}))
    add_set("§6.1 an empty JWK Set", dumps({"keys": []}))
    add_set("§6.1 a single JWK where a set is expected is a set of one", dumps(KEYS["ed25519"]))
    add_set("§6.1 two keys with the same id are refused", dumps({"keys": [KEYS["hmac"], KEYS["hmacOther"]]}))
    add_set("§6.1 one invalid key refuses the whole set", dumps({"keys": [KEYS["hmac"], {"kty": "oct", "k": "AA"}]}))
    add_set("§6.1 keys must be an array", dumps({"keys": KEYS["hmac"]}))
    return {"spec": "SignCore/2", "algorithm": "jwk", "header": "docs/SPEC.md §6. tests: one JWK -> key id, thumbprint, alg or error. sets: a JWK Set -> its key ids (sorted) or error",
            "numberOfTests": len(cases) + len(sets), "tests": cases, "sets": sets}


def parse_key_set(text):
    """§6.1: a JWK Set, or a single JWK as a set of one; duplicate ids refused."""
    try:
        doc = json.loads(text, object_pairs_hook=unique_members)
    except json.JSONDecodeError:
        raise SpecError("invalidKey")
    if not isinstance(doc, dict):
        raise SpecError("invalidKey")
    if "keys" not in doc:
        return [Key(doc)]
    if not isinstance(doc["keys"], list) or not all(isinstance(j, dict) for j in doc["keys"]):
        raise SpecError("invalidKey")
    keys = [Key(j) for j in doc["keys"]]
    if len({k.kid for k in keys}) != len(keys):
        raise SpecError("invalidKey")
    return keys


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
    for name, fresh in (("whash.json", generate_whash()), ("wtoken.json", None), ("jwk.json", generate_jwk())):
        stored = json.loads((VECTORS / name).read_text())
        if name == "wtoken.json":
            keys = stored["keys"]
            for tc in stored["sign"]:
                if Key(keys[tc["key"]]).alg == "ES256":
                    continue
                out = sign(Key(keys[tc["key"]]), tc["method"], tc["url"].encode(), body_of(tc.get("body")), tc["created"], tc["lifetime"], bytes.fromhex(tc["nonce"]), tc["account"])
                expect(out == tc["expected"], f"wtoken sign {tc['tcId']}")
            for tc in stored["verify"]:
                ks = {}
                for n in tc["verifierKeys"]:
                    k = Key(keys[n]); ks[k.kid] = k
                try:
                    out = verify(ks, tc["request"], tc["now"], tc["skew"], tc["maxLifetime"], tc["seenNonces"], tc["requireWhash"])
                    expect(tc["result"] == "valid" and out == tc["expected"], f"wtoken verify {tc['tcId']}")
                except SpecError as e:
                    expect(tc["result"] == "invalid" and e.code == tc["error"], f"wtoken verify {tc['tcId']}: {e.code}")
        else:
            expect(stored["tests"] == fresh["tests"] and stored.get("sets") == fresh.get("sets"), f"{name} differs from the reference")
    print(f"reference check: {failures} failed" if failures else "reference check: all vector files agree with the reference")
    return failures == 0


if __name__ == "__main__":
    if sys.argv[1:] == ["generate"]:
        write("whash.json", generate_whash())
        write("wtoken.json", generate_wtoken())
        write("jwk.json", generate_jwk())
    sys.exit(0 if check() else 1)
