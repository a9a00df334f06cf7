#!/usr/bin/env python3
"""Mutation check of the vectors: every decision the Python reference (reference.py) makes must be
pinned by at least one vector.

For each decision in the functions that implement docs/SPEC.md, docs/ATTEST.md and docs/HTTPSIG.md -- each comparison, each integer
limit, each error code returned, each `if` check and each operand of a condition, each
transformation of a value, the order of adjacent checks -- a mutant of reference.py is made
(from its syntax tree) and the parts of `check()` are run against every vector file with it,
in-process, stopping at the first vector that fails (each worker first runs the part that killed its
last mutant: mutants of one function are neighbours). A mutant that no vector kills is a decision the vectors do not
pin. Mutants that cannot change any output (equivalent mutants) are listed with a reason each in
mutate_allow.txt; any other survivor fails this check, and so does an allow-list entry that no
longer names a surviving mutant.

    python3 Vectors/tools/mutate.py            # check: exit 1 on a new survivor
    python3 Vectors/tools/mutate.py --list     # every mutant's id, no run
    python3 Vectors/tools/mutate.py -j 2       # workers (default: 2)
"""
import ast, copy, multiprocessing, os, pathlib, signal, sys, time

TOOLS = pathlib.Path(__file__).resolve().parent
REFERENCE = TOOLS / "reference.py"
ALLOW = TOOLS / "mutate_allow.txt"
TIMEOUT = 3  # seconds: a mutant that loops forever is killed (counted as killed by a timeout)

# The functions that implement the specification (vector generation, file reading and the check
# itself are not decisions of the specification).
FUNCTIONS = {
    "unb64u", "normalise", "ipv6", "canonical_url", "whash", "ed25519_point_ok", "Key.__init__", "Key.sign", "Key.verify",
    "target_digest", "covered_names", "canonical_line", "header_block", "headers_digest", "signing_input",
    "longest_token", "sign", "version_field", "parse_token", "verify", "unique_members", "refuse_constant", "depth",
    "load_document", "refusal", "parse_key_set", "message_input", "sign_message", "verify_message",
    # docs/ATTEST.md
    "key_thumbprint", "origin_of", "origin_digest", "issuing_key", "named_key", "signature_verifies", "challenge_body",
    "issue_challenge", "challenge_id", "attest_field", "parse_challenge", "pow_prefix", "sub_solution", "meets_difficulty", "solve",
    "answer_meets", "parse_attest_request", "answer_bytes", "redeem", "attest_response", "token_body", "issue_token",
    "parse_attest_token", "check_attest_token", "kind_admits", "issue_bound_challenge",
    # docs/ATTEST.md §9
    "decode_base64", "parse_registration", "register", "observe_counter", "counter_field", "registered_device",
    # docs/ATTEST.md §10 (and SPEC §7.1's action)
    "action_of", "gcra_limit", "gcra", "bucket_digest", "issue_offer", "issue_pass", "bypass_refusal", "bypass_response_reads",
    "redeem_bypass", "rate_pass",
    # docs/HTTPSIG.md (RFC 9421, RFC 9530)
    "sf_byte_sequence", "parse_sf", "serialise_sf", "field_lines", "component_identifier", "identifier_key", "written_identifier",
    "read_signature_fields", "form_decode", "form_encode", "query_param", "derived_value", "component_value", "signature_base",
    "is_signature_base", "sign_base", "verify_base", "content_digest", "claimed_digests", "digests_match", "policy_components",
    "select_entry", "covers", "check_coverage", "valid_authority", "origin_form", "addressed", "replay_nonce", "verify_request",
    "accept_signature",
}
# Module constants that are limits or tables of the specification.
CONSTANTS = {"URL_METHODS", "BODY_METHODS", "P256_N", "P256_P", "LENGTHS", "MAX_CREATED_DIGITS", "NAME_BYTES",
             "MAX_DOCUMENT_BYTES", "MAX_DEPTH", "CODES", "STATUS_OF", "REASON", "CONTEXT_BYTES", "MAX_CONTEXT", "MAX_MESSAGE",
             # docs/ATTEST.md
             "CHALLENGE_KEY_ALGS", "TOKEN_KEY_ALGS", "ATTEST_SKEW", "MAX_LEVELS", "MAX_DIFFICULTY", "MAX_COUNT", "MAX_CHALLENGE_TTL",
             "MAX_TOKEN_TTL", "MAX_KID", "MAX_FIELD_TEXT", "MIN_CHALLENGE", "MIN_TOKEN", "MAX_ATTEST_BODY", "KID_BYTES",
             "CHALLENGE_HEAD", "TOKEN_HEAD", "CHALLENGE_CONTEXT", "TOKEN_CONTEXT", "ATTEST_TOKEN_FIELD",
             # docs/ATTEST.md §9
             "DEVICE_FORMATS", "SIGNING_FORMATS", "PLATFORM_FORMATS", "MAX_REGISTRATION_BODY", "MAX_REGISTRATION_TEXT", "COUNTER_WINDOW",
             "MAX_COUNTER", "UNBOUND",
             # docs/ATTEST.md §10
             "ACTIONS", "OFFER_TYPE", "BYPASS_TYPES", "MAX_QUOTA", "MAX_WINDOW", "NS", "MAX_BUCKET", "CAPTCHA_FIELDS", "REQUIRED_CAPTCHA",
             "MAX_RESPONSE", "APP_ATTEST_KEY_ID", "MAX_PASSES", "MAX_PASS_FIELD", "DEVICE_CODES", "DEVICE_REASONS",
             # docs/HTTPSIG.md
             "SIGNATURE_ALGORITHMS", "DERIVED_COMPONENTS", "FIELD_NAME_BYTES", "SF_FIELD_TYPES", "DEFAULT_PORTS", "FORM_SAFE",
             "SIGNATURE_PARAMS_LINE", "MAX_SIGNATURE_FIELD", "MAX_SIGNATURES", "MAX_COMPONENTS", "MAX_PARAMETER_TEXT", "MAX_FIELD_NAME",
             "MAX_SF_FIELD", "MAX_DIGEST_FIELD", "MAX_BASE", "DIGEST_ALGORITHMS", "DIGEST_LENGTHS", "RFC9421_NONCE", "RFC9421_NONCE_BYTES"}
CODES = ["malformedToken", "unsupportedVersion", "missingHeader", "headerTooLarge", "unknownKey", "algorithmMismatch",
         "badSignature", "invalidKey", "expired", "notYetValid", "lifetimeTooLong", "replayed", "overloaded", "unavailable",
         "whashMismatch", "targetMismatch", "headerNotCovered", "unsupportedMethod", "invalidURL", "invalidInput",
         "bodyTooLarge", "unexpectedBody", "invalidHeader", "cryptoFailure", "invalidConfiguration",
         # docs/ATTEST.md §6 (80-93; 94, challengeAbandoned, is a client's own and never the result of a check)
         "attestationRequired", "attestationMalformed", "challengeForged", "challengeExpired", "challengeTooEarly",
         "challengeScopeMismatch", "challengeKeyMismatch", "wrongAnswer", "challengeRedeemed", "attestationExpired",
         "attestationInvalid", "attestationScopeMismatch", "attestationKeyMismatch", "attestationInsufficient",
         # docs/ATTEST.md §9.9
         "deviceUnknown", "deviceRevoked", "registrationMalformed", "registrationExpired", "deviceKeyMismatch", "appMismatch",
         "formatNotAccepted", "counterRepeated", "counterTooOld", "counterMissing", "platformTokenMalformed", "certificateUntrusted",
         "nonceMismatch", "environmentMismatch", "platformCounterInvalid", "assertionInvalid", "integrityVerdictFailed",
         # docs/ATTEST.md §10.8 (120, rateLimited, is the limit's own refusal, not the result of a check here)
         "bypassMalformed", "bypassNonceMismatch", "bypassExpired", "bypassReplayed", "bypassDeviceRejected", "bypassNotOffered",
         "bypassWrongAnswer",
         # docs/HTTPSIG.md §6 (147, signatureFormatsMixed, is §5.4's choice between formats, not a check here)
         "signatureFieldsMalformed", "signatureNotFound", "componentMissing", "componentInvalid", "signatureNonceMissing",
         "contentDigestMismatch", "contentDigestUnsupported", "signatureCreatedMissing", "signatureAlgorithmUnsupported"]
# Functions whose call may raise a SpecError: a statement calling one is a check for the swaps.
RAISING = {"canonical_url", "covered_names", "parse_token", "unb64u", "whash", "headers_digest", "header_block", "Key",
           "load_document", "canonical_line", "normalise", "ipv6", "dec", "message_input",
           # docs/ATTEST.md
           "sign_message", "verify_message", "issuing_key", "attest_field", "parse_challenge", "parse_attest_request", "answer_bytes",
           "issue_challenge", "issue_token", "parse_attest_token", "origin_digest", "origin_of",
           # docs/ATTEST.md §9
           "issue_bound_challenge", "parse_registration", "decode_base64", "counter_field", "registered_device",
           # docs/ATTEST.md §10
           "gcra_limit", "issue_offer", "bucket_digest",
           # docs/HTTPSIG.md
           "component_identifier", "written_identifier", "read_signature_fields", "query_param", "derived_value", "component_value",
           "signature_base", "sign_base", "claimed_digests", "policy_components", "select_entry", "check_coverage", "addressed",
           "verify_request"}

FLIP = {ast.Lt: [ast.LtE, ast.GtE], ast.LtE: [ast.Lt, ast.Gt], ast.Gt: [ast.GtE, ast.LtE], ast.GtE: [ast.Gt, ast.Lt],
        ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq], ast.In: [ast.NotIn], ast.NotIn: [ast.In], ast.Is: [ast.IsNot],
        ast.IsNot: [ast.Is]}
SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
          ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+", ast.Sub: "-"}


def scopes(tree):
    """(scope name, node) for every node of the targeted functions and constants, in a fixed order."""
    def visit(node, scope):
        yield scope, node
        for child in ast.iter_child_nodes(node):
            yield from visit(child, scope)
    for top in tree.body:
        if isinstance(top, ast.FunctionDef) and top.name in FUNCTIONS:
            yield from visit(top, top.name)
        elif isinstance(top, ast.ClassDef):
            for item in top.body:
                if isinstance(item, ast.FunctionDef) and f"{top.name}.{item.name}" in FUNCTIONS:
                    yield from visit(item, f"{top.name}.{item.name}")
        elif isinstance(top, ast.Assign) and any(isinstance(t, ast.Name) and t.id in CONSTANTS for t in top.targets):
            names = [t.id for t in top.targets if isinstance(t, ast.Name)] or [ast.unparse(top.targets[0])]
            yield from visit(top, names[0])
        elif isinstance(top, ast.Assign) and isinstance(top.targets[0], ast.Tuple) and any(
                isinstance(t, ast.Name) and t.id in CONSTANTS for t in top.targets[0].elts):
            yield from visit(top, ast.unparse(top.targets[0]))


def is_check(stmt):
    """A statement that can refuse: an `if` that raises, or a call of a function that raises."""
    if isinstance(stmt, ast.If):
        return any(isinstance(n, ast.Raise) for n in ast.walk(stmt))
    if isinstance(stmt, (ast.Assign, ast.Expr, ast.AugAssign)):
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in RAISING for n in ast.walk(stmt))
    return False


def stored(stmt):
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def loaded(stmt):
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def mutants(tree):
    """Every mutant as (node index, kind, argument, description), in a fixed order."""
    out = []
    for index, (scope, node) in enumerate(scopes(tree)):
        src = ast.unparse(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ""
        short = src if len(src) <= 100 else src[:97] + "..."
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                for new in FLIP.get(type(op), []):
                    out.append((index, "compare", (k, new.__name__), f"{scope}: `{short}`: {SYMBOL[type(op)]} -> {SYMBOL[new]}"))
                if isinstance(op, (ast.In, ast.NotIn)) and isinstance(node.comparators[k], (ast.Tuple, ast.Set, ast.List)):
                    for e, elt in enumerate(node.comparators[k].elts):
                        if len(node.comparators[k].elts) > 1:
                            out.append((index, "drop-element", (k, e), f"{scope}: `{short}`: without {ast.unparse(elt)}"))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            out.append((index, "int", +1, f"{scope}: {node.value} -> {node.value + 1} (line {node.lineno}, col {node.col_offset})"))
            out.append((index, "int", -1, f"{scope}: {node.value} -> {node.value - 1} (line {node.lineno}, col {node.col_offset})"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in CODES:
            other = "invalidKey" if node.value == "malformedToken" else "malformedToken"
            if scope in ("CODES",):  # the table of names: a name is a key there
                continue
            out.append((index, "code", other, f"{scope}: error {node.value} -> {other} (line {node.lineno})"))
        elif isinstance(node, ast.If):
            out.append((index, "negate-if", None, f"{scope}: `if {ast.unparse(node.test)[:90]}` negated (line {node.lineno})"))
            out.append((index, "drop-if", None, f"{scope}: `if {ast.unparse(node.test)[:90]}` never taken (line {node.lineno})"))
        elif isinstance(node, ast.IfExp):
            out.append((index, "negate-ifexp", None, f"{scope}: `{short}` condition negated"))
        elif isinstance(node, ast.BoolOp):
            for k, value in enumerate(node.values):
                out.append((index, "drop-operand", k, f"{scope}: `{short}` without `{ast.unparse(value)[:60]}`"))
            out.append((index, "swap-boolop", None, f"{scope}: `{short}`: {'and -> or' if isinstance(node.op, ast.And) else 'or -> and'}"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append((index, "drop-not", None, f"{scope}: `{short}`: not dropped"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and not (
                isinstance(node.left, (ast.Constant, ast.JoinedStr)) and isinstance(node.left.value if isinstance(node.left, ast.Constant) else None, (bytes, str))):
            new = ast.Sub if isinstance(node.op, ast.Add) else ast.Add
            out.append((index, "arith", None, f"{scope}: `{short}`: {SYMBOL[type(node.op)]} -> {SYMBOL[new]}"))
        elif isinstance(node, ast.Raise):
            out.append((index, "drop-raise", None, f"{scope}: `{short}` deleted (line {node.lineno})"))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in loaded(node.value) and scope in FUNCTIONS:
            out.append((index, "drop-assign", None, f"{scope}: `{short}` deleted (line {node.lineno})"))
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list) or scope not in FUNCTIONS:
                continue
            for k in range(len(stmts) - 1):
                a, b = stmts[k], stmts[k + 1]
                if is_check(a) and is_check(b) and not (stored(a) & loaded(b)) and not (stored(b) & loaded(a)):
                    out.append((index, "swap", (field, k), f"{scope}: checks swapped: `{ast.unparse(a).splitlines()[0][:60]}` "
                                                          f"<-> `{ast.unparse(b).splitlines()[0][:60]}` (line {a.lineno})"))
    # Ids stable under edits elsewhere in the file: the description without line numbers, and a
    # counter for repeats.
    seen, result = {}, []
    for index, kind, arg, text in out:
        key = text.split(" (line ")[0]
        seen[key] = seen.get(key, 0) + 1
        result.append((index, kind, arg, key + (f" #{seen[key]}" if seen[key] > 1 else "")))
    return result


def apply(tree, index, kind, arg):
    node = [n for _, n in scopes(tree)][index]
    if kind == "compare":
        k, new = arg
        node.ops[k] = getattr(ast, new)()
    elif kind == "drop-element":
        k, e = arg
        del node.comparators[k].elts[e]
    elif kind == "int":
        node.value += arg
    elif kind == "code":
        node.value = arg
    elif kind == "negate-if":
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
    elif kind == "drop-if":
        node.test = ast.Constant(value=False)
    elif kind == "negate-ifexp":
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
    elif kind == "drop-operand":
        node.values[arg] = ast.Constant(value=isinstance(node.op, ast.And))
    elif kind == "swap-boolop":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif kind == "drop-not":
        node.op = ast.UAdd()  # +bool(x) is x's truth as an int: `not` removed
        node.operand = ast.Call(func=ast.Name(id="bool", ctx=ast.Load()), args=[node.operand], keywords=[])
    elif kind == "arith":
        node.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
    elif kind == "drop-raise":
        node.__class__ = ast.Pass
        for f in ("exc", "cause"):
            if hasattr(node, f):
                delattr(node, f)
    elif kind == "drop-assign":
        node.__class__ = ast.Pass
        for f in ("targets", "value", "type_comment"):
            if hasattr(node, f):
                delattr(node, f)
    elif kind == "swap":
        field, k = arg
        stmts = getattr(node, field)
        stmts[k], stmts[k + 1] = stmts[k + 1], stmts[k]
    ast.fix_missing_locations(tree)
    return tree


class Killed(Exception):
    pass


class Leaked(Exception):
    """A mutant's run changed the state of the loaded reference: later results cannot be trusted."""


def alarm(signum, frame):
    raise TimeoutError


ORDER = []  # this worker's order of the check's parts: the part that killed the last mutant first


def run_stages(stages):
    """Whether every part of the check passes; stops at the first vector that fails."""
    def stop_at_failure(ok, what):
        if not ok:
            raise Killed(what)
    order = [name for name in ORDER if name in stages] + [name for name in stages if name not in ORDER]
    for name in order:
        try:
            stages[name](stop_at_failure)
        except BaseException as e:
            ORDER[:] = [name] + [n for n in ORDER if n != name]
            if isinstance(e, Killed):
                return False
            raise
    return True


def run(tree):
    """Whether every vector agrees with the module `tree`, loaded afresh."""
    ns = {"__name__": "reference_mutant", "__file__": str(REFERENCE)}
    try:
        exec(compile(tree, str(REFERENCE), "exec"), ns)
        return run_stages(dict(ns["check_stages"]()))
    finally:
        restore_shared()


def shared_tables():
    """The tables of other modules that loading reference.py changes: http_sfv's readers and
    writers (it replaces the byte sequence's reader with its own)."""
    from http_sfv import item
    return [item._parse_map, item._ser_map]


SHARED = []  # (table, its content once the worker's module is loaded)


def restore_shared():
    """A module loaded afresh replaced the shared tables' entries with its own: the loaded module's
    are put back."""
    for table, content in SHARED:
        table.clear()
        table.update(content)


# Each worker parses reference.py once and loads it once (BASE). A mutant of a function is then
# its one statement compiled, and its code swapped into the loaded function for the run (tables
# holding the function see it too); other mutants (constants, decorated functions) load a whole
# mutated module. Parsing and loading the module took three times as long as killing a mutant.
TREE, TOPS, BASE, STAGES, RUNS = None, [], None, None, 0
PRISTINE_EVERY = 200  # runs between checks that the loaded module still passes: no mutant left a trace


def top_statements(tree):
    """(first mutant node index, node count, statement) of each top-level statement with nodes to mutate."""
    out, offset = [], 0
    for top in tree.body:
        count = sum(1 for _ in scopes(ast.Module(body=[top], type_ignores=[])))
        if count:
            out.append((offset, count, top))
            offset += count
    return out


def swappable(top):
    """The (loaded function, name in the mutated module's namespace) pairs whose code a mutant of
    `top` replaces, or None when the whole module must be loaded."""
    def plain(fn):
        return not fn.decorator_list
    if isinstance(top, ast.FunctionDef) and plain(top):
        return [(BASE[top.name], (top.name, None))]
    if isinstance(top, ast.ClassDef) and not top.decorator_list:
        methods = [m for m in top.body if isinstance(m, ast.FunctionDef) and f"{top.name}.{m.name}" in FUNCTIONS]
        if all(plain(m) for m in methods):
            return [(BASE[top.name].__dict__[m.name], (top.name, m.name)) for m in methods]
    return None


def run_mutant(index, kind, arg):
    global RUNS
    offset, _, top = next(t for t in TOPS if t[0] <= index < t[0] + t[1])
    mutated = apply(ast.Module(body=[copy.deepcopy(top)], type_ignores=[]), index - offset, kind, arg).body[0]
    targets = swappable(top)
    if targets is None or any(fn.__code__.co_freevars for fn, _ in targets):
        return run(ast.Module(body=[mutated if t is top else t for t in TREE.body], type_ignores=[]))
    scratch = dict(BASE)
    exec(compile(ast.Module(body=[mutated], type_ignores=[]), str(REFERENCE), "exec"), scratch)
    saved = [(fn, fn.__code__, fn.__defaults__, fn.__kwdefaults__) for fn, _ in targets]
    try:
        for fn, (name, method) in targets:
            new = scratch[name] if method is None else scratch[name].__dict__[method]
            fn.__code__, fn.__defaults__, fn.__kwdefaults__ = new.__code__, new.__defaults__, new.__kwdefaults__
        return run_stages(STAGES)
    finally:
        for fn, code, defaults, kwdefaults in saved:
            fn.__code__, fn.__defaults__, fn.__kwdefaults__ = code, defaults, kwdefaults
        RUNS += 1
        if RUNS % PRISTINE_EVERY == 0 and not run_stages(STAGES):
            raise Leaked("mutation check: a mutant left a trace in the loaded reference")


def worker(mutant):
    index, kind, arg, key = mutant
    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(TIMEOUT)
    try:
        survived, how = run_mutant(index, kind, arg), ""
    except Leaked:
        raise
    except TimeoutError:
        survived, how = False, "timeout"
    except RecursionError:
        survived, how = False, "recursion"
    except Exception as e:  # a mutant that crashes on some vector is killed by it
        survived, how = False, type(e).__name__
    finally:
        signal.alarm(0)
    return key, survived, how


def init(source):
    global TREE, TOPS, BASE, STAGES
    sys.setrecursionlimit(10000)
    TREE = ast.parse(source)
    TOPS = top_statements(TREE)
    BASE = {"__name__": "reference_mutant", "__file__": str(REFERENCE)}
    exec(compile(TREE, str(REFERENCE), "exec"), BASE)
    STAGES = dict(BASE["check_stages"]())
    SHARED[:] = [(table, dict(table)) for table in shared_tables()]


def allowed():
    """The allow-list: `<mutant id>  # <reason>` per line; every entry needs a reason."""
    entries = {}
    if ALLOW.exists():
        for line in ALLOW.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            key, sep, reason = line.partition("  # ")
            if not sep or not reason.strip():
                sys.exit(f"{ALLOW.name}: an entry without a reason: {line}")
            entries[key.strip()] = reason.strip()
    return entries


def main():
    args = sys.argv[1:]
    jobs = int(args[args.index("-j") + 1]) if "-j" in args else 2
    source = REFERENCE.read_text()
    all_mutants = mutants(ast.parse(source))
    if "--list" in args:
        for m in all_mutants:
            print(m[3])
        print(f"{len(all_mutants)} mutants")
        return 0
    keys = [m[3] for m in all_mutants]
    assert len(set(keys)) == len(keys), "mutant ids must be unique"
    init(source)
    if not run_stages(STAGES):
        print("mutation check: the unmutated reference does not pass its own check")
        return 1
    start = time.time()
    with multiprocessing.get_context("fork").Pool(jobs, initializer=init, initargs=(source,)) as pool:
        results = pool.map(worker, all_mutants, chunksize=4)
    survivors = [key for key, survived, _ in results if survived]
    allow = allowed()
    new = [s for s in survivors if s not in allow]
    stale = [a for a in allow if a not in survivors]
    timeouts = sum(1 for _, _, how in results if how == "timeout")
    print(f"mutation check: {len(all_mutants)} mutants of reference.py, {len(all_mutants) - len(survivors)} killed by the vectors "
          f"({timeouts} by a timeout), {len(survivors)} survived, {len(survivors) - len(new)} of them equivalent "
          f"(in {ALLOW.name}); {time.time() - start:.0f} s with {jobs} workers")
    for s in new:
        print("SURVIVED", s)
    for a in stale:
        print("STALE allow-list entry (no surviving mutant has this id)", a)
    return 1 if new or stale else 0


if __name__ == "__main__":
    sys.exit(main())
