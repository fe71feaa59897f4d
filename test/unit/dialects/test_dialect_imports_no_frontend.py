"""The dialects do not depend on the frontend (issue 17).

In MLIR's layering the frontend depends on the dialect, never the reverse: importing the ``cf`` and
``cftensor`` dialects (and so running their verifiers) must not load ``cfmlir.syntax`` or
``cfmlir.typing``.  The typing rules the ``cf`` verifiers share with the type checker live in
:mod:`cfmlir.dialects.cf_typing_rules`, over the lattice in :mod:`cfmlir.dialects.cf_type_lattice`.
"""

from __future__ import annotations

import subprocess
import sys

from cftest import REPO


def _frontend_modules_loaded(code: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_importing_the_dialects_loads_no_frontend_module():
    code = (
        "import sys, cfmlir.dialects.cf, cfmlir.dialects.cftensor; "
        "print(sorted(m for m in sys.modules if m.startswith(('cfmlir.syntax', 'cfmlir.typing'))))"
    )
    assert _frontend_modules_loaded(code) == "[]"


def test_the_passes_load_no_frontend_module():
    """The passes (shape analysis, rewrites, emission) work on the dialects only: importing every
    registered pass loads no module of the frontend (syntax, typing, lowering)."""
    code = (
        "import sys, cfmlir.passes.pipeline, cfmlir.passes.emit_python; "
        "print(sorted(m for m in sys.modules if m.startswith(('cfmlir.syntax', 'cfmlir.typing', 'cfmlir.lowering'))))"
    )
    assert _frontend_modules_loaded(code) == "[]"


def test_verifying_cf_ir_loads_no_frontend_module():
    """Parsing and verifying a ``cf`` module exercises every kind of verifier without the frontend."""
    ir = """
builtin.module {
  cf.shape (l : !cf.float, u : !cf.float) constraints(%curr: !cf.neuron) {
    %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
    %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
    cf.yield %1 : !cf.ct
  }
  cf.func @priority(%n: !cf.neuron) -> !cf.int {
    %0 = cf.access %n["layer"] : (!cf.neuron) -> !cf.int
    cf.yield %0 : !cf.int
  }
  cf.func @stop(%n: !cf.neuron) -> !cf.bool {
    %0 = cf.const false : !cf.bool
    cf.yield %0 : !cf.bool
  }
  cf.transformer @ibp {
    Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
      %0 = cf.access %prev["l"] : (!cf.neuron) -> !cf.float
      %1 = cf.access %prev["u"] : (!cf.neuron) -> !cf.float
      %2 = cf.const 0.0 : !cf.float
      %3 = cf.max %0, %2 : (!cf.float, !cf.float) -> !cf.float
      %4 = cf.max %1, %2 : (!cf.float, !cf.float) -> !cf.float
      cf.return %3, %4 : !cf.float, !cf.float
    }
  }
  cf.flow forward @priority, @stop, @ibp
}
"""
    code = (
        "import sys\n"
        "from xdsl.context import Context\n"
        "from xdsl.dialects.builtin import Builtin\n"
        "from xdsl.parser import Parser\n"
        "from cfmlir.dialects.cf import CF\n"
        "ctx = Context()\n"
        "ctx.load_dialect(Builtin)\n"
        "ctx.load_dialect(CF)\n"
        f"Parser(ctx, {ir!r}).parse_module().verify()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('cfmlir.syntax', 'cfmlir.typing'))))"
    )
    assert _frontend_modules_loaded(code) == "[]"


def test_the_syntax_tree_keeps_no_copy_of_the_typing_tables():
    """The operator, builtin and metadata tables live in the typing rules only (the parser reads them
    there); the syntax tree's metadata names are the rules' metadata types."""
    from cfmlir.dialects import cf_typing_rules as rules
    from cfmlir.syntax import ast

    for name in ("UNARY_OPERATORS", "LIST_OPERATORS", "BINARY_NEURON_OPERATORS", "FORWARD_OPERATORS", "OPERATORS",
                 "BUILTIN_ARITIES", "METADATA_ALIASES"):
        assert not hasattr(ast, name), name
    assert set(ast.METADATA_NAMES) == set(rules.METADATA_TYPES)
