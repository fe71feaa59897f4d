"""Every ``cf`` op documents itself with an IR example that uses its own name."""

from __future__ import annotations

import pytest

from cfmlir.dialects import cf


@pytest.mark.parametrize("op", cf.CF_OPS, ids=lambda c: c.name)
def test_op_has_docstring_with_ir_example(op):
    doc = op.__doc__ or ""
    assert "Example::" in doc, op.name
    example = doc.split("Example::", 1)[1]
    assert op.name in example, op.name


def test_dialect_contents():
    assert cf.CF.name == "cf"
    assert len(list(cf.CF.operations)) == len(cf.CF_OPS) == 53  # 47 + cf.log (issue 16) + cf.parameter, cf.param (issue 25) + cf.sin, cf.cos, cf.floor (issue 27)
    assert len(list(cf.CF.attributes)) == 11
