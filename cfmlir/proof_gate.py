"""The proof gate: no verdict from a certifier whose rules the prover refuted.

A certifier that does not ship with cfmlir (a ``.cf`` path or source text -- even a byte-identical copy
of a shipped file) is proved before :func:`cfmlir.certify` or ``cf-run`` gives any verdict or certified
flag: :func:`prove` runs :func:`cfmlir.verify.verify_source` on the rules the analysis will run -- the
operators of the network's layer kinds (:data:`cfruntime.contract.OPERATOR_OF_KIND`; ``Affine`` for the
margin layer every analysis adds) in the transformers the spec's ``flow`` declarations use.  Shipped
certifiers, named by their name, are proved by the test suite and skip the proof (``"proved":
"shipped"``).

* a rule with a counterexample: :class:`UnsoundCertifierError` (exit status 3), one line::

      error: my.cf:42:5: rule deepz.Relu is unsound: violates 'curr In curr[Z]' (21:77): ...

* a rule the prover could not decide (``unknown``: its time limit, or outside its fragment): the run
  goes on, ``"proved": false`` and one ``warning:`` line (:meth:`Proof.warning`); with
  ``require=True`` (``cf-run --require-proof``) :class:`UnprovedCertifierError` (exit status 3);
* every rule verified: ``"proved": true``.

Results are cached per rule in ``<compile cache>/proofs/`` (:func:`cfmlir.compiler.cache_dir`), one file
per (spec text hash, ``K``, ``M``, prover version: a hash of ``cfmlir/verify/*.py``), holding each
operator's outcome; a run whose operators are all there reads one small JSON file (no z3, no parse), and
an operator seen for the first time is proved and added.  An ``unknown`` is reused only by a run whose
per-rule time limit is not longer than the one it was found with.  The prover is bounded (``K``
previous neurons, ``M`` noise symbols; :mod:`cfmlir.verify`), so ``cf-run --check`` stays on for a
user's certifier as the second net.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from cfmlir.diagnostics import CfError, Loc

#: the prover's bounds (previous neurons, noise symbols) and its default time limit per rule
PROOF_K, PROOF_M = 2, 2
DEFAULT_PROOF_TIMEOUT_S = 20.0
#: RuleResult statuses (:mod:`cfmlir.verify.rules`; repeated so that a cache hit never imports z3)
VERIFIED, COUNTEREXAMPLE, UNKNOWN = "verified", "counterexample", "unknown"
#: the exit status of a refuted (or, with ``require``, an unproved) certifier
EXIT_UNPROVED = 3
_CACHE_FORMAT = 1

#: proofs made in this process: (spec hash, K, M, operators, timeout) -> Proof
_MEMO: dict = {}


@dataclass
class RuleProof:
    """One rule's outcome: ``status`` verified / counterexample / unknown, ``detail`` (the replayed
    counterexample, or why unknown), the rule's line and column in the spec, and the prover's seconds
    and time limit."""

    transformer: str
    op: str
    status: str
    detail: str
    line: int
    col: int
    seconds: float
    timeout: float | None  # None: an outcome no time limit changes (outside the prover's fragment)

    @property
    def name(self) -> str:
        return f"{self.transformer}.{self.op}"

    def to_json(self) -> dict:
        return dict(vars(self))


@dataclass
class Proof:
    """The proof of the rules one analysis runs: ``rules`` (empty for a shipped certifier), whether the
    outcome came from the cache, the prover's bounds and seconds."""

    file: str
    rules: list[RuleProof] = field(default_factory=list)
    K: int = PROOF_K
    M: int = PROOF_M
    timeout: float = DEFAULT_PROOF_TIMEOUT_S
    cached: bool = False
    seconds: float = 0.0
    shipped: bool = False
    spec_hash: str = ""
    operators: frozenset = frozenset()

    @property
    def proved(self):
        """``"shipped"``, True (every rule verified) or False."""
        if self.shipped:
            return "shipped"
        return all(r.status == VERIFIED for r in self.rules)

    @property
    def refuted(self) -> RuleProof | None:
        """The first rule with a counterexample, else None."""
        return next((r for r in self.rules if r.status == COUNTEREXAMPLE), None)

    @property
    def unproved(self) -> list[RuleProof]:
        return [r for r in self.rules if r.status != VERIFIED]

    def json(self) -> dict:
        """The ``"proved"`` and ``"proof"`` entries of a JSON result."""
        if self.shipped:
            return {"proved": "shipped"}
        proof = {"rules": {r.name: r.status for r in self.rules}, "K": self.K, "M": self.M,
                 "timeout_s": self.timeout, "cached": self.cached, "seconds": round(self.seconds, 3)}
        details = {r.name: r.detail for r in self.rules if r.status != VERIFIED}
        if details:
            proof["details"] = details
        return {"proved": self.proved, "proof": proof}

    def warning(self) -> str | None:
        """The one ``warning:`` line of a proof with unknown rules, else None."""
        if self.proved is not False or self.refuted is not None:
            return None
        return (f"warning: {self.file}: rule(s) {', '.join(f'{r.name} ({_short(r.detail)})' for r in self.unproved)} "
                f"not proved sound (K={self.K}, M={self.M}, {self.timeout:g} s per rule); the answers rest on "
                f"the soundness check (--check) for them")


def _short(detail: str, limit: int = 80) -> str:
    detail = " ".join(detail.split())
    return detail if len(detail) <= limit else detail[: limit - 3] + "..."


class ProofWarning(UserWarning):
    """:func:`cfmlir.certify` of a certifier with rules the prover could not decide (``unknown``)."""


class UnsoundCertifierError(CfError):
    """A rule the analysis would run has a counterexample: no verdict (exit status 3).  One line,
    ``error: FILE:LINE:COL: rule T.Op is unsound: <the replayed counterexample>``."""

    exit_status = EXIT_UNPROVED
    #: what a VNN-COMP result file says for the instance
    result_verdict = "unknown"

    def __init__(self, file: str, rule: RuleProof):
        self.rule = rule
        super().__init__(Loc(file, rule.line, rule.col), f"rule {rule.name} is unsound: {rule.detail}")


class UnprovedCertifierError(CfError):
    """``require`` (``--require-proof``) and a rule the prover could not decide: no verdict (exit status 3)."""

    exit_status = EXIT_UNPROVED
    result_verdict = "unknown"

    def __init__(self, proof: Proof):
        self.proof = proof
        rules = ", ".join(f"{r.name} ({_short(r.detail)})" for r in proof.unproved)
        super().__init__(Loc(proof.file, 0, 0), f"rule(s) {rules} not proved sound (K={proof.K}, M={proof.M}, "
                                                f"{proof.timeout:g} s per rule) and a proof is required")


# ---------------------------------------------------------------------------------------------
# which rules an analysis runs
# ---------------------------------------------------------------------------------------------
def operators_of(network) -> frozenset:
    """The operators whose rules an analysis of ``network`` runs: its layer kinds' and ``Affine`` (the
    margin layer of every analysis).  A kind without an operator is left out (the engine refuses it)."""
    from cfruntime.contract import OPERATOR_OF_KIND

    layers = getattr(network, "layers", None)
    if layers is None:  # a cfmlir.api.Network
        layers = network.network.layers
    return frozenset({"Affine"} | {OPERATOR_OF_KIND[l.kind] for l in layers[1:] if l.kind in OPERATOR_OF_KIND})


def _flow_rules(text: str, file: str) -> dict[str, list]:
    """Operator -> the rules (``(transformer, ast.Rule)``) of the transformers the flows use."""
    from cfmlir.syntax.parser import parse

    program = parse(text, file)
    used = {f.transformer for f in program.flows}
    out: dict[str, list] = {}
    for t in program.transformers:
        if t.name in used:
            for rule in t.rules:
                out.setdefault(rule.op, []).append((t.name, rule))
    return out


# ---------------------------------------------------------------------------------------------
# the cache
# ---------------------------------------------------------------------------------------------
_PROVER_VERSION: str | None = None


def prover_version() -> str:
    """A hash of the prover's sources (``cfmlir/verify/*.py``): a changed prover proves again."""
    global _PROVER_VERSION
    if _PROVER_VERSION is None:
        import importlib.util

        spec = importlib.util.find_spec("cfmlir.verify")
        root = Path(spec.origin).resolve().parent
        h = hashlib.sha256(str(_CACHE_FORMAT).encode())
        for f in sorted(root.glob("*.py")):
            h.update(f.name.encode())
            h.update(f.read_bytes())
        _PROVER_VERSION = h.hexdigest()[:16]
    return _PROVER_VERSION


def spec_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compile_cache_dir() -> Path:
    """The compile cache's folder, :func:`cfmlir.compiler.cache_dir` (the same variable and default; read
    here because importing the compiler imports xDSL, seconds a cache hit must not cost)."""
    return Path(os.environ.get("CFMLIR_CACHE_DIR", Path.home() / ".cache" / "cfmlir"))


def cache_file(text: str, K: int = PROOF_K, M: int = PROOF_M) -> Path:
    """Where the proofs of the spec ``text`` at ``K``, ``M`` by this prover are kept."""
    return compile_cache_dir() / "proofs" / f"{spec_hash(text)[:32]}-K{K}-M{M}-{prover_version()}.json"


def _read_cache(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != _CACHE_FORMAT or not isinstance(data.get("ops"), dict):
        return None
    return data


def _write_cache(path: Path, data: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache only costs the next run the proof


def _usable(entry: list, timeout: float) -> bool:
    """A cached operator's rules answer a run with this per-rule time limit: definitive outcomes always,
    an ``unknown`` only when it was found with at least this much time."""
    return all(r["status"] != UNKNOWN or r["timeout"] is None or r["timeout"] >= timeout for r in entry)


# ---------------------------------------------------------------------------------------------
# proving
# ---------------------------------------------------------------------------------------------
def prove(text: str, file: str, operators, *, K: int = PROOF_K, M: int = PROOF_M,
          timeout: float = DEFAULT_PROOF_TIMEOUT_S, use_cache: bool = True) -> Proof:
    """The :class:`Proof` of the rules for ``operators`` of the transformers the spec's flows use
    (cached; see the module docstring).  Never raises for an unsound rule: see :func:`enforce`."""
    ops = frozenset(operators)
    digest = spec_hash(text)
    memo_key = (digest, K, M, ops, timeout)
    hit = _MEMO.get(memo_key)
    if hit is not None:
        return _with_file(hit, file, cached=True)
    t0 = time.perf_counter()
    path = cache_file(text, K, M)
    data = (_read_cache(path) if use_cache else None) or {"format": _CACHE_FORMAT, "rule_ops": None, "ops": {}}
    rule_ops = data["rule_ops"]
    if rule_ops is None:
        rule_ops = sorted(_flow_rules(text, file))
        data["rule_ops"] = rule_ops
    needed = sorted(ops & set(rule_ops))
    missing = [op for op in needed if op not in data["ops"] or not _usable(data["ops"][op], timeout)]
    if missing:
        data["ops"].update(_run_prover(text, file, missing, K, M, timeout))
        if use_cache:
            _write_cache(path, data)
    rules = [RuleProof(**r) for op in needed for r in data["ops"][op]]
    proof = Proof(file, rules, K, M, timeout, cached=not missing, seconds=time.perf_counter() - t0,
                  spec_hash=digest, operators=ops)
    _MEMO[memo_key] = proof
    return proof


def _with_file(proof: Proof, file: str, cached: bool) -> Proof:
    import dataclasses

    return dataclasses.replace(proof, file=file, cached=cached or proof.cached, seconds=0.0)


def _run_prover(text: str, file: str, ops: list[str], K: int, M: int, timeout: float) -> dict[str, list]:
    """``{op: [RuleProof as JSON, ...]}`` of the flows' transformers' rules for ``ops``."""
    from cfmlir.verify import FragmentError, verify_source

    flow_rules = _flow_rules(text, file)
    used = {t for op in ops for t, _ in flow_rules.get(op, [])}
    out: dict[str, list] = {op: [] for op in ops}
    try:
        results = verify_source(text, file, K=K, M=M, timeout=timeout, ops=set(ops))
    except FragmentError:
        results = None  # one rule outside the fragment: prove the operators one by one
    if results is None:
        results = []
        for op in ops:
            try:
                results += verify_source(text, file, K=K, M=M, timeout=timeout, ops={op})
            except FragmentError as e:
                for tname, rule in flow_rules.get(op, []):
                    out[op].append(RuleProof(tname, op, UNKNOWN, f"outside the prover's fragment: {e.message}",
                                             rule.loc.line, rule.loc.col, 0.0, None).to_json())
    for r in results:
        if r.transformer not in used:
            continue
        loc = r.loc
        out[r.op].append(RuleProof(r.transformer, r.op, r.status, " ".join(str(r.detail).split()),
                                   getattr(loc, "line", 0), getattr(loc, "col", 0), round(r.seconds, 3),
                                   timeout).to_json())
    return out


def shipped_proof(name: str) -> Proof:
    """The proof of a shipped certifier: the test suite's (no rule is proved at run time)."""
    return Proof(name, shipped=True)


def is_shipped(certifier) -> bool:
    """True for a :class:`cfmlir.api.Certifier` made from a shipped certifier's *name* whose text is that
    certifier's (a path, source text, or a copy of a shipped file is a user's certifier)."""
    from cfmlir.certifiers import certifier_names, certifier_source

    if not getattr(certifier, "shipped", False) or certifier.name not in certifier_names():
        return False
    return certifier.text == certifier_source(certifier.name)[0]


def enforce(proof: Proof, require: bool = False) -> Proof:
    """``proof``, or :class:`UnsoundCertifierError` when a rule has a counterexample, or
    :class:`UnprovedCertifierError` when ``require`` and a rule is unknown."""
    bad = proof.refuted
    if bad is not None:
        raise UnsoundCertifierError(proof.file, bad)
    if require and proof.proved is False:
        raise UnprovedCertifierError(proof)
    return proof


def proof_for(certifier, network, *, timeout: float | None = None, require: bool = False) -> Proof:
    """The gate of one analysis: the :class:`Proof` of ``certifier`` (a :class:`cfmlir.api.Certifier`)
    for the rules ``network`` makes it run, enforced (:func:`enforce`)."""
    if is_shipped(certifier):
        return shipped_proof(certifier.name)
    t = DEFAULT_PROOF_TIMEOUT_S if timeout is None else timeout
    return enforce(prove(certifier.text, certifier.file, operators_of(network), timeout=t), require)
