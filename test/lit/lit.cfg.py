"""lit configuration of the cfmlir FileCheck suite (run it with ``python test/run_lit.py``).

Layout (like xDSL's ``tests/filecheck``):

* ``certifiers/``  -- every shipped certifier through ``cf-opt`` (structure CHECKs + round trip)
* ``diagnostics/`` -- one negative case per file: the exact one-line ``file:line:col: error:``
* ``roundtrip/``   -- hand-written ``cf`` IR (``.mlir``): print -> parse -> print, verifier errors
* ``compiler/``    -- ``--shape-analysis`` on the paper's running example, each rewrite on
  hand-written ``cftensor`` IR, and ``-t python``
* ``passes/``      -- one test per registered pass that ``compiler/`` does not cover (fold-parts,
  fold-constants, domain-rewrites, cse, dce, cftensor-licm), named after the pass
* ``cftensor/``    -- every ``cftensor`` op round-tripped (``roundtrip.mlir``) and verifier/type errors
  (``invalid/``, one case per file like ``diagnostics/``)

Substitutions: ``cf-opt`` and ``filecheck`` are the executables of the running Python's
environment, ``%certifiers`` is the directory of the shipped ``.cf`` files, ``%python`` the
interpreter.
"""

import os
import sys

import lit.formats

config.name = "cfmlir"  # noqa: F821 - ``config`` is injected by lit
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".cf", ".mlir"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.excludes = ["lit.cfg.py", "Inputs"]  # noqa: F821

_bin = os.path.dirname(sys.executable)
_repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _tool(name: str) -> str:
    path = os.path.join(_bin, name)
    return path if os.path.exists(path) else name


config.substitutions.append(("%certifiers", os.path.join(_repo, "cfmlir", "certifiers")))  # noqa: F821
config.substitutions.append(("%python", sys.executable))  # noqa: F821
# Keep the environment: the venv's bin first on PATH so plain ``cf-opt``/``filecheck`` resolve too.
config.environment["PATH"] = _bin + os.pathsep + os.environ.get("PATH", "")  # noqa: F821
config.environment["PYTHONWARNINGS"] = "ignore"  # noqa: F821
for tool in ("cf-opt", "filecheck"):
    config.substitutions.append((r"(?<![\w/.-])" + tool + r"(?![\w-])", _tool(tool)))  # noqa: F821
