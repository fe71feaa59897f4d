"""``-t python``: the xDSL output target that prints a lifted module as Python (see
:mod:`cfmlir.passes.emit_python`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from cfmlir.passes.emit_python import emit_python


@dataclass(frozen=True)
class PythonTarget(Target):
    name = "python"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_python(module, source="cf-opt"))
