#!/usr/bin/env python3
"""Writes Vectors/canonical_url.json. Every expected value here is written by hand from
docs/SPEC.md §2; none is computed by SignCore."""
import json, pathlib

V, I = "valid", "invalid"
tests = [
    # (comment, input, expected or error code)
    ("§2.3 scheme and §2.4 host are lower-cased", "HTTPS://API.Example.COM/v1/Orders", "https://api.example.com/v1/Orders"),
    ("§2.6 empty path becomes /", "https://api.example.com", "https://api.example.com/"),
    ("§2.5 default https port dropped", "https://api.example.com:443/a", "https://api.example.com/a"),
    ("§2.5 default http port dropped", "http://api.example.com:80/a", "http://api.example.com/a"),
    ("§2.5 non-default port kept", "https://api.example.com:8443/a", "https://api.example.com:8443/a"),
    ("§2.5 port 80 is not the default for https", "https://api.example.com:80/a", "https://api.example.com:80/a"),
    ("§2.5 leading zeros of a port dropped, then default removed", "https://api.example.com:0443/a", "https://api.example.com/a"),
    ("§2.5 empty port means the default", "https://api.example.com:/a", "https://api.example.com/a"),
    ("§2.8 unreserved characters are decoded", "https://h.example/%7Euser/%41%62%2D%2E%5F", "https://h.example/~user/Ab-._"),
    ("§2.8 hex digits upper-cased", "https://h.example/a%3ab", "https://h.example/a%3Ab"),
    ("§2.8 reserved characters in the path are encoded", "https://h.example/a:b@c!$'()*,;=", "https://h.example/a%3Ab%40c%21%24%27%28%29%2A%2C%3B%3D"),
    ("§2.8 space and other bytes outside the unreserved set are encoded", "https://h.example/a b\"<>`{|}^\\", "https://h.example/a%20b%22%3C%3E%60%7B%7C%7D%5E%5C"),
    ("§2.6 encoded slash %2F stays data, not a separator", "https://h.example/a%2fb", "https://h.example/a%2Fb"),
    ("§2.6 + in the path is a literal plus", "https://h.example/a+b", "https://h.example/a%2Bb"),
    ("§2.7 + in the query is a space", "https://h.example/s?q=a+b", "https://h.example/s?q=a%20b"),
    ("§2.7 %2B in the query is a literal plus", "https://h.example/s?q=a%2Bb", "https://h.example/s?q=a%2Bb"),
    ("§2.6 dot segments removed", "https://h.example/a/./b/../c", "https://h.example/a/c"),
    ("§2.6 .. above the root stays at the root", "https://h.example/../../a", "https://h.example/a"),
    ("§2.6 trailing .. leaves a trailing slash", "https://h.example/a/b/..", "https://h.example/a/"),
    ("§2.6 encoded dot segments are dot segments", "https://h.example/a/%2E%2e/b", "https://h.example/b"),
    ("§2.6 empty segments are kept", "https://h.example//a//b/", "https://h.example//a//b/"),
    ("§2.6 a trailing slash is kept", "https://h.example/a/", "https://h.example/a/"),
    ("§2.7 pairs sorted by key", "https://h.example/s?b=2&a=1&c=3", "https://h.example/s?a=1&b=2&c=3"),
    ("§2.7 repeated keys keep their order", "https://h.example/s?a=2&b=0&a=1", "https://h.example/s?a=2&a=1&b=0"),
    ("§2.7 a key without = has an empty value", "https://h.example/s?flag&a=1", "https://h.example/s?a=1&flag="),
    ("§2.7 empty pairs dropped", "https://h.example/s?&a=1&&b=2&", "https://h.example/s?a=1&b=2"),
    ("§2.7 an empty query is no query", "https://h.example/s?", "https://h.example/s"),
    ("§2.7 a query of only & is no query", "https://h.example/s?&&", "https://h.example/s"),
    ("§2.7 split at the first =, later = are data", "https://h.example/s?a=b=c", "https://h.example/s?a=b%3Dc"),
    ("§2.7 empty key kept", "https://h.example/s?=v", "https://h.example/s?=v"),
    ("§2.7 sorting compares canonical bytes (upper case before lower case)", "https://h.example/s?b=1&B=2&a=3", "https://h.example/s?B=2&a=3&b=1"),
    ("§2.7 sorting compares canonical bytes (prefix first)", "https://h.example/s?ab=1&a=2", "https://h.example/s?a=2&ab=1"),
    ("§2.7 keys that share a first byte are ordered by the next", "https://h.example/s?sz=1&sa=2&s=3", "https://h.example/s?s=3&sa=2&sz=1"),
    ("§2.7 / and ? inside the query are encoded", "https://h.example/s?next=/a?b", "https://h.example/s?next=%2Fa%3Fb"),
    ("§2.7 an encoded & is data, not a separator", "https://h.example/s?a=1%262", "https://h.example/s?a=1%262"),
    ("§2.2 the fragment is dropped", "https://h.example/a?x=1#frag?y=2", "https://h.example/a?x=1"),
    ("§2.2 a fragment right after the host", "https://h.example#top", "https://h.example/"),
    ("§2.8 non-ASCII is UTF-8 percent-encoded", "https://h.example/café?q=crème", "https://h.example/caf%C3%A9?q=cr%C3%A8me"),
    ("§2.8 already encoded UTF-8 is unchanged but upper-cased", "https://h.example/caf%c3%a9", "https://h.example/caf%C3%A9"),
    ("§2.8 no Unicode normalisation: decomposed é differs from composed", "https://h.example/cafe\u0301", "https://h.example/cafe%CC%81"),
    ("§2.8 decoded bytes need not be UTF-8", "https://h.example/%ff%FE", "https://h.example/%FF%FE"),
    ("§2.4 IPv6 literal in RFC 5952 form", "https://[2001:DB8:0:0:0:0:0:1]:8443/a", "https://[2001:db8::1]:8443/a"),
    ("§2.4 IPv6 leading zeros dropped, longest zero run compressed", "http://[2001:0db8:0000:0001:0000:0000:0000:0001]/", "http://[2001:db8:0:1::1]/"),
    ("§2.4 IPv6 tie: the first longest run is compressed", "http://[2001:db8:0:0:1:0:0:1]/", "http://[2001:db8::1:0:0:1]/"),
    ("§2.4 IPv6 a single zero group is not compressed", "http://[2001:db8:0:1:1:1:1:1]/", "http://[2001:db8:0:1:1:1:1:1]/"),
    ("§2.4 IPv6 loopback", "http://[::1]:80/", "http://[::1]/"),
    ("§2.4 IPv6 with embedded IPv4, written in hex", "http://[::ffff:192.0.2.1]/", "http://[::ffff:c000:201]/"),
    ("§2.4 IPv4 address kept as written", "http://192.168.001.1:8080/x", "http://192.168.001.1:8080/x"),
    ("§2.4 a trailing dot in the host is kept", "https://api.example.com./a", "https://api.example.com./a"),
    ("§2.4 underscore and tilde allowed in the host", "https://my_host~1.example/", "https://my_host~1.example/"),
    ("§2.8 percent-encoded % stays encoded", "https://h.example/100%25", "https://h.example/100%25"),
    ("§2.5 leading zeros of a non-default port dropped", "https://h.example:08080/a", "https://h.example:8080/a"),
    ("§2.4 a host of 255 bytes", "https://" + "a" * 255 + "/", "https://" + "a" * 255 + "/"),
    ("§2.7 256 query pairs are accepted", "https://h.example/s?" + "&".join("k%03d=v" % i for i in range(256)),
     "https://h.example/s?" + "&".join("k%03d=v" % i for i in range(256))),
    ("§2.1 exactly 8192 bytes are accepted", "https://h.example/" + "a" * (8192 - 18), "https://h.example/" + "a" * (8192 - 18)),
    ("typical GET", "https://api.example.com/v1/orders?id=42&sort=desc&q=caf%C3%A9", "https://api.example.com/v1/orders?id=42&q=caf%C3%A9&sort=desc"),
    ("§2.6 a trailing . after an empty segment keeps the empty segment (RFC 3986 gives /a//)", "https://h.example/a//.", "https://h.example/a//"),
    ("§2.6 a trailing .. after an empty segment removes only the segment before it", "https://h.example/a//b/..", "https://h.example/a//"),
    ("§2.4 IPv6 :: may stand for a single zero group, written out in RFC 5952 form", "http://[1:2:3:4:5:6:7::]/", "http://[1:2:3:4:5:6:7:0]/"),
    ("§2.7 the 256-pair limit counts pairs after empty pieces are dropped", "https://h.example/s?" + "&&".join("k%03d=v" % i for i in range(256)) + "&&&",
     "https://h.example/s?" + "&".join("k%03d=v" % i for i in range(256))),
    # invalid
    ("§2.1 empty input", "", "invalidURL"),
    ("§2.3 no scheme", "api.example.com/a", "invalidURL"),
    ("§2.3 relative reference", "/v1/orders", "invalidURL"),
    ("§2.3 scheme other than http(s)", "ftp://h.example/a", "invalidURL"),
    ("§2.3 missing //", "https:h.example/a", "invalidURL"),
    ("§2.4 empty host", "https:///a", "invalidURL"),
    ("§2.4 userinfo refused", "https://user:pass@h.example/a", "invalidURL"),
    ("§2.4 non-ASCII host refused (use the A-label)", "https://bücher.example/", "invalidURL"),
    ("§2.4 percent-encoding in the host refused", "https://h%2Eexample/", "invalidURL"),
    ("§2.4 character not allowed in the host", "https://h!x.example/", "invalidURL"),
    ("§2.5 port not a number", "https://h.example:44a/", "invalidURL"),
    ("§2.5 port 0", "https://h.example:0/", "invalidURL"),
    ("§2.5 port above 65535", "https://h.example:65536/", "invalidURL"),
    ("§2.4 a host of 256 bytes", "https://" + "a" * 256 + "/", "invalidURL"),
    ("§2.4 an IPv6 literal followed by something other than : or the path", "http://[::1]x/", "invalidURL"),
    ("§2.7 257 query pairs", "https://h.example/s?" + "&".join("k%03d=v" % i for i in range(257)), "invalidURL"),
    ("§2.4 IPv6 without closing bracket", "http://[::1/a", "invalidURL"),
    ("§2.4 IPv6 with two ::", "http://[1::2::3]/", "invalidURL"),
    ("§2.4 IPv6 with nine groups", "http://[1:2:3:4:5:6:7:8:9]/", "invalidURL"),
    ("§2.4 IPv6 zone identifier refused", "http://[fe80::1%25eth0]/", "invalidURL"),
    ("§2.4 IPv6 group of five digits", "http://[12345::1]/", "invalidURL"),
    ("§2.4 IPv6 :: standing for no group at all (eight groups besides it)", "http://[1:2:3:4:5:6:7::8]/", "invalidURL"),
    ("§2.4 an empty IPv6 literal", "http://[]/", "invalidURL"),
    ("§2.4 an IPv4 part with a leading zero", "http://[::ffff:01.2.3.4]/", "invalidURL"),
    ("§2.4 an IPv4 part that is not last", "http://[::1.2.3.4:5]/", "invalidURL"),
    ("§2.4 an IPv4 part of three octets", "http://[::ffff:1.2.3]/", "invalidURL"),
    ("§2.4 an IPv4 part with an octet above 255", "http://[::ffff:1.2.3.256]/", "invalidURL"),
    ("§2.7 257 pairs are refused", "https://h.example/s?" + "&".join("k%03d=v" % i for i in range(257)), "invalidURL"),
    ("§2.8 % without two hex digits", "https://h.example/a%2", "invalidURL"),
    ("§2.8 % followed by non-hex", "https://h.example/a%zz", "invalidURL"),
    ("§2.1 control character (tab)", "https://h.example/a\tb", "invalidURL"),
    ("§2.1 control character (CR LF injection)", "https://h.example/a\r\nX-Evil: 1", "invalidURL"),
    ("§2.1 DEL", "https://h.example/a\u007f", "invalidURL"),
    ("§2.1 longer than 8192 bytes", "https://h.example/" + "a" * 8180, "invalidURL"),
]
hex_tests = [
    ("§2.1 invalid UTF-8 (lone continuation byte)", b"https://h.example/a\x80", "invalidURL"),
    ("§2.1 invalid UTF-8 (overlong encoding of /)", b"https://h.example/a\xc0\xafb", "invalidURL"),
    ("§2.1 invalid UTF-8 (UTF-16 surrogate)", b"https://h.example/\xed\xa0\x80", "invalidURL"),
    ("§2.1 NUL byte", b"https://h.example/a\x00", "invalidURL"),
]
pairs = [
    ("scheme and host case", "HTTPS://H.EXAMPLE/a", "https://h.example/a", "same"),
    ("default port", "https://h.example:443/a", "https://h.example/a", "same"),
    ("encoded unreserved", "https://h.example/%7Ea", "https://h.example/~a", "same"),
    ("hex case", "https://h.example/%c3%a9", "https://h.example/%C3%A9", "same"),
    ("raw and encoded non-ASCII", "https://h.example/é", "https://h.example/%C3%A9", "same"),
    ("raw and encoded reserved character in the path", "https://h.example/a(b)", "https://h.example/a%28b%29", "same"),
    ("query order of distinct keys", "https://h.example/s?b=2&a=1", "https://h.example/s?a=1&b=2", "same"),
    ("+ and %20 in the query", "https://h.example/s?q=a+b", "https://h.example/s?q=a%20b", "same"),
    ("key with and without =", "https://h.example/s?a", "https://h.example/s?a=", "same"),
    ("dot segments", "https://h.example/a/./b/../c", "https://h.example/a/c", "same"),
    ("fragment", "https://h.example/a#x", "https://h.example/a", "same"),
    ("empty query", "https://h.example/a?", "https://h.example/a", "same"),
    ("IPv6 spellings", "http://[2001:db8::0:1]/", "http://[2001:DB8:0:0:0:0:0:1]/", "same"),
    ("scheme", "http://h.example/a", "https://h.example/a", "different"),
    ("port", "https://h.example:8443/a", "https://h.example/a", "different"),
    ("host", "https://a.example/x", "https://b.example/x", "different"),
    ("trailing dot in the host", "https://h.example./a", "https://h.example/a", "different"),
    ("%2F and /", "https://h.example/a%2Fb", "https://h.example/a/b", "different"),
    ("path case", "https://h.example/A", "https://h.example/a", "different"),
    ("trailing slash", "https://h.example/a/", "https://h.example/a", "different"),
    ("double slash", "https://h.example//a", "https://h.example/a", "different"),
    ("+ in the path and in the query", "https://h.example/a+b", "https://h.example/a%20b", "different"),
    ("literal plus and space in the query", "https://h.example/s?q=a%2Bb", "https://h.example/s?q=a+b", "different"),
    ("order of repeated keys", "https://h.example/s?a=1&a=2", "https://h.example/s?a=2&a=1", "different"),
    ("encoded & and separator", "https://h.example/s?a=1%262", "https://h.example/s?a=1&2", "different"),
    ("encoded = and separator", "https://h.example/s?a%3Db=c", "https://h.example/s?a=b%3Dc", "different"),
    ("composed and decomposed é", "https://h.example/caf\u00e9", "https://h.example/cafe\u0301", "different"),
    ("empty value and absent key", "https://h.example/s?a=", "https://h.example/s", "different"),
]

# Cases added since, numbered after every earlier one (pairs included), so that earlier numbers
# stay. Each pins a decision no earlier case did (Vectors/tools/mutate.py found them).
HOST255 = "a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 63
late_tests = [
    ("§2.4 a non-ASCII byte inside an IPv6 literal", "https://[::\u00e9]/", "invalidURL"),
    ("§2.4 a non-digit in the IPv4 part of an IPv6 literal", "https://[::1.2.3.a]/", "invalidURL"),
    ("§2.4 an IPv4 octet of 255 is accepted", "https://[::1.2.3.255]/", "https://[::102:3ff]/"),
    ("§2.4 :: then an IPv4 part", "https://[::1.2.3.4]/", "https://[::102:304]/"),
    ("§2.4 a group, ::, then an IPv4 part", "https://[1::1.2.3.4]/", "https://[1::102:304]/"),
    ("§2.4 six groups then an IPv4 part, no ::", "https://[1:2:3:4:5:6:1.2.3.4]/", "https://[1:2:3:4:5:6:102:304]/"),
    ("§2.4 a group that is not hex", "https://[::g]/", "invalidURL"),
    ("§2.4 an empty group (:::)", "https://[1:::2]/", "invalidURL"),
    ("§2.4 a run of exactly two zero groups is written as ::", "https://[1:0:0:2:3:4:5:6]/", "https://[1::2:3:4:5:6]/"),
    ("§2.4 the longest zero run at the start, a single zero group at the end", "https://[0:0:1:2:3:4:5:0]/", "https://[::1:2:3:4:5:0]/"),
    ("§2.1 a URL of exactly 8192 bytes", "https://h.example/" + "a" * (8192 - 18), "https://h.example/" + "a" * (8192 - 18)),
    ("§2.1 a URL of 8193 bytes", "https://h.example/" + "a" * (8193 - 18), "invalidURL"),
    ("§2.1 the byte 0x1F is refused", "https://h.example/a\u001fb", "invalidURL"),
    ("§2.4 a host of one byte", "https://a/", "https://a/"),
    ("§2.4 a host of 255 bytes", "https://" + HOST255 + "/", "https://" + HOST255 + "/"),
    ("§2.4 a host of 256 bytes", "https://" + HOST255 + "d/", "invalidURL"),
    ("§2.4 an empty host before a port", "https://:8443/", "invalidURL"),
    ("§2.4 an empty authority", "https:///a", "invalidURL"),
    ("§2.5 port 1", "https://h.example:1/", "https://h.example:1/"),
    ("§2.5 port 65535", "https://h.example:65535/", "https://h.example:65535/"),
    ("§2.5 port 65536", "https://h.example:65536/", "invalidURL"),
    ("§2.5 port 0", "https://h.example:0/", "invalidURL"),
]

cases = []
n = 0
for comment, inp, exp in tests:
    n += 1
    case = {"tcId": n, "comment": comment, "input": inp}
    if exp.startswith("http"):
        case.update(result=V, expected=exp)
    else:
        case.update(result=I, error=exp)
    cases.append(case)
for comment, raw, err in hex_tests:
    n += 1
    cases.append({"tcId": n, "comment": comment, "inputHex": raw.hex(), "result": I, "error": err})
pair_cases = []
for comment, a, b, res in pairs:
    n += 1
    pair_cases.append({"tcId": n, "comment": comment, "a": a, "b": b, "result": res})

for comment, inp, exp in late_tests:
    n += 1
    case = {"tcId": n, "comment": comment, "input": inp}
    if exp.startswith("http"):
        case.update(result=V, expected=exp)
    else:
        case.update(result=I, error=exp)
    cases.append(case)

doc = {
    "spec": "SignCore/3",
    "algorithm": "canonical-url",
    "header": "docs/SPEC.md §2. tests: input (UTF-8 text, or inputHex for raw bytes) -> expected canonical URL, or error code. pairs: whether two spellings canonicalise to the same bytes.",
    "numberOfTests": len(cases) + len(pair_cases),
    "tests": cases,
    "pairs": pair_cases,
}
out = pathlib.Path(__file__).resolve().parent.parent / "canonical_url.json"
out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
print(f"{out.name}: {len(cases)} tests, {len(pair_cases)} pairs")
