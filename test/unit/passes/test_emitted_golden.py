"""The emitted Python of every shipped certifier is unchanged by refactors (issue 28, acceptance 1).

``golden/<certifier>.py.txt`` holds the module the default pipeline emitted for each shipped
certifier before the dispatch refactors of issue 28.  A change to the emission that is meant (a new
rewrite, a new runtime op) regenerates them on purpose::

    .venv/bin/python test/unit/passes/test_emitted_golden.py      # rewrite the golden files

and the diff of the golden files shows what the change did to every certifier.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"


def shipped() -> list[str]:
    from cfmlir.certifiers import certifier_names

    return sorted(certifier_names())


def emitted(name: str) -> str:
    from cfmlir.compiler import emit_certifier, load_certifier_source

    text, _ = load_certifier_source(name)
    return emit_certifier(text, f"{name}.cf")


@pytest.mark.parametrize("name", shipped())
def test_emitted_python_is_the_golden(name: str) -> None:
    golden = GOLDEN / f"{name}.py.txt"
    assert golden.exists(), f"no golden for {name}: run {Path(__file__).name} to write it"
    assert emitted(name) == golden.read_text(), f"the emitted Python of {name} changed"


if __name__ == "__main__":
    GOLDEN.mkdir(exist_ok=True)
    for n in shipped():
        (GOLDEN / f"{n}.py.txt").write_text(emitted(n))
    print(f"wrote {len(shipped())} golden files to {GOLDEN}", file=sys.stderr)
