"""The layer ops people's networks bring (issue 16): LeakyRelu, Elu, Softplus, Abs, every form of
Clip, Concat (of branches over one layer and over several), Slice and Split, on batched and rank-1
inputs.  Every model built here equals onnxruntime on random inputs (in float64 where onnxruntime has
float64 kernels), has the intended layers, and what the loader refuses is one line naming the node."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from onnx import helper

from cfruntime.errors import NetworkError, UnsupportedOpError
from cfruntime.network import ELEMENTWISE_KINDS, Layer, network_from_model
from cfruntime.network.builders import LAYER_OP_MODELS, layer_op_model
from cfruntime.network.graph import ELEMENTWISE_FUNCTIONS, elementwise_image
from cfruntime.network.onnx_loader import SUPPORTED_OPS
from cftest.onnx_reference import ort_session, to_double_model

RNG = np.random.default_rng(1616)
#: Ops onnxruntime runs in float64 (LeakyRelu, Elu, Softplus and Conv it runs in float32 only).
DOUBLE_MODELS = {"abs", "relu6", "hardtanh", "clip", "clip_min", "clip_max", "concat_one_layer"}


def ort_outputs(model, xs: np.ndarray, dtype) -> np.ndarray:
    """onnxruntime on each sample, fed in the model's declared input shape."""
    sess = ort_session(model)
    inp = sess.get_inputs()[0]
    shape = [1 if not isinstance(d, int) else d for d in inp.shape]
    return np.stack([sess.run(None, {inp.name: x.astype(dtype).reshape(shape)})[0].reshape(-1) for x in xs])


def matches_ort(model, n=8, spread=1.5):
    """The loaded network equals onnxruntime: to 1e-12 on a float64 model, to float32's rounding otherwise."""
    net = network_from_model(model)
    xs = RNG.uniform(-spread, spread, (n, net.input_size))
    ours = net(torch.from_numpy(xs)).numpy()
    try:
        ref, tol = ort_outputs(to_double_model(model), xs, np.float64), 1e-12
    except Exception:  # no float64 kernel for an op
        ref, tol = ort_outputs(model, xs, np.float32), 2e-5
    assert ours.shape == ref.shape
    assert np.abs(ours - ref).max() <= tol * max(1.0, float(np.abs(ref).max()))
    return net


def kinds(net):
    return [l.kind for l in net.layers]


@pytest.mark.parametrize("name", sorted(LAYER_OP_MODELS))
def test_each_layer_op_model_equals_onnxruntime(name):
    net = matches_ort(layer_op_model(name))
    if name in DOUBLE_MODELS:  # the comparison above really ran in float64
        model = to_double_model(layer_op_model(name))
        xs = RNG.uniform(-1.5, 1.5, (3, net.input_size))
        assert np.abs(net(torch.from_numpy(xs)).numpy() - ort_outputs(model, xs, np.float64)).max() <= 1e-12
    # every activation the model has is reached on both of its sides by the inputs above
    hidden = net.forward_all(torch.from_numpy(RNG.uniform(-1.5, 1.5, (64, net.input_size))))
    for layer in net.layers:
        if layer.kind in ("leakyrelu", "elu", "abs", "relu"):
            x = hidden[layer.preds[0]]
            assert bool((x < 0).any()) and bool((x > 0).any()), (name, layer.index)


def test_the_layer_op_models_have_the_intended_layers():
    want = {
        "leakyrelu": ["input", "affine", "leakyrelu", "affine"], "elu": ["input", "affine", "elu", "affine"],
        "softplus": ["input", "affine", "softplus", "affine"], "abs": ["input", "affine", "abs", "affine"],
        "relu6": ["input", "affine", "relu6", "affine"], "hardtanh": ["input", "affine", "hardtanh", "affine"],
        # the rescaling affine layers merge into the Gemms around them
        "clip": ["input", "affine", "hardtanh", "affine"], "clip_min": ["input", "affine", "relu", "affine"],
        "clip_max": ["input", "affine", "relu", "affine"],
        # two affine branches of one Relu and a constant: one affine layer
        "concat_one_layer": ["input", "affine", "relu", "affine"],
        # Relu, LeakyRelu and the input: one zero-padded gather per layer, summed
        "concat_branches": ["input", "affine", "relu", "affine", "leakyrelu", "affine", "affine", "affine", "add", "add", "affine"],
    }
    for name, layers in want.items():
        assert kinds(network_from_model(layer_op_model(name))) == layers, name
    net = network_from_model(layer_op_model("leakyrelu"))
    assert net[2].alpha == pytest.approx(0.2) and network_from_model(layer_op_model("leakyrelu_default"))[2].alpha == pytest.approx(0.01)
    assert network_from_model(layer_op_model("elu"))[2].alpha == pytest.approx(0.5)
    assert net[1].alpha is None and "alpha=0.2" in net.summary()
    # a Split's outputs share the convolution they select from: one conv layer
    split = network_from_model(layer_op_model("slice_split"))
    assert [l.linear_kind for l in split.layers if l.kind == "affine"].count("conv") == 1
    vec = network_from_model(layer_op_model("vector"))
    assert vec.input_shape == (5,) and {"softplus", "elu", "add"} <= set(kinds(vec))


@pytest.mark.parametrize("op,attrs,alpha", [("LeakyRelu", {}, 0.01), ("LeakyRelu", {"alpha": 0.3}, 0.3), ("Elu", {}, 1.0),
                                            ("Elu", {"alpha": 0.25}, 0.25)])
def test_alpha_defaults_and_values(op, attrs, alpha):
    from cfruntime.network.builders import make_model

    net = network_from_model(make_model([helper.make_node(op, ["input"], ["output"], name="act", **attrs)], {}, (3,)))
    assert net[1].alpha == pytest.approx(alpha)
    x = torch.tensor([[-2.0, 0.0, 1.5]], dtype=torch.float64)
    neg = alpha * -2.0 if op == "LeakyRelu" else alpha * np.expm1(-2.0)
    torch.testing.assert_close(net(x), torch.tensor([[neg, 0.0, 1.5]], dtype=torch.float64), rtol=1e-6, atol=1e-7)


def _clip_model(lo, hi, opset):
    from cfruntime.network.builders import make_model

    if opset < 11:  # bounds as attributes
        attrs = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
        node = helper.make_node("Clip", ["input"], ["output"], name="clip", **attrs)
        return make_model([node], {}, (5,), opset=opset)
    inits, ins = {}, ["input", "", ""]
    for i, (k, v) in enumerate((("lo", lo), ("hi", hi)), start=1):
        if v is not None:
            inits[k], ins[i] = np.asarray(v, np.float32), k
    while not ins[-1]:
        ins.pop()
    return make_model([helper.make_node("Clip", ins, ["output"], name="clip")], inits, (5,), opset=opset)


@pytest.mark.parametrize("opset", [7, 13])  # 7: bounds as attributes (the oldest opset accepted)
@pytest.mark.parametrize("lo,hi,layers", [
    (0.0, 6.0, ["relu6"]), (-1.0, 1.0, ["hardtanh"]), (0.0, None, ["relu"]), (-2.0, 0.5, ["affine", "hardtanh", "affine"]),
    (0.25, None, ["affine", "relu", "affine"]), (None, -0.5, ["affine", "relu", "affine"])
])
def test_clip_forms(lo, hi, layers, opset):
    model = _clip_model(lo, hi, opset)
    net = matches_ort(model, n=16, spread=8.0)
    assert kinds(net)[1:] == layers
    x = torch.linspace(-8, 8, 5 * 7, dtype=torch.float64).reshape(7, 5)
    torch.testing.assert_close(net(x), x.clamp(min=lo, max=hi), rtol=0, atol=1e-12)


def test_a_dynamic_batch_may_be_sliced_whole():
    """``x[:, 1:3]`` as exporters write it (axes 0 and 1, the batch's end INT64_MAX) is a selection;
    any other slice of a symbolic batch is refused."""
    from cfruntime.network.builders import make_model

    nodes = [helper.make_node("Slice", ["input", "s", "e", "a"], ["output"], name="sl")]
    whole = {"s": np.array([0, 1], np.int64), "e": np.array([2**63 - 1, 3], np.int64), "a": np.array([0, 1], np.int64)}
    net = matches_ort(make_model(nodes, whole, (5,)))
    assert net.output_size == 2
    with pytest.raises(UnsupportedOpError, match="Slice on the batch dimension"):
        network_from_model(make_model(nodes, {**whole, "s": np.array([1, 1], np.int64)}, (5,)))


def test_clip_without_bounds_is_the_identity():
    from cfruntime.network.builders import make_model

    nodes = [helper.make_node("Clip", ["input"], ["c"], name="clip"), helper.make_node("Relu", ["c"], ["output"], name="relu")]
    assert kinds(matches_ort(make_model(nodes, {}, (5,)))) == ["input", "relu"]


def test_concat_with_a_constant_and_slices_in_the_opset_9_attribute_form():
    from cfruntime.network.builders import make_model

    nodes = [helper.make_node("Slice", ["input"], ["s"], starts=[4], ends=[1], axes=[1], name="sl"),  # opset 9: attributes
             helper.make_node("Slice", ["input"], ["t"], starts=[-2], ends=[1000], axes=[1], name="tail"),
             helper.make_node("Concat", ["t", "c", "s"], ["output"], axis=1, name="cat")]
    # s: empty because the end comes before the start with step 1 -> refused; fixed below
    model = make_model(nodes, {"c": np.array([[7.0, -3.0]], np.float32)}, (6,), opset=9)
    with pytest.raises(NetworkError, match="Slice 'sl': the slice of \\[1, 6\\] is empty"):
        network_from_model(model)
    nodes[0] = helper.make_node("Slice", ["input"], ["s"], starts=[1], ends=[4], axes=[1], name="sl")
    net = matches_ort(make_model(nodes, {"c": np.array([[7.0, -3.0]], np.float32)}, (6,), opset=9))
    assert kinds(net) == ["input", "affine"] and net[1].linear_kind == "gather"
    x = torch.arange(6, dtype=torch.float64).reshape(1, 6)
    assert net(x).tolist() == [[4.0, 5.0, 7.0, -3.0, 1.0, 2.0, 3.0]]


@pytest.mark.parametrize("opset,split", [(11, "attribute"), (13, "input"), (13, None), (18, None)])
def test_split_forms(opset, split):
    from cfruntime.network.builders import make_model

    inits, ins, attrs = {}, ["input"], {}
    n_out = 3
    if split == "attribute":
        attrs["split"] = [1, 2, 4]
    elif split == "input":
        inits["sz"], ins = np.array([1, 2, 4], np.int64), ["input", "sz"]
    elif opset >= 18:
        attrs["num_outputs"] = n_out  # 7 = 3 + 3 + 1: the last part smaller
    size = 7 if split or opset >= 18 else 6
    outs = [f"p{i}" for i in range(n_out)]
    nodes = [helper.make_node("Split", ins, outs, axis=1, name="split", **attrs),
             helper.make_node("Abs", ["p0"], ["a0"], name="abs"), helper.make_node("Relu", ["p2"], ["a2"], name="relu"),
             helper.make_node("Concat", ["a2", "p1", "a0"], ["output"], axis=1, name="cat")]
    net = matches_ort(make_model(nodes, inits, (size,), opset=opset))
    x = torch.linspace(-3, 3, size, dtype=torch.float64).reshape(1, size)
    bounds = np.cumsum([0] + ([1, 2, 4] if split else ([3, 3, 1] if opset >= 18 else [2, 2, 2])))
    parts = [x[:, bounds[i]:bounds[i + 1]] for i in range(3)]
    torch.testing.assert_close(net(x), torch.cat([parts[2].relu(), parts[1], parts[0].abs()], dim=1), rtol=0, atol=0)


def test_concat_of_convolutions_along_channels_and_constant_folding():
    """Concat of two convolutions of the input (one Relu'd) along the channels; Concat, Slice and
    Split of constants fold."""
    from cfruntime.network.builders import make_model

    r = lambda *s: RNG.standard_normal(s).astype(np.float32)  # noqa: E731
    nodes = [helper.make_node("Conv", ["input", "K1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
             helper.make_node("Conv", ["input", "K2"], ["c2"], kernel_shape=[1, 1], name="conv2"),
             helper.make_node("Concat", ["c0a", "c0b"], ["c0"], axis=1, name="const_cat"),
             helper.make_node("Slice", ["c0", "s0", "e0", "a0"], ["c0s"], name="const_slice"),
             helper.make_node("Split", ["c0s"], ["ca", "cb"], axis=1, name="const_split"),
             helper.make_node("Concat", ["r1", "c2", "cb"], ["cat"], axis=1, name="cat"),
             helper.make_node("Flatten", ["cat"], ["output"], name="flatten")]
    inits = {"K1": r(2, 1, 3, 3), "K2": r(1, 1, 1, 1), "c0a": r(1, 2, 4, 4), "c0b": r(1, 2, 4, 4),
             "s0": np.array([1], np.int64), "e0": np.array([3], np.int64), "a0": np.array([1], np.int64)}
    net = matches_ort(make_model(nodes, inits, (1, 4, 4)))
    assert kinds(net) == ["input", "affine", "relu", "affine", "affine", "add"]


@pytest.mark.parametrize("pads3,pads5,dil,conv", [((1, 1, 1, 1), (2, 2, 2, 2), 1, True), ((1, 0, 1, 2), (2, 1, 2, 3), 1, True),
                                                  ((2, 2, 2, 2), (2, 2, 2, 2), 2, False)])
def test_concat_of_convolutions_of_one_tensor_is_one_convolution(pads3, pads5, dil, conv):
    """Inception-like branches (1x1, 3x3, 5x5 convolutions of one tensor, outputs of one size, windows
    shifted by their paddings) joined along the channels: one convolution whose kernels share one
    window; with different dilations the join is a dense layer."""
    from cfruntime.network.builders import make_model

    r = lambda *s: RNG.standard_normal(s).astype(np.float32)  # noqa: E731
    nodes = [helper.make_node("Relu", ["input"], ["x"], name="relu"),
             helper.make_node("Conv", ["x", "K1", "B1"], ["c1"], kernel_shape=[1, 1], name="conv1x1"),
             helper.make_node("Conv", ["x", "K3", "B3"], ["c3"], kernel_shape=[3, 3], pads=list(pads3), dilations=[dil, dil], name="conv3x3"),
             helper.make_node("Conv", ["x", "K5", "B5"], ["c5"], kernel_shape=[5, 5], pads=list(pads5), name="conv5x5"),
             helper.make_node("Concat", ["c3", "c1", "c5"], ["cat"], axis=1, name="cat"),
             helper.make_node("Flatten", ["cat"], ["output"], name="flatten")]
    inits = {"K1": r(2, 2, 1, 1), "B1": r(2), "K3": r(3, 2, 3, 3), "B3": r(3), "K5": r(1, 2, 5, 5), "B5": r(1)}
    net = matches_ort(make_model(nodes, inits, (2, 6, 6)))
    assert [(l.kind, l.linear_kind) for l in net.layers[1:]] == [("relu", None), ("affine", "conv" if conv else "dense")]


def test_one_branch_used_twice_and_a_deeper_pending_value():
    """The same value twice in a Concat, and a value whose pending stages do not merge into one
    (a Conv followed by a non-order-preserving Slice) next to a Relu branch."""
    from cfruntime.network.builders import make_model

    r = lambda *s: RNG.standard_normal(s).astype(np.float32)  # noqa: E731
    nodes = [helper.make_node("Conv", ["input", "K"], ["c"], kernel_shape=[2, 2], name="conv"),
             helper.make_node("Slice", ["c", "st", "en", "ax", "sp"], ["s"], name="rev"),
             helper.make_node("Relu", ["c"], ["rc"], name="relu"),
             helper.make_node("Concat", ["s", "rc", "s"], ["cat"], axis=1, name="cat"),
             helper.make_node("Flatten", ["cat"], ["output"], name="flatten")]
    inits = {"K": r(2, 1, 2, 2), "st": np.array([-1], np.int64), "en": np.array([-10], np.int64), "ax": np.array([3], np.int64),
             "sp": np.array([-1], np.int64)}
    matches_ort(make_model(nodes, inits, (1, 4, 4)))


@pytest.mark.parametrize("case,error", [
    ("sign", "unsupported ONNX op 'Erf' at node 'sgn'"),
    ("clip_const", "unsupported ONNX op 'Clip' at node 'clip' (min 2 not below max 1 (a constant output))"),
    ("clip_data", "unsupported ONNX op 'Clip' at node 'clip' (min 'input' must be a constant)"),
    ("concat_batch", "unsupported ONNX op 'Concat' at node 'cat' (Concat along the batch dimension)"),
    # invalid ONNX (onnx's full checker refuses them): its message, naming the node
    ("concat_shapes", "invalid ONNX model: node 'cat' (Concat): All inputs to Concat must have same rank. Input 1 has rank 3 != 2"),
    ("slice_batch", "unsupported ONNX op 'Slice' at node 'sl' (Slice on the batch dimension)"),
    ("slice_step0", "invalid ONNX model: node 'sl' (Slice): 'step' cannot be 0 for Slice"),
    ("split_sizes", "invalid ONNX model: node 'sp' (Split): Mismatch between the sum of 'split' (2) and the split dimension of the input (3)"),
    ("split_batch", "unsupported ONNX op 'Split' at node 'sp' (Split on the batch dimension)"),
    ("slice_data", "invalid ONNX model: node 'sl' (Slice): starts typestr: Tind, has unsupported type: tensor(float)"),
])
def test_refused_configurations_are_one_line_errors(tmp_path, case, error):
    import onnx

    from cfruntime.network import load_onnx
    from cfruntime.network.builders import make_model

    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    models = {
        "sign": ([helper.make_node("Erf", ["input"], ["output"], name="sgn")], {}),
        "clip_const": ([helper.make_node("Clip", ["input", "lo", "hi"], ["output"], name="clip")],
                       {"lo": np.float32(2.0), "hi": np.float32(1.0)}),
        "clip_data": ([helper.make_node("Clip", ["input", "input"], ["output"], name="clip")], {}),
        "concat_batch": ([helper.make_node("Concat", ["input", "input"], ["output"], axis=0, name="cat")], {}),
        "concat_shapes": ([helper.make_node("Unsqueeze", ["input", "ax"], ["u"], name="u"),
                           helper.make_node("Concat", ["input", "u"], ["output"], axis=1, name="cat")], {"ax": i64(2)}),
        "slice_batch": ([helper.make_node("Slice", ["input", "s", "e", "a"], ["output"], name="sl")],
                        {"s": i64(0), "e": i64(2), "a": i64(0)}),
        "slice_step0": ([helper.make_node("Slice", ["input", "s", "e", "a", "st"], ["output"], name="sl")],
                        {"s": i64(0), "e": i64(2), "a": i64(1), "st": i64(0)}),
        "split_sizes": ([helper.make_node("Split", ["input", "sz"], ["output", "o2"], axis=1, name="sp")], {"sz": i64(1, 1)}),
        "split_batch": ([helper.make_node("Split", ["input"], ["output", "o2"], axis=0, name="sp")], {}),
        "slice_data": ([helper.make_node("Slice", ["input", "input", "input"], ["output"], name="sl")], {}),
    }
    nodes, inits = models[case]
    model = make_model(nodes, inits, (3,), check=False)
    p = tmp_path / "m.onnx"
    onnx.save(model, str(p))
    with pytest.raises(NetworkError) as ei:
        load_onnx(p)
    msg = str(ei.value)
    assert "\n" not in msg and msg == f"error: {p}: {error}"
    if error.startswith("unsupported"):
        assert isinstance(ei.value, UnsupportedOpError)


def test_every_elementwise_kind_has_a_function_and_an_exact_interval_image():
    assert set(ELEMENTWISE_FUNCTIONS) == set(ELEMENTWISE_KINDS)
    assert {"LeakyRelu", "Elu", "Softplus", "Abs", "Clip", "Concat", "Slice", "Split"} <= SUPPORTED_OPS
    lo = torch.tensor([-3.0, -1.0, 0.5, -0.2, 2.0], dtype=torch.float64)
    hi = torch.tensor([-2.0, 2.0, 7.0, 0.1, 9.0], dtype=torch.float64)
    grid = lo[:, None] + (hi - lo)[:, None] * torch.linspace(0, 1, 2001, dtype=torch.float64)
    grid = torch.cat([grid, torch.zeros(5, 1, dtype=torch.float64).clamp(lo[:, None], hi[:, None])], dim=1)  # the kinks
    for kind in ELEMENTWISE_KINDS:
        for alpha in ([0.1, -0.3] if kind in ("leakyrelu", "elu") else [None]):
            layer = Layer(index=1, kind=kind, shape=(5,), preds=[0], alpha=alpha)
            f = layer.evaluate([grid.T]).T
            img_lo, img_hi = elementwise_image(kind, layer.alpha, lo, hi)
            assert bool((img_lo <= f.amin(dim=1) + 1e-12).all()) and bool((img_hi >= f.amax(dim=1) - 1e-12).all()), kind
            # exact: to the grid's resolution for the periodic kinds (their extremes fall between grid
            # points), away from the pole for the reciprocal (unbounded across 0)
            rows = [0, 2, 4] if kind == "reciprocal" else list(range(5))
            atol = 1e-5 if kind in ("sin", "cos") else 1e-12
            torch.testing.assert_close(img_lo[rows], f.amin(dim=1)[rows], rtol=0, atol=atol)
            torch.testing.assert_close(img_hi[rows], f.amax(dim=1)[rows], rtol=0, atol=atol)
    assert Layer(index=1, kind="elu", shape=(1,), preds=[0]).alpha == 1.0
    # softplus is exact where torch's own cuts over to the identity
    x = torch.tensor([[25.0, -40.0]], dtype=torch.float64)
    torch.testing.assert_close(ELEMENTWISE_FUNCTIONS["softplus"](x, None), torch.log1p(torch.exp(x)), rtol=1e-15, atol=0)


def test_periodic_image_errs_towards_the_extrema_far_out():
    """The reference image of sin/cos never narrows where float 2 pi has drifted from the real one: beyond
    1e6 every interval holds both extrema, and an extremum a hair outside an end still counts (margin)."""
    far = torch.tensor([1e15, -3e7], dtype=torch.float64)
    for kind in ("sin", "cos"):
        lo, hi = elementwise_image(kind, None, far, far)
        assert torch.equal(lo, -torch.ones(2, dtype=torch.float64)) and torch.equal(hi, torch.ones(2, dtype=torch.float64))
    at = torch.tensor([math.pi / 2 + 1e-9], dtype=torch.float64)  # the peak just below the interval's low end
    assert elementwise_image("sin", None, at, at + 0.1)[1].item() == 1.0
    near = torch.tensor([0.5], dtype=torch.float64)  # no extremum within [0.5, 1.0]: the ends
    lo, hi = elementwise_image("sin", None, near, near + 0.5)
    assert hi.item() == math.sin(1.0) and lo.item() == math.sin(0.5)
