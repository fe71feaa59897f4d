"""The metadata algebra of the cftensor dialect, on the paper's running example.

Paper, section "Automatic Translation using a Compiler-based Approach": for ``g(prev.dot(curr[w]))``
with ``g(e) = e.map(f)`` and ``f(n, c) = c * n[L]`` over m = currSize neurons and n = polySize
summands: the neuron tensor is <[1,n],[m,1]>, the coefficients <[m,n],[1,1]>, the extracted
coefficients of n[L] <[1,n,n],[m,1,1]> and their product with c <[m,n,n],[1,1,1]>.
"""

import pytest

from cfmlir.dialects.cftensor_metadata import (
    ONE, Element, Metadata, ShapeMismatch, Size, align_shapes, compress, lcm, parse_metadata, parse_size,
)

CURR, POLY, BATCH = Size.of("curr"), Size.of("poly"), Size.of("batch")


def dims(m: Metadata):
    return [str(s) for s in m.shape], [str(b) for b in m.broadcast]


def running_example():
    # the PolyExp prev.dot(curr[w]): one per current neuron
    e = Metadata.single("P", [CURR], [ONE])
    # map step 1: coefficients get a pushed element for the summands; neurons are compressed
    coeffs = e.with_type("R").push(Element("R", (POLY,), (ONE,)))
    neurons = compress(e).push(Element("N", (POLY,), (ONE,)))
    # n[L]: a PolyExp per neuron; its coefficients add a polySize dimension to the top element
    n_l = neurons.with_type("P")
    top = n_l.top
    n_l_coeffs = n_l.with_top(Element("R", top.shape + (POLY,), top.broadcast + (ONE,)))
    return coeffs, neurons, n_l_coeffs


def test_running_example_metadata_matches_the_paper():
    coeffs, neurons, n_l_coeffs = running_example()
    assert dims(neurons) == (["1", "poly"], ["curr", "1"])
    assert dims(coeffs) == (["curr", "poly"], ["1", "1"])
    assert dims(n_l_coeffs) == (["1", "poly", "poly"], ["curr", "1", "1"])
    a1, a2, product = align_shapes(coeffs, n_l_coeffs)
    assert dims(product) == (["curr", "poly", "poly"], ["1", "1", "1"])
    # c gets one new trailing dimension (broadcast over the n[L] summands) and is repeated along it;
    # n[L] is repeated along the current-neuron dimension: the repeat/repeat/mult that the matmul
    # rewrite turns into an inner product.
    assert a1.added_dims == (2,) and [(d, str(s)) for d, s in a1.repeat] == [(2, "poly")]
    assert a2.added_dims == () and [(d, str(s)) for d, s in a2.repeat] == [(0, "curr")]


def test_lcm_expands_only_unequal_dimensions():
    m1 = Metadata.single("R", [ONE, CURR], [BATCH, ONE])
    m2 = Metadata.single("R", [BATCH, ONE], [ONE, CURR])
    assert dims(lcm(m1, m2)) == (["batch", "curr"], ["1", "1"])
    m3 = Metadata.single("R", [ONE, CURR], [BATCH, ONE])
    assert dims(lcm(m1, m3)) == (["1", "curr"], ["batch", "1"])  # already equal: stays broadcast


def test_lcm_rejects_different_total_shapes():
    with pytest.raises(ShapeMismatch):
        lcm(Metadata.single("R", [CURR], [ONE]), Metadata.single("R", [POLY], [ONE]))


def test_constants_are_polymorphic():
    c = Metadata.single("R", [ONE], [ONE], is_const=True)
    x = Metadata.single("R", [BATCH, CURR], [ONE, ONE])
    a1, a2, m = align_shapes(c, x)
    assert dims(m) == (["batch", "curr"], ["1", "1"])
    assert a2.repeat == () and a2.added_dims == ()


def test_text_form_round_trips():
    text = "N, [poly], [1] :: const P, [1, batch*curr], [2*batch, 1]"
    m = parse_metadata(text)
    assert str(m) == text
    assert m.top.type == "N" and m.elements[1].is_const
    assert parse_size("curr*batch") == parse_size("batch*curr") == BATCH * CURR
    with pytest.raises(ValueError):
        parse_metadata("Q, [1], [1]")
    with pytest.raises(ValueError):
        parse_metadata("R, [1, 2], [1]")
