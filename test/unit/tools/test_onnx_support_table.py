"""The table of supported ONNX ops in docs/vnncomp.md agrees with the code: the loader's op table
(``OP_LAYER_KINDS``, ``SUPPORTED_OPS``), ``OPERATOR_OF_KIND`` and the rules of the shipped ``.cf``
files.  Regenerate the table with ``python -m cfmlir.tools.onnx_support``."""

from __future__ import annotations

import re

from cfmlir.tools import onnx_support
from cfruntime import contract
from cfruntime.network import LAYER_KINDS, network_from_model
from cfruntime.network.builders import LAYER_OP_MODELS, layer_op_model
from cfruntime.network.onnx_loader import ACTIVATION_KINDS, HANDLERS, OP_LAYER_KINDS, SUPPORTED_OPS, _Loader
from cftest.onnx_reference import REPO_ROOT

BEGIN, END = "<!-- onnx-support-table: begin", "<!-- onnx-support-table: end -->"


def test_docs_table_is_the_generated_one():
    text = (REPO_ROOT / "docs" / "vnncomp.md").read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    block = text.split(BEGIN, 1)[1].split("\n", 1)[1].split(END, 1)[0]
    assert block.strip() == onnx_support.markdown_table().strip(), \
        "docs/vnncomp.md's supported-ops table is stale: regenerate it with `python -m cfmlir.tools.onnx_support`"


def test_op_table_covers_the_loader_and_the_contract():
    for op in SUPPORTED_OPS:  # every op in the table has a conversion
        assert op in ACTIVATION_KINDS or op in ("Softmax", "Constant") or op in HANDLERS or hasattr(_Loader, "op_" + op), op
    kinds = {kind for rows in OP_LAYER_KINDS.values() for kind, _ in rows}
    assert kinds <= set(LAYER_KINDS) and kinds <= set(contract.OPERATOR_OF_KIND)
    assert set(contract.OPERATOR_OF_KIND) == set(LAYER_KINDS) - {"input"}  # every kind the loader makes has a rule name
    for op, kind in ACTIVATION_KINDS.items():
        assert [k for k, _ in OP_LAYER_KINDS[op]] == [kind]


def test_the_layers_of_the_layer_op_models_are_in_their_ops_rows():
    """What the loader makes of each op in the models built for it is among the kinds its row names."""
    for name in LAYER_OP_MODELS:
        model = layer_op_model(name)
        allowed = {k for node in model.graph.node for k, _ in OP_LAYER_KINDS[node.op_type]} | {"input"}
        assert {l.kind for l in network_from_model(model).layers} <= allowed, name


def test_certifier_columns_read_the_cf_files():
    rules = onnx_support.certifier_rules("ibp")
    assert {"Affine", "Relu", "Maxpool"} <= rules
    row = next(r for r in onnx_support.support_rows() if r[1] == "relu" and r[0] == ("Relu",))
    assert all(row[4])  # every certifier has a Relu rule
    assert re.search(r"^\| `Relu` \| `relu` \|", onnx_support.markdown_table(), re.MULTILINE)
