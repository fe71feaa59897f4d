"""Generators of bad inputs for the fuzz test of issue 24 (``test/unit/tools/test_bad_input_fuzz.py``):
mutated ``.cf`` sources, VNN-LIB texts, ERAN CSV files and ONNX models.

Each generator is a function of a ``random.Random`` (hypothesis' ``st.randoms()`` in the fuzz test, a
seeded one for the few cases run as processes), so a failing case is reproduced from its seed.  The
inputs start from good ones (a shipped certifier, a small property, rows of the shipped CSV, a small MLP)
and are damaged the ways users and tools damage files: tokens deleted, duplicated, swapped or replaced,
deep nesting, unknown names, bad numbers, truncation, binary bytes, wrong shapes, unknown ops.
"""

from __future__ import annotations

import random

import numpy as np
import onnx
from onnx import TensorProto

from cfmlir.certifiers import certifier_source
from cfmlir.syntax.lexer import TokenKind, tokenize
from cfruntime.default_data import default_data_path
from cfruntime.network.builders import mlp_model

#: Certifier sources to mutate (the small ones: a mutant that still compiles runs the whole pipeline)
CF_BASES = ("ibp", "crown_ibp", "deepz", "deeppoly")
BAD_NUMBERS = ("1e999", "-1e999", "1e-999", "0x10", "1.2.3", "nan", "inf", "99999999999999999999999", "1e", "00.5", "-")
ODD_TOKENS = ("@", "#", "$", '"', "'", "\\", "List", "In", "fi", "then", "curr_list", "prev_0", "sym", "lp", ";;", "->")


def _tokens(name: str) -> list[str]:
    text = certifier_source(name)[0]
    return [t.text for t in tokenize(text, name) if t.kind is not TokenKind.EOF]


_TOKENS = {name: _tokens(name) for name in CF_BASES}
_VOCABULARY = sorted({t for toks in _TOKENS.values() for t in toks})


def mutate(items: list, rng: random.Random, vocabulary, rounds: int | None = None) -> list:
    """``items`` after 1-3 deletions, duplications, swaps, replacements or a truncation."""
    items = list(items)
    for _ in range(rounds or rng.randint(1, 3)):
        if not items:
            break
        i = rng.randrange(len(items))
        kind = rng.choice(("delete", "duplicate", "swap", "replace", "insert", "truncate"))
        if kind == "delete":
            del items[i]
        elif kind == "duplicate":
            items.insert(i, items[i])
        elif kind == "swap":
            j = rng.randrange(len(items))
            items[i], items[j] = items[j], items[i]
        elif kind == "replace":
            items[i] = rng.choice(vocabulary)
        elif kind == "insert":
            items.insert(i, rng.choice(vocabulary))
        else:
            items = items[:i]
    return items


def cf_source(rng: random.Random) -> tuple[str, str]:
    """``(file name, text)`` of a damaged shipped certifier."""
    name = rng.choice(CF_BASES)
    toks = list(_TOKENS[name])
    how = rng.choice(("tokens", "tokens", "nest", "names", "numbers", "operator"))
    if how == "tokens":
        toks = mutate(toks, rng, _VOCABULARY + list(ODD_TOKENS) + list(BAD_NUMBERS))
    elif how == "nest":  # wrap a token in parentheses (or minus signs), up to far past the limit
        i = rng.randrange(len(toks))
        k = rng.choice((10, 63, 64, 65, 200, 3000))
        toks[i] = ("(" * k + toks[i] + ")" * k) if rng.random() < 0.7 else ("- " * k + toks[i])
    elif how == "names":  # an identifier becomes a random (maybe unknown, reserved or odd) one
        idents = [i for i, t in enumerate(toks) if t.isidentifier()]
        i = rng.choice(idents)
        toks[i] = rng.choice(("x" * rng.randint(1, 300), "curr", "prev", "flow", "transformer", "Shape", "def",
                              "_", "a1", "Relu", "relu", "L", "weight", "layer", "map", "traverse"))
    elif how == "numbers":
        nums = [i for i, t in enumerate(toks) if t[:1].isdigit()]
        toks[rng.choice(nums)] = rng.choice(BAD_NUMBERS)
    else:  # an operator replaced by another
        ops = [i for i, t in enumerate(toks) if t in ("+", "-", "*", "/", "<=", ">=", "?", ":", "and", "or")]
        toks[rng.choice(ops)] = rng.choice(("+", "-", "*", "/", "<=", ">=", "==", "!=", "?", ":", "and", "or", "In"))
    return f"{name}_mutant.cf", " ".join(toks)


# -- VNN-LIB ---------------------------------------------------------------------------------------------
def _vnnlib_lines(n_in: int, n_out: int) -> list[str]:
    lines = [f"(declare-const X_{i} Real)" for i in range(n_in)] + [f"(declare-const Y_{j} Real)" for j in range(n_out)]
    lines += [a for i in range(n_in) for a in (f"(assert (>= X_{i} -0.5))", f"(assert (<= X_{i} 0.5))")]
    lines += ["(assert (or (and (>= Y_1 Y_0)) (and (<= Y_0 -3.0))))"]
    return lines


def vnnlib_text(rng: random.Random, n_in: int = 3, n_out: int = 2) -> str:
    """A damaged property over ``n_in`` inputs and ``n_out`` outputs."""
    lines = _vnnlib_lines(n_in, n_out)
    how = rng.choice(("lines", "tokens", "truncate", "nest", "names", "numbers", "empty box", "binary"))
    if how == "lines":
        lines = mutate(lines, rng, lines + ["(assert)", "()", "(declare-const X_0 Int)", "(check-sat)", ")"])
    elif how == "tokens":
        toks = " ".join(lines).replace("(", " ( ").replace(")", " ) ").split()
        return " ".join(mutate(toks, rng, toks + ["X_99", "Y_-1", "and", "or", "=", "nan", "1e999", "(", ")"]))
    elif how == "truncate":
        text = "\n".join(lines)
        return text[:rng.randrange(len(text))]
    elif how == "nest":
        op = rng.choice(("and", "or", "alternate"))
        k = rng.choice((5, 99, 100, 101, 5000))
        ops = [("and" if i % 2 else "or") if op == "alternate" else op for i in range(k)]
        lines[-1] = "(assert " + "".join(f"({o} (>= Y_1 Y_0) " for o in ops) + "(<= Y_0 -3.0)" + ")" * k + ")"
    elif how == "names":
        i = rng.randrange(len(lines))
        lines[i] = lines[i].replace(rng.choice(("X_0", "Y_0", "Real", "assert", "declare-const")),
                                    rng.choice(("X_", "x_0", "Y_00", "X_1000000", "Z_0", "Int", "", "X_0 X_1")), 1)
    elif how == "numbers":
        i = rng.randrange(len(lines))
        for old in ("-0.5", "0.5", "-3.0"):
            lines[i] = lines[i].replace(old, rng.choice(("nan", "NaN", "inf", "-inf", "1e999", "1e308", "-1e308",
                                                         "0x1", "1/2", "(- 0.5)", "(- (- 0.5))", "")))
    elif how == "empty box":
        i = rng.randrange(n_in)
        lines.append(f"(assert (>= X_{i} {rng.choice((0.6, 1e300, 0.5000001))}))")
    else:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 200))).decode("latin-1")
    return "\n".join(lines) + "\n"


# -- ERAN CSV --------------------------------------------------------------------------------------------
_ROWS = default_data_path().read_text().splitlines()[:3]


def csv_bytes(rng: random.Random) -> bytes:
    """A damaged MNIST CSV of up to three rows."""
    rows = [r.split(",") for r in _ROWS]
    how = rng.choice(("cells", "columns", "values", "binary", "truncate", "empty", "labels"))
    if how == "cells":
        r = rng.randrange(len(rows))
        rows[r] = mutate(rows[r], rng, ["", "x", "1.5", "-1", "256", "nan", "1e999", '"3"', " ", "0x10"])
    elif how == "columns":
        r = rng.randrange(len(rows))
        rows[r] = rows[r][:rng.choice((0, 1, 2, 784, 786, 3073))] if rng.random() < 0.5 else rows[r] + ["0"] * rng.randint(1, 3000)
    elif how == "values":
        r, c = rng.randrange(len(rows)), rng.randrange(785)
        rows[r][c] = rng.choice(("-0", "255.0", "255.5", "1e3", "inf", "-inf", "nan", "9" * 400, "\x00", "٣"))
    elif how == "labels":
        rows[rng.randrange(len(rows))][0] = rng.choice(("10", "-1", "9", "1e1", "3.0", "99999999999999999999"))
    elif how == "binary":
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 3000)))
    elif how == "empty":
        return rng.choice((b"", b"\n\n", b",", b"\xef\xbb\xbf"))
    text = "\n".join(",".join(r) for r in rows) + "\n"
    if how == "truncate":
        text = text[:rng.randrange(len(text))]
    return text.encode("utf-8")


# -- ONNX ------------------------------------------------------------------------------------------------
def _good_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    return mlp_model([rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)],
                     activations="relu", input_shape=(3,))


_MODEL = _good_model().SerializeToString()
_OPS = ("Gemm", "MatMul", "Add", "Relu", "Sigmoid", "Conv", "MaxPool", "Flatten", "Reshape", "Softmax", "Foo", "",
        "Gemm ", "Concat", "Split", "Sub", "Div", "Mul", "Identity", "Transpose", "Pad", "BatchNormalization")
_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.INT8,
          TensorProto.STRING, TensorProto.BOOL, 0, 999)


def onnx_bytes(rng: random.Random) -> bytes:
    """A damaged serialized model (3 inputs, 2 outputs when it survives)."""
    how = rng.choice(("bytes", "truncate", "op", "node", "initializer", "dims", "dtype", "attribute", "opset", "io"))
    if how == "bytes":
        data = bytearray(_MODEL)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if how == "truncate":
        return _MODEL[:rng.randrange(len(_MODEL))]
    m = onnx.ModelProto()
    m.ParseFromString(_MODEL)
    g = m.graph
    if how == "op":
        rng.choice(g.node).op_type = rng.choice(_OPS)
    elif how == "node":
        i = rng.randrange(len(g.node))
        if rng.random() < 0.5:
            del g.node[i]
        else:
            node = g.node[i]
            seq = node.input if node.input and rng.random() < 0.7 else node.output
            if len(seq):
                seq[rng.randrange(len(seq))] = rng.choice(("nowhere", "", node.output[0] if node.output else "x"))
    elif how == "initializer":
        init = rng.choice(g.initializer)
        if rng.random() < 0.3:
            g.initializer.remove(init)
        elif rng.random() < 0.5:
            init.raw_data = init.raw_data[:rng.randrange(len(init.raw_data) + 1)]
        else:
            bad = np.full(rng.randint(0, 12), rng.choice((np.nan, np.inf, 1e38, 0.0)), dtype=np.float32)
            init.raw_data = bad.tobytes()
    elif how == "dims":
        target = rng.choice([*g.initializer, None])
        if target is not None:
            target.dims[rng.randrange(len(target.dims))] = rng.choice((0, -1, 1, 7, 2 ** 40))
        else:
            dims = g.input[0].type.tensor_type.shape.dim
            if len(dims):
                dims[rng.randrange(len(dims))].dim_value = rng.choice((0, 1, 5, 2 ** 40))
    elif how == "dtype":
        target = rng.choice([*g.initializer, None])
        if target is not None:
            target.data_type = rng.choice(_TYPES)
        else:
            g.input[0].type.tensor_type.elem_type = rng.choice(_TYPES)
    elif how == "attribute":
        node = rng.choice(g.node)
        node.attribute.append(onnx.helper.make_attribute(rng.choice(("transB", "transA", "axis", "alpha", "kernel_shape")),
                                                         rng.choice((5, -7, 0.5, [0, 0], "x"))))
    elif how == "opset":
        m.opset_import[0].version = rng.choice((0, 1, 6, 99, -1))
    else:
        seq = rng.choice((g.input, g.output))
        if len(seq) and rng.random() < 0.5:
            del seq[0]
        else:
            seq.add().CopyFrom(onnx.helper.make_tensor_value_info(rng.choice(("extra", "input")), TensorProto.FLOAT, [3]))
    return m.SerializeToString()
