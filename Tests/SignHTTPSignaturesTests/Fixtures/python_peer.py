#!/usr/bin/env python3
"""An independent RFC 9421 peer for SignHTTPSignaturesTests: PyPI's http-message-signatures 3.0.0
signs and verifies, Content-Digest is computed here with hashlib and http-sfv (RFC 9530).

    python_peer.py keys            print fresh keys of each algorithm (raw bytes, base64url)
    python_peer.py sign  < jobs    sign each request of the jobs, print them with their fields
    python_peer.py verify < jobs   verify each request, print [{"ok": bool, "error": str}]

A job is {"method", "url", "headers": [[name, value]...], "body": base64url, "alg", "key_id",
"components": [...], "created", "nonce", "tag", "label"}; keys come in the same document as
{"keys": {id: {"alg", "secret" | "private" | "public"}}, "jobs": [...]}.
"""
import base64
import datetime
import hashlib
import json
import sys

import http_sfv
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from http_message_signatures import HTTPMessageSigner, HTTPMessageVerifier, HTTPSignatureKeyResolver, algorithms
from http_message_signatures._messages import _Request
from http_message_signatures.structures import CaseInsensitiveDict

ALGORITHMS = {"hmac-sha256": algorithms.HMAC_SHA256, "ed25519": algorithms.ED25519, "ecdsa-p256-sha256": algorithms.ECDSA_P256_SHA256}


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def fresh_keys():
    import os
    ed = ed25519.Ed25519PrivateKey.generate()
    p256 = ec.generate_private_key(ec.SECP256R1())
    numbers = p256.private_numbers()
    point = p256.public_key().public_numbers()
    return {
        "hmac": {"alg": "hmac-sha256", "secret": b64u(os.urandom(32))},
        "ed": {"alg": "ed25519", "seed": b64u(ed.private_bytes_raw()), "public": b64u(ed.public_key().public_bytes_raw())},
        "p256": {"alg": "ecdsa-p256-sha256", "private": b64u(numbers.private_value.to_bytes(32, "big")),
                 "public": b64u(b"\x04" + point.x.to_bytes(32, "big") + point.y.to_bytes(32, "big"))},
    }


class Keys(HTTPSignatureKeyResolver):
    def __init__(self, keys):
        self.keys = keys

    def resolve_private_key(self, key_id):
        key = self.keys[key_id]
        if key["alg"] == "hmac-sha256":
            return unb64u(key["secret"])
        if key["alg"] == "ed25519":
            return ed25519.Ed25519PrivateKey.from_private_bytes(unb64u(key["seed"]))
        return ec.derive_private_key(int.from_bytes(unb64u(key["private"]), "big"), ec.SECP256R1())

    def resolve_public_key(self, key_id):
        key = self.keys[key_id]
        if key["alg"] == "hmac-sha256":
            return unb64u(key["secret"])
        if key["alg"] == "ed25519":
            return ed25519.Ed25519PublicKey.from_public_bytes(unb64u(key["public"]))
        return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64u(key["public"]))


def content_digest(body: bytes) -> str:
    """RFC 9530: a dictionary of sha-256 and sha-512 over the content, serialised by http-sfv."""
    digests = {"sha-256": hashlib.sha256(body).digest(), "sha-512": hashlib.sha512(body).digest()}
    return http_sfv.Dictionary({name: http_sfv.Item(value) for name, value in digests.items()}).__str__()


def request_of(job):
    headers = CaseInsensitiveDict()
    for name, value in job["headers"]:
        headers[name] = value if name not in headers else headers[name] + ", " + value
    return _Request(method=job["method"], url=job["url"], headers=headers)


def sign(document):
    keys = Keys(document["keys"])
    out = []
    for job in document["jobs"]:
        request = request_of(job)
        body = unb64u(job.get("body", ""))
        components = list(job["components"])
        if body or job["method"] in ("POST", "PUT", "PATCH"):
            request.headers["Content-Digest"] = content_digest(body)
            components.append("content-digest")
        signer = HTTPMessageSigner(signature_algorithm=ALGORITHMS[job["alg"]], key_resolver=keys)
        signer.sign(request, key_id=job["key_id"], created=datetime.datetime.fromtimestamp(job["created"], datetime.timezone.utc),
                    nonce=job.get("nonce"), label=job.get("label", "sig1"), tag=job.get("tag"), covered_component_ids=components,
                    body=body if "content-digest" in components else None, use_existing_digest="content-digest" in components)
        out.append({"method": request.method, "url": request.url, "headers": [[k, v] for k, v in request.headers.items()],
                    "body": job.get("body", "")})
    return out


def verify(document):
    keys = Keys(document["keys"])
    out = []
    for job in document["jobs"]:
        request = request_of(job)
        verifier = HTTPMessageVerifier(signature_algorithm=ALGORITHMS[job["alg"]], key_resolver=keys)
        try:
            results = verifier.verify(request, max_age=datetime.timedelta(minutes=5), body=unb64u(job.get("body", "")))
            out.append({"ok": len(results) > 0, "error": "", "covered": [list(r.covered_components) for r in results]})
        except Exception as error:  # a refusal: its type names the reason
            out.append({"ok": False, "error": type(error).__name__ + ": " + str(error)[:200]})
    return out


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "keys":
        print(json.dumps(fresh_keys()))
    else:
        document = json.load(sys.stdin)
        print(json.dumps(sign(document) if mode == "sign" else verify(document)))
