"""A prover that misses a bug, for the tests of the second net (``--check``, the non-finite check).

:func:`cfmlir.proof_gate.prove` stops an unsound certifier before any analysis, so a test of what happens
*after* the gate (the empirical check refuting bounds, a NaN bound) needs a certifier the prover believes
sound.  :func:`prover_misses` makes one: in a fresh proof cache (``CFMLIR_CACHE_DIR``, which the compile
cache shares) it records every rule of the spec as ``verified``, the case of a prover whose bounded
model (``K``, ``M``) misses the bug; the process's in-memory proofs are forgotten too.  Subprocesses
started with the returned environment see the same cache.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cfmlir import proof_gate


def record_verified(text: str, file: str = "<test>") -> None:
    """Record every rule of the flows' transformers of ``text`` as verified in the current proof cache
    (``CFMLIR_CACHE_DIR``), and forget this process's proofs of it."""
    digest = proof_gate.spec_hash(text)
    for key in [k for k in proof_gate._MEMO if k[0] == digest]:
        del proof_gate._MEMO[key]
    rules = proof_gate._flow_rules(text, file)
    ops = {op: [proof_gate.RuleProof(t, op, proof_gate.VERIFIED, "", r.loc.line, r.loc.col, 0.0, None).to_json()
                for t, r in entries] for op, entries in rules.items()}
    path = proof_gate.cache_file(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": proof_gate._CACHE_FORMAT, "rule_ops": sorted(rules), "ops": ops}),
                    encoding="utf-8")


def prover_misses(monkeypatch, cache_dir: Path, text: str, file: str = "<test>") -> dict:
    """:func:`record_verified` in a fresh cache ``cache_dir`` (set as ``CFMLIR_CACHE_DIR``); the environment
    to give subprocesses."""
    monkeypatch.setenv("CFMLIR_CACHE_DIR", str(cache_dir))
    record_verified(text, file)
    return {**os.environ, "CFMLIR_CACHE_DIR": str(cache_dir)}
