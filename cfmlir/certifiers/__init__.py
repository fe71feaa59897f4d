"""The certifiers shipped with cfmlir, as ConstraintFlow sources (package data).

``ibp``, ``crown_ibp``, ``deepz``, ``deeppoly``, ``reusecert``, ``polyzono``, ``zid``, ``skippoly`` and
the parametric ``alpha_deeppoly`` (alpha-CROWN) and ``alpha_deepz`` (DeepZ with optimisable ReLU
slopes) are files ``<name>.cf`` here.  ``deeppoly_<p>`` (p = 0..8) are made from the template ``deeppoly_p.cf`` by
setting its ``func depth() = ...;`` line to p.  Where a paper listing was incomplete or unsound the
file says what was fixed in its header comment.
"""

from __future__ import annotations

import re
from pathlib import Path

CERTIFIER_DIR = Path(__file__).resolve().parent
BASE_CERTIFIERS = ("ibp", "crown_ibp", "deepz", "deeppoly", "reusecert", "polyzono", "zid", "skippoly")
#: Certifiers with optimisable parameters (``param ...``; cfmlir.optimize): shipped like the others.
PARAMETRIC_CERTIFIERS = ("alpha_deeppoly", "alpha_deepz")
DEEPPOLY_P_RANGE = range(0, 9)
_DEPTH_LINE = re.compile(r"^func depth\(\) = \d+;", re.MULTILINE)


def certifier_names() -> list[str]:
    """Every shipped certifier name, the deeppoly_p family included."""
    return list(BASE_CERTIFIERS) + [f"deeppoly_{p}" for p in DEEPPOLY_P_RANGE] + list(PARAMETRIC_CERTIFIERS)


def deeppoly_p_source(p: int) -> str:
    """The DeepPoly_p source for back-substitution depth ``p``."""
    if p < 0:
        raise ValueError(f"deeppoly_p needs p >= 0, got {p}")
    text = (CERTIFIER_DIR / "deeppoly_p.cf").read_text(encoding="utf-8")
    text, n = _DEPTH_LINE.subn(f"func depth() = {p};", text)
    assert n == 1, "deeppoly_p.cf must contain exactly one 'func depth() = N;' line"
    return text.replace("transformer deeppoly_p{", f"transformer deeppoly_{p}{{").replace(
        "flow(forward, priority, stop, deeppoly_p);", f"flow(forward, priority, stop, deeppoly_{p});"
    )


def certifier_source(name: str) -> tuple[str, str]:
    """``(source text, file name for diagnostics)`` of a shipped certifier.  Raises KeyError."""
    m = re.fullmatch(r"deeppoly_(\d+)", name)
    if m:
        return deeppoly_p_source(int(m.group(1))), f"{name}.cf"
    if name in BASE_CERTIFIERS or name in PARAMETRIC_CERTIFIERS:
        path = CERTIFIER_DIR / f"{name}.cf"
        return path.read_text(encoding="utf-8"), str(path)
    raise KeyError(name)
