"""Fixtures shared by every unit test folder."""

from __future__ import annotations

import pytest
import torch


def _compiled_matches_interpreter(label, net, lb, ub, prog, compiled, modes, check=None):
    """For every ``(representation, rewrite)`` of ``modes``: the compiled certifier's ``l``/``u`` of every
    layer equal the reference interpreter's (``prog``) on each box to 1e-9, and in the first mode
    :func:`cfruntime.soundness.check_bounds` (keyword arguments ``check``) finds no violation.
    ``compiled(rewrite)`` gives the compiled certifier; ``label`` names the case in messages."""
    from cfmlir.interpreter.run import analyze
    from cfruntime import tensor as gb
    from cfruntime.flow.engine import run_certifier
    from cfruntime.soundness import check_bounds

    ref = [analyze(prog, net, lb[i], ub[i]) for i in range(lb.shape[0])]
    for rep, rewrite in modes:
        res = run_certifier(compiled(rewrite), net, lb, ub, representation=rep)
        layers = {}
        for layer in net.layers[1:]:
            got = [gb.to_dense(res.store.get(layer.index, m)).expand(lb.shape[0], -1) for m in ("l", "u")]
            for m, g in zip(("l", "u"), got):
                want = torch.tensor([r.member(m, layer.index) for r in ref], dtype=torch.float64)
                torch.testing.assert_close(g, want, rtol=1e-9, atol=1e-9,
                                           msg=lambda s: f"{label}, layer {layer.index} '{m}', {rep}, rewrite={rewrite}: {s}")
            layers[layer.index] = tuple(got)
        if (rep, rewrite) == modes[0]:
            violations = check_bounds(net, lb, ub, layers, **(check or {}))
            assert violations == [], f"{label}: " + "; ".join(str(v) for v in violations[:5])


class ShippedCertifiers:
    """The shipped certifiers (``cfmlir/certifiers/*.cf``, by name), each built once per test session:
    :meth:`interpreted` is the reference interpreter's program, :meth:`compiled` the compiled module
    (with or without the domain rewrites; never from the on-disk compile cache)."""

    def __init__(self) -> None:
        self._programs: dict = {}
        self._compiled: dict = {}

    def interpreted(self, name: str):
        from cfmlir.certifiers import certifier_source
        from cfmlir.interpreter.run import compile_source

        if name not in self._programs:
            self._programs[name] = compile_source(*certifier_source(name), name)
        return self._programs[name]

    def compiled(self, name: str, rewrite: bool = True):
        from cfmlir.certifiers import certifier_source
        from cfmlir.compiler import compile_certifier, pipeline_for

        if (name, rewrite) not in self._compiled:
            self._compiled[name, rewrite] = compile_certifier(*certifier_source(name), pipeline_for(rewrite),
                                                              use_cache=False)
        return self._compiled[name, rewrite]


@pytest.fixture(scope="session")
def shipped() -> ShippedCertifiers:
    """The session's :class:`ShippedCertifiers`: ``shipped.interpreted(name)``, ``shipped.compiled(name, rewrite)``."""
    return ShippedCertifiers()


@pytest.fixture
def compiled_matches_interpreter():
    """The check ``(label, net, lb, ub, prog, compiled, modes, check=None)``: compiled bounds equal the
    interpreter's in every mode and are sound (see :func:`_compiled_matches_interpreter`)."""
    return _compiled_matches_interpreter
