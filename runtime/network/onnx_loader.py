"""ONNX -> :class:`~cfruntime.network.graph.Network`.

How ONNX nodes become layers
----------------------------
The loader walks the graph in node order and keeps, for every ONNX value,
either a constant (numpy) or a *pending linear expression* of one layer's
output: ``value = stage_k(... stage_1(layer_out))`` (the values and stages:
:mod:`cfruntime.network.onnx_stages`) where each stage is one of

* a **gather** stage ``y[i] = scale[i] * x[index[i]] + shift[i]`` -- Sub/Div/
  Mul/Add by constants (mean/std normalisation), BatchNormalization (per
  channel), Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Identity, Dropout,
  Slice and Split (constant parameters: they select neurons; the batch
  dimension stays whole), and Pad (modes constant, reflect, edge: a padded entry has scale 0 and shift
  the constant, or repeats an input entry; exact);
* a **dense** stage ``y = W x + b`` -- Gemm (transB/alpha/beta honoured),
  MatMul (+ Add of a bias in either operand order; on several rows, block
  diagonal, which only a model without a batch dimension has), AveragePool whose
  divisor is not uniform, and a Conv whose kernel covers its whole
  (unpadded) input, i.e. a fully-connected layer written as a Conv (the
  MATLAB-exported ``mnist_nln_*`` nets);
* a **conv** stage -- Conv (strides, asymmetric pads, dilation, auto_pad;
  group 1 only), AveragePool/GlobalAveragePool with a uniform divisor (as a
  convolution with a channel-diagonal kernel).  A constant-0 Pad of the two
  spatial dimensions right before one becomes its zero padding (the same
  values).  Before a MaxPool, whose own padding is -inf, such a Pad stays a
  gather layer whose padded neurons are the constant 0.

Inputs: a symbolic first dimension is the batch dimension (kept apart by
every op); a first dimension of 1 followed by others is a batch of one; any
other input (a scalar, a vector, ``[2, 3]``...) has none: the graph is one
function of that tensor, evaluated as written (VNN-COMP's ``test`` networks;
VNN-LIB's ``X_i`` index the flattened input).  See ``_Loader.input_shape``.

A new stage is merged into the previous one whenever the result is exact and
stays in the same form:

* gather after gather / dense after gather / gather after dense / dense
  after dense  -> one stage (so ``Sub -> Div -> Flatten -> Gemm`` and
  ``Transpose -> Reshape -> Gemm`` become one dense affine layer);
* gather after conv -> the conv, if the gather keeps the element order and
  its scale is constant per channel (BatchNorm after Conv, bias Add, Flatten);
* conv after gather -> the conv, *only if the conv has no padding*, the
  gather keeps the element order and its scale is constant per channel.
  With padding, the zeros are inserted *after* normalisation (the raw image
  is effectively padded with ``-t/s``), so a folded conv with a per-channel
  bias would be wrong at the borders; the normalisation then stays its own
  affine layer (a diagonal ``'gather'`` layer) and the conv keeps its
  per-channel bias.  (Folding would only be exact with a per-neuron bias
  ``conv(pad0(t))``.)  Without padding the shift ``t`` may vary per pixel
  (e.g. a mean image); it becomes a per-neuron bias of the conv layer
  (``ConvSpec.bias_per_channel`` is then None);
* conv never merges with conv or dense (convolutions stay convolutions).

When a nonlinearity (Relu, Sigmoid, Tanh, LeakyRelu, Elu, Softplus, Abs, Clip,
MaxPool, residual Add of two branches) consumes a pending value, each
remaining stage becomes one ``'affine'`` layer (once per prefix of stages:
values sharing stages share layers).  Clip is ``relu6`` (0, 6), ``hardtanh``
(-1, 1), ``relu`` (0, none) or, for other bounds, relu/hardtanh between exact
rescaling stages (``op_Clip``).  Concat joins operands over one layer into one
stage over it; operands over several layers become one zero-padded affine
layer each, summed by ``'add'`` layers (``op_Concat``).  ``OP_LAYER_KINDS``
lists what each op becomes.  A final Softmax is dropped with a notice (bounds are on
the logits); Softmax anywhere else, any other op, groups > 1, transA on the
data input etc. raise :class:`~cfruntime.errors.UnsupportedOpError`
(``error: <file>: unsupported ONNX op 'X' at node 'name'``).

``hwc_flatten=True`` reads the first Flatten of a ``[N,C,H,W]`` tensor in
channel-interleaved (HWC) order: this gives the intended (ERAN/TensorFlow)
semantics of the CIFAR fully-connected ERAN nets whose first Gemm expects
HWC columns (see ``cifar_fc_hwc_quirk`` in ``nets/MANIFEST.json``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from cfruntime.errors import NetworkError, UnsupportedOpError, UserError
from cfruntime.network import onnx_folding, onnx_linear_ops, onnx_products, onnx_selection, onnx_validation
from cfruntime.network.graph import DEFAULT_ALPHA, ConvSpec, GatherSpec, Layer, MaxPoolSpec, Network, _prod
from cfruntime.network.onnx_stages import (_compose, _Const, _CStage, _dense_rows, _DStage, _gather_rows, _GStage,
                                           _joined_conv, _Lin, _per_channel, _slice_positions)

#: Supported ONNX op -> the layer kinds it becomes, each with when: ``((kind, when), ...)``; ``()`` for
#: an op that makes no layer.  The README's table of supported ops is printed from this by
#: ``python -m cfmlir.tools.onnx_support`` (with which certifiers have a rule for each kind).
_AFFINE = (("affine", ""),)
OP_LAYER_KINDS = {
    **{op: _AFFINE for op in ("Gemm", "Conv", "Flatten", "Reshape", "Transpose",
                              "BatchNormalization", "AveragePool", "GlobalAveragePool", "Pad", "Squeeze", "Unsqueeze",
                              "Slice", "Split")},
    "Add": (("affine", "a constant added; two values over one layer"), ("add", "two branches (residual join)")),
    "Sub": (("affine", "a constant; two values over one layer"), ("add", "two branches")),
    "Mul": (("affine", "by a constant"), ("mul", "two perturbed values")),
    "MatMul": (("affine", "by a constant"), ("mul", "two perturbed values: products, then sums (affine)")),
    "Pow": (("mul", "a constant integer exponent 1..64: products"),),
    "Div": (("affine", "by a constant"), ("reciprocal", "by a perturbed value: x * (1/y)"), ("mul", "")),
    "Max": (("relu", "max(x, y) = y + relu(x - y), max(x, c) = c + relu(x - c)"), ("affine", ""), ("add", "")),
    "Min": (("relu", "min(x, y) = x - relu(x - y), min(x, c) = c - relu(c - x)"), ("affine", ""), ("add", "")),
    "Relu": (("relu", ""),), "Sigmoid": (("sigmoid", ""),), "Tanh": (("tanh", ""),),
    "LeakyRelu": (("leakyrelu", "alpha kept"),), "Elu": (("elu", "alpha kept"),), "Softplus": (("softplus", ""),),
    "Abs": (("abs", ""),),
    "Sign": (("sign", ""),), "Floor": (("floor", ""),), "Sin": (("sin", ""),), "Cos": (("cos", ""),),
    "Exp": (("exp", ""),), "Reciprocal": (("reciprocal", ""),),
    "Clip": (("relu6", "min 0, max 6"), ("hardtanh", "min -1, max 1; other two bounds between affine layers"),
             ("relu", "min 0 alone; one other bound between affine layers")),
    "MaxPool": (("maxpool", ""),),
    "Concat": (("affine", "operands over one layer"), ("add", "operands over several layers")),
    "Softmax": (("exp", "not at the output (there it is dropped): 1 / sum_j exp(x_j - x_i)"), ("affine", ""), ("reciprocal", "")),
    "Identity": (), "Dropout": (), "Constant": (),
    "Shape": (), "Size": (), "Cast": (),
    **{op: (("affine", "constant indices: a selection"),) for op in onnx_selection.DATA_OPERANDS},
    "Neg": _AFFINE, "ReduceSum": _AFFINE, "ReduceMean": _AFFINE,
    "ConvTranspose": (("affine", "two layers: one convolution of its phases, their interleaving"),),
}
#: Ops converted by functions of other modules: op -> ``handler(loader, node, inputs, attributes)``.
HANDLERS = {**onnx_selection.HANDLERS, **onnx_linear_ops.HANDLERS, **onnx_products.HANDLERS}
#: The ONNX ops the loader supports on perturbed values; any other there is ``unsupported ONNX op
#: '<Op>' at node '<name>'`` (all of them at once, :mod:`cfruntime.network.onnx_validation`).  On
#: constants only, every op of ``onnx.reference`` is evaluated at load time (:mod:`.onnx_folding`).
SUPPORTED_OPS = frozenset(OP_LAYER_KINDS)

#: ONNX elementwise activation -> layer kind (one layer each; LeakyRelu and Elu carry ``alpha``).
ACTIVATION_KINDS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "LeakyRelu": "leakyrelu", "Elu": "elu",
                    "Softplus": "softplus", "Abs": "abs", "Sign": "sign", "Floor": "floor", "Sin": "sin", "Cos": "cos",
                    "Exp": "exp", "Reciprocal": "reciprocal"}
#: Clip(min, max) bounds that are a layer kind of their own (any other Clip is built from relu or
#: hardtanh and affine layers, see ``_Loader.op_Clip``).
CLIP_KINDS = {(0.0, 6.0): "relu6", (-1.0, 1.0): "hardtanh", (0.0, None): "relu"}
#: A Clip bound at least this large in magnitude (float32's largest, the old attribute default) is none.
_NO_BOUND = 3.4e38


def _text(name) -> str:
    """A name from the model: protobuf hands a string field that is not valid UTF-8 (a damaged file) over as
    bytes; names are only shown, so such bytes are decoded with replacement characters."""
    return name if isinstance(name, str) else bytes(name).decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------
# loader
# ---------------------------------------------------------------------------------------------
def load_onnx(path: str | Path, *, hwc_flatten: bool = False, keep_output_softmax: bool = False) -> Network:
    """Load an ONNX file into a :class:`Network` (see module docstring).  A Softmax at the output is
    dropped (``network.output_softmax_dropped``; exact for properties comparing outputs) unless
    ``keep_output_softmax``."""
    path = Path(path)
    checked = _CHECKED.pop(_file_key(path), None)
    try:
        if checked is not None:  # check_file read and checked this very file: convert what it read
            return _Loader(checked, str(path), hwc_flatten, checked_input=True, keep_output_softmax=keep_output_softmax).run()
        model, raw = read_model(path)
        return network_from_model(model, source=str(path), hwc_flatten=hwc_flatten, raw=raw,
                                  keep_output_softmax=keep_output_softmax)
    except UserError:
        raise
    except MemoryError as e:  # e.g. a shape of 2**40 rows
        raise NetworkError(f"out of memory while loading the model ({_oneline(e)})", file=path) from None
    except Exception as e:  # noqa: BLE001 - a malformed model the checks let through: one line, the file
        raise NetworkError(f"malformed ONNX model ({type(e).__name__}: {_oneline(e)})", file=path) from None


#: The model :func:`check_file` read last, for the :func:`load_onnx` of the same file that follows.
_CHECKED: dict[tuple, onnx.ModelProto] = {}


def _file_key(path: Path):
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path.resolve()), st.st_mtime_ns, st.st_size)


def check_file(path: str | Path, *, keep: bool = True) -> None:
    """Read ``path`` and run every check of :func:`check_model` without converting anything: what
    ``cf-run`` does first, before compiling a certifier, so a bad or unsupported network is one line
    within a second or two.  With ``keep``, the next :func:`load_onnx` of the same (unchanged) file in
    this process reuses the model."""
    path = Path(path)
    model, raw = read_model(path)
    check_model(model, str(path), raw)
    _CHECKED.clear()
    if keep:
        _CHECKED[_file_key(path)] = model


def read_model(path: Path) -> tuple[onnx.ModelProto, bytes | str]:
    """The model in ``path`` (gzip-compressed or not) and what the full checker reads: its bytes, or
    the path for a model whose weights are in external files (``onnx.load`` reads those)."""
    if not path.is_file():
        raise NetworkError("no such network file", file=path)
    from cfruntime import gzio

    try:
        raw = gzio.read_bytes(path)
        model = onnx.load_from_string(raw)
        if not gzio.is_gzip(path) and any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
            model, raw = onnx.load(str(path)), str(path)
    except Exception as e:  # protobuf DecodeError, corrupt gzip etc.
        raise NetworkError(f"not a valid ONNX model ({type(e).__name__}: {_oneline(e)})", file=path) from None
    return model, raw


def network_from_model(model: onnx.ModelProto, *, source: str = "<model>", hwc_flatten: bool = False,
                       raw: bytes | str | None = None, keep_output_softmax: bool = False) -> Network:
    """Convert an in-memory ONNX ``ModelProto`` (``raw``: its serialised bytes, when at hand)."""
    return _Loader(model, source, hwc_flatten, raw, keep_output_softmax=keep_output_softmax).run()


def check_model(model: onnx.ModelProto, source: str, raw: bytes | str | None = None):
    """Every check before conversion (:mod:`cfruntime.network.onnx_validation`): opsets, the data
    input, every unsupported op at once, the full checker; returns the data input."""
    if not isinstance(model, onnx.ModelProto) or len(model.graph.node) == 0:
        raise NetworkError("not a valid ONNX model (empty graph)", file=source)
    onnx_validation.check_opsets(model, source)
    inp = onnx_validation.data_input(model, source)
    if len(model.graph.output) != 1:
        raise NetworkError(f"expected exactly one output, found {len(model.graph.output)}", file=source)
    onnx_validation.check_supported(model, source, SUPPORTED_OPS, onnx_folding.foldable)
    onnx_validation.check_full(model.SerializeToString() if raw is None else raw, source)
    return inp


def _oneline(e: Exception) -> str:
    s = " ".join(str(e).split())
    return s[:200]


def _attrs(node) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


class _Loader:
    def __init__(self, model, source, hwc_flatten, raw=None, checked_input: bool = False, keep_output_softmax: bool = False):
        self.model = model
        self.raw = raw
        self.checked = checked_input
        self.keep_output_softmax = keep_output_softmax
        self.output_softmax_dropped = False
        self.opset = onnx_validation.default_opset(model) or onnx.defs.onnx_opset_version()
        self.source = source
        self.hwc_flatten = hwc_flatten
        self.layers: list[Layer] = []
        self.notices: list[str] = []
        self.values: dict[str, object] = {}
        self.materialized: dict[int, tuple[int, object]] = {}
        self.prefixes: dict[tuple, tuple[int, tuple]] = {}

    # -- errors --------------------------------------------------------------------------------
    def err(self, what: str) -> NetworkError:
        return NetworkError(what, file=self.source)

    def unsupported(self, node, detail: str | None = None) -> UnsupportedOpError:
        return UnsupportedOpError(node.op_type, self.node_name(node), file=self.source, detail=detail)

    def node_name(self, node) -> str:
        return _text(node.name or (node.output[0] if node.output else "?"))

    # -- main ----------------------------------------------------------------------------------
    def run(self) -> Network:
        g = self.model.graph
        inp = onnx_validation.data_input(self.model, self.source) if self.checked else \
            check_model(self.model, self.source, self.raw)
        inits = {}
        for t in g.initializer:
            arr = numpy_helper.to_array(t)
            if arr.dtype.kind == "f" and not np.isfinite(arr).all():
                bad = "NaN" if np.isnan(arr).any() else "infinite"
                raise self.err(f"initializer '{t.name}' has {bad} values: no sound bounds through it")
            inits[t.name] = _Const(arr.astype(np.float64) if arr.dtype.kind == "f" else arr)
        shape, lead = self.input_shape(inp)
        self.layers.append(Layer(index=0, kind="input", shape=shape[lead:], name=_text(inp.name)))
        self.values.update(inits)
        self.values[inp.name] = _Lin(0, shape, [], lead)

        out_name = g.output[0].name
        for node in onnx_validation.needed_nodes(g):
            if node.op_type == "Softmax":
                self.softmax(node, out_name)
                continue
            for i in node.input:
                if i and i not in self.values:
                    raise self.err(f"node '{self.node_name(node)}' uses undefined value '{i}'")
            result = self.convert(node)
            if isinstance(result, tuple):  # a node with several outputs (Split)
                self.values.update(zip(node.output, result))
            else:
                self.values[node.output[0]] = result
        if out_name not in self.values:
            raise self.err(f"graph output '{out_name}' is not computed by any node")
        out = self.values[out_name]
        if not isinstance(out, _Lin):
            raise self.err("the graph output does not depend on the input")
        last = self.materialize(out)
        if last != len(self.layers) - 1 or last == 0:
            raise self.err("the graph output is not a layer computed from the input")
        net = Network(self.layers, source=self.source, notices=self.notices, input_name=_text(inp.name))
        net.output_softmax_dropped = self.output_softmax_dropped
        return net

    def input_shape(self, inp) -> tuple[tuple, int]:
        """The data input's ONNX shape for one sample and ``lead`` (1 if its first dimension is the
        batch dimension, see :class:`_Lin`); sets ``self.dynamic_batch``.

        * a symbolic first dimension (a ``dim_param``, 0 or unset) is the batch dimension: the model
          runs on any number of samples, so ops must keep it apart (``dynamic_batch``);
        * a first dimension of 1 followed by more dimensions is a batch of one;
        * anything else (a scalar, a vector ``[n]``, ``[2, 3]``...) has no batch dimension: the model
          is one function of that tensor (VNN-COMP's ``test`` networks), which the analysis sees
          flattened (VNN-LIB's ``X_i`` index the flattened input).

        In the last two cases the graph is evaluated on exactly one input, so ops may reshape across
        the first dimension.  Every other dimension must be static."""
        dims = list(inp.type.tensor_type.shape.dim)
        first_dynamic = bool(dims) and (not dims[0].HasField("dim_value") or dims[0].dim_value <= 0)
        self.dynamic_batch = first_dynamic
        shape = []
        for i, d in enumerate(dims):
            if i == 0 and first_dynamic:
                shape.append(1)
                continue
            if not d.HasField("dim_value") or d.dim_value <= 0:
                raise self.err(f"input '{inp.name}' has a non-static dimension (dimension {i})")
            shape.append(int(d.dim_value))
        lead = 1 if first_dynamic or (len(shape) >= 2 and shape[0] == 1) else 0
        return tuple(shape), lead

    def lead_of(self, shape) -> int:
        """``lead`` of a value of full shape ``shape`` made by a reshaping op: with a symbolic batch
        the batch dimension stays first; otherwise a leading 1 before more dimensions is one."""
        if self.dynamic_batch:
            return 1
        return 1 if len(shape) >= 2 and shape[0] == 1 else 0

    def softmax(self, node, out_name):
        """A Softmax at the output is dropped (bounds on the logits: exact for properties that compare
        outputs, ``softmax(x)_i >= softmax(x)_j`` iff ``x_i >= x_j``), unless ``keep_output_softmax``;
        anywhere else (or kept) it is built from exp and reciprocal layers (:mod:`.onnx_products`)."""
        if node.output[0] != out_name or self.keep_output_softmax:
            ins = [self.values[i] if i else None for i in node.input]
            if not isinstance(ins[0], _Lin):
                self.values[node.output[0]] = self.const_fold(node, ins, _attrs(node))
            else:
                self.values[node.output[0]] = onnx_products.op_Softmax(self, node, ins, _attrs(node))
            return
        self.notices.append(f"Softmax at the output (node '{self.node_name(node)}') dropped: bounds are on the logits")
        self.output_softmax_dropped = True
        self.values[node.output[0]] = self.values[node.input[0]]

    # -- layer creation ----------------------------------------------------------------------
    def add_layer(self, kind, shape, preds, name, **kw) -> int:
        idx = len(self.layers)
        self.layers.append(Layer(index=idx, kind=kind, shape=tuple(int(s) for s in shape), preds=list(preds), name=name, **kw))
        return idx

    def materialize(self, lin: _Lin) -> int:
        """Turn the pending stages of ``lin`` into affine layers; return the layer holding its value.

        Consecutive stages that compose exactly (a Pad kept apart for a convolution that did not
        come) are merged first.  Every prefix of stages is made into layers once: values that share
        pending stages (the outputs of a Split, two Slices of one convolution) share their layers."""
        key = id(lin)
        if key in self.materialized:
            return self.materialized[key][0]
        groups: list[tuple[object, tuple]] = []  # (stage, the original stages it composes)
        for st in lin.stages:
            merged = _compose(groups[-1][0], st) if groups else None
            if merged is not None:
                merged.name = groups[-1][0].name + "," + st.name
                groups[-1] = (merged, groups[-1][1] + (st,))
            else:
                groups.append((st, (st,)))
        cur, done = lin.src, ()
        for st, originals in groups:
            done = done + originals
            prefix = (lin.src, *map(id, done))
            if prefix in self.prefixes:
                cur = self.prefixes[prefix][0]
                continue
            cur = self.stage_layer(st, cur)
            self.prefixes[prefix] = (cur, done)  # holding the stages keeps their ids unique
        self.materialized[key] = (cur, lin)
        return cur

    def stage_layer(self, st, cur: int) -> int:
        """The affine layer of one stage over layer ``cur`` (``cur`` itself for an identity gather)."""
        if isinstance(st, _GStage) and st.is_identity():
            return cur
        name = getattr(st, "name", "")
        if isinstance(st, _GStage):
            return self.add_layer("affine", st.out_shape, [cur], name, linear_kind="gather",
                                  gather=GatherSpec(torch.from_numpy(st.index.astype(np.int64)), torch.from_numpy(st.scale.astype(np.float64)), st.in_size),
                                  bias=torch.from_numpy(st.shift.astype(np.float64)))
        if isinstance(st, _DStage):
            return self.add_layer("affine", st.out_shape, [cur], name, linear_kind="dense",
                                  weight=torch.from_numpy(np.ascontiguousarray(st.W, dtype=np.float64)),
                                  bias=torch.from_numpy(np.ascontiguousarray(st.b, dtype=np.float64)))
        bpc = _per_channel(st.bias, st.out_shape)
        spec = ConvSpec(torch.from_numpy(np.ascontiguousarray(st.kernel, dtype=np.float64)), tuple(st.stride), tuple(st.pads),
                        tuple(st.dilation), tuple(st.in_shape), tuple(st.out_shape),
                        None if bpc is None else torch.from_numpy(bpc))
        return self.add_layer("affine", st.out_shape, [cur], name, linear_kind="conv", conv=spec,
                              bias=torch.from_numpy(np.ascontiguousarray(st.bias, dtype=np.float64)))

    def push(self, lin: _Lin, stage, node, shape: tuple | None = None, lead: int = 1, name: str | None = None) -> _Lin:
        """``lin`` followed by ``stage`` (merged into its last stage when exact).  The result has the
        full ONNX shape ``shape`` (default: a batch of one of the stage's output) and ``lead``.  A zero
        Pad (``pad_info``) is kept apart so that a convolution after it can take it as its padding."""
        stage.name = name or self.node_name(node)
        stages = list(lin.stages)
        merged = None
        if stages and getattr(stage, "pad_info", None) is None:
            merged = _compose(stages[-1], stage)
        if merged is not None:
            merged.name = stages[-1].name + "," + stage.name
            stages[-1] = merged
        else:
            stages.append(stage)
        return _Lin(lin.src, (1, *stage.out_shape) if shape is None else tuple(shape), stages, lead)

    # -- helpers -------------------------------------------------------------------------------
    def const(self, node, name, what="input") -> np.ndarray:
        v = self.values[name]
        if not isinstance(v, _Const):
            raise self.unsupported(node, f"{what} '{name}' must be a constant")
        return v.value

    def elementwise(self, lin: _Lin, node, scale=None, shift=None) -> _Lin:
        """``scale * lin + shift`` for constants broadcasting with ``lin`` (``lin`` is first broadcast
        to the common shape when a constant is larger: ``x[1, 1] + c[3]``)."""
        consts = [np.asarray(c, dtype=np.float64) for c in (scale, shift) if c is not None]
        try:
            full = tuple(np.broadcast_shapes(lin.shape, *[c.shape for c in consts]))
        except ValueError:
            shapes = [tuple(c.shape) for c in consts]
            raise self.unsupported(node, f"constant of shape {shapes[0]} does not broadcast to {lin.shape}") from None
        if full != tuple(lin.shape):
            lin = onnx_linear_ops.broadcast(self, node, lin, full)
        n, shp = lin.size, lin.shape

        def bc(c):
            return np.broadcast_to(np.asarray(c, dtype=np.float64), shp).reshape(-1).copy()

        sc = np.ones(n) if scale is None else bc(scale)
        sh = np.zeros(n) if shift is None else bc(shift)
        return self.push(lin, _GStage(np.arange(n), sc, sh, n, lin.inner), node, lin.shape, lin.lead)

    def reindex(self, lin: _Lin, node, index: np.ndarray, shape: tuple, lead: int = 1) -> _Lin:
        """``lin`` with its elements rearranged: ``index`` (any shape) lists, for each element of the
        result, the flat position it comes from; the result has the full ONNX shape ``shape``."""
        n = index.size
        shape = tuple(int(d) for d in shape)
        stage = _GStage(index.reshape(-1).astype(np.int64), np.ones(n), np.zeros(n), lin.size, shape[lead:])
        return self.push(lin, stage, node, shape, lead)

    # -- op conversion -------------------------------------------------------------------------
    def convert(self, node):
        op = node.op_type
        a = _attrs(node)
        ins = [self.values[i] if i else None for i in node.input]
        lin_in = [v for v in ins if isinstance(v, _Lin)]
        if not lin_in:
            return self.const_fold(node, ins, a)
        if op in ACTIVATION_KINDS:
            return self.op_activation(node, ins, a)
        handler = HANDLERS.get(op)
        if handler is not None:
            return handler(self, node, ins, a)
        return getattr(self, "op_" + op)(node, ins, a)

    def const_fold(self, node, ins, a):
        """A node on constants only: evaluated once (:mod:`cfruntime.network.onnx_folding`)."""
        vals = [None if v is None else v.value for v in ins]
        try:
            outs = onnx_folding.fold_node(node, vals, self.opset)
        except onnx_folding.FoldingError as e:
            raise self.err(f"cannot evaluate constant node '{self.node_name(node)}' ({node.op_type}: {e})") from None
        consts = tuple(_Const(o) for o in outs)
        return consts if len(node.output) > 1 else consts[0]

    def op_Shape(self, node, ins, a):
        """``Shape``/``Size`` of a perturbed value: its static shape (a batch of one)."""
        return _Const(onnx_folding.fold_shape(node, tuple(ins[0].shape), self.opset))

    op_Size = op_Shape

    def op_Cast(self, node, ins, a):
        """Cast of a perturbed value to a floating-point type: the value itself (the analysis is in
        real arithmetic); to any other type it would no longer be a perturbation of the input."""
        to = int(a.get("to", 0))
        if to not in onnx_validation.FLOAT_INPUT_TYPES:
            raise self.unsupported(node, f"cast of the perturbed value to {onnx.TensorProto.DataType.Name(to)}")
        return ins[0]

    def op_Identity(self, node, ins, a):
        return ins[0]

    def op_Dropout(self, node, ins, a):
        return ins[0]  # inference: identity (a mask output stays undefined)

    def nonlinear(self, kind, node, lin: _Lin, alpha: float | None = None) -> _Lin:
        """One elementwise layer of ``kind`` on ``lin`` (its pending stages become affine layers)."""
        src = self.materialize(lin)
        idx = self.add_layer(kind, lin.inner, [src], self.node_name(node), alpha=alpha)
        return _Lin(idx, lin.shape, [], lin.lead)

    def op_activation(self, node, ins, a):
        """Relu, Sigmoid, Tanh, LeakyRelu, Elu, Softplus, Abs: one layer of :data:`ACTIVATION_KINDS`'s
        kind; LeakyRelu and Elu keep their ``alpha`` (ONNX defaults 0.01 and 1.0)."""
        kind = ACTIVATION_KINDS[node.op_type]
        alpha = float(a.get("alpha", DEFAULT_ALPHA[kind])) if kind in DEFAULT_ALPHA else None
        if alpha is not None and not np.isfinite(alpha):
            raise self.unsupported(node, f"alpha {alpha}")
        return self.nonlinear(kind, node, ins[0], alpha)

    def clip_bound(self, node, ins, a, i: int, attr: str) -> float | None:
        """Clip's ``min`` (``i`` 1) or ``max`` (``i`` 2): an input since opset 11, an attribute before;
        None when absent or at least float32's largest magnitude."""
        if len(node.input) > i and node.input[i]:
            v = np.asarray(self.const(node, node.input[i], attr), dtype=np.float64).reshape(-1)
            if v.size != 1:
                raise self.unsupported(node, f"{attr} of {v.size} elements (only a scalar bound)")
            v = float(v[0])
        elif attr in a:
            v = float(a[attr])
        else:
            return None
        if np.isnan(v):
            raise self.unsupported(node, f"{attr} NaN")
        return None if abs(v) >= _NO_BOUND else v

    def op_Clip(self, node, ins, a):
        """``min(max(x, lo), hi)``: ``relu6`` for (0, 6), ``hardtanh`` for (-1, 1), ``relu`` for (0, none);
        any other two bounds an exact rescaling ``affine -> hardtanh -> affine`` (``clip(x, lo, hi) =
        (lo+hi)/2 + (hi-lo)/2 * hardtanh((2x - lo - hi) / (hi - lo))``), one bound ``lo + relu(x - lo)``
        or ``hi - relu(hi - x)``, no bound the identity."""
        lin = ins[0]
        lo, hi = self.clip_bound(node, ins, a, 1, "min"), self.clip_bound(node, ins, a, 2, "max")
        kind = CLIP_KINDS.get((lo, hi))
        if kind is not None:
            return self.nonlinear(kind, node, lin)
        if lo is None and hi is None:
            return lin
        if lo is None:
            neg = self.elementwise(lin, node, scale=-1.0, shift=hi)
            return self.elementwise(self.nonlinear("relu", node, neg), node, scale=-1.0, shift=hi)
        if hi is None:
            return self.elementwise(self.nonlinear("relu", node, self.elementwise(lin, node, shift=-lo)), node, shift=lo)
        if not lo < hi:
            raise self.unsupported(node, f"min {lo:g} not below max {hi:g} (a constant output)")
        half, mid = (hi - lo) / 2.0, (hi + lo) / 2.0
        unit = self.elementwise(lin, node, scale=1.0 / half, shift=-mid / half)
        return self.elementwise(self.nonlinear("hardtanh", node, unit), node, scale=half, shift=mid)

    def op_Add(self, node, ins, a):
        """``x + c``: a gather stage; ``x + y`` of two perturbed values: :func:`.onnx_linear_ops.combine`
        (one dense stage over a common layer, else an ``'add'`` layer: a residual join)."""
        x, y = ins
        if isinstance(x, _Lin) and isinstance(y, _Lin):
            if x is y:
                return self.elementwise(x, node, scale=2.0)
            return onnx_linear_ops.combine(self, node, [(x, 1.0), (y, 1.0)])
        lin, c = (x, y.value) if isinstance(x, _Lin) else (y, x.value)
        return self.elementwise(lin, node, shift=c)

    def op_Sub(self, node, ins, a):
        """``x - c``, ``c - x``: gather stages; ``x - y``: :func:`.onnx_linear_ops.combine` with -1."""
        x, y = ins
        if isinstance(x, _Lin) and isinstance(y, _Lin):
            if x is y:
                return self.elementwise(x, node, scale=0.0)
            return onnx_linear_ops.combine(self, node, [(x, 1.0), (y, -1.0)])
        if isinstance(x, _Lin):
            return self.elementwise(x, node, shift=-np.asarray(y.value, dtype=np.float64))
        return self.elementwise(y, node, scale=-1.0, shift=x.value)

    def op_Mul(self, node, ins, a):
        """``c x``: a gather stage; ``x y`` of two perturbed values: a ``'mul'`` layer
        (:func:`.onnx_products.product`)."""
        x, y = ins
        if isinstance(x, _Lin) and isinstance(y, _Lin):
            return onnx_products.op_Mul_variables(self, node, ins, a)
        lin, c = (x, y.value) if isinstance(x, _Lin) else (y, x.value)
        return self.elementwise(lin, node, scale=c)

    def op_Div(self, node, ins, a):
        """``x / c``: a gather stage; by a perturbed value: :func:`.onnx_products.op_Div_variables`."""
        x, y = ins
        if isinstance(y, _Lin):
            return onnx_products.op_Div_variables(self, node, ins, a)
        c = np.asarray(y.value, dtype=np.float64)
        if np.any(c == 0):
            raise self.err(f"division by zero in node '{self.node_name(node)}'")
        return self.elementwise(x, node, scale=1.0 / c)

    def op_Flatten(self, node, ins, a):
        lin = ins[0]
        rank = len(lin.shape)
        axis = a.get("axis", 1)
        if axis < 0:
            axis += rank
        if self.dynamic_batch and axis != 1:
            raise self.unsupported(node, f"Flatten axis {a.get('axis')} (only axis 1 keeps the batch)")
        if not 0 <= axis <= rank:
            raise self.err(f"Flatten '{self.node_name(node)}': axis {a.get('axis')} on a rank-{rank} tensor")
        shape = (_prod(lin.shape[:axis]), _prod(lin.shape[axis:]))
        if self.hwc_flatten and rank == 4 and axis == 1:
            self.hwc_flatten = False  # first 4-D Flatten only
            index = np.arange(lin.size).reshape(lin.shape[1:]).transpose(1, 2, 0)
            return self.reindex(lin, node, index, shape, self.lead_of(shape))
        return self.reindex(lin, node, np.arange(lin.size), shape, self.lead_of(shape))

    def op_Reshape(self, node, ins, a):
        lin = ins[0]
        if len(ins) > 1:
            shape = np.asarray(self.const(node, node.input[1], "shape")).astype(np.int64).tolist()
        else:
            shape = list(a.get("shape", []))
        allowzero = a.get("allowzero", 0)
        shape = [lin.shape[i] if (d == 0 and not allowzero and i < len(lin.shape)) else d for i, d in enumerate(shape)]
        return self.reshaped(lin, node, shape, f"Reshape to {list(shape)}")

    def reshaped(self, lin: _Lin, node, shape, what: str) -> _Lin:
        """``lin`` read in the new full shape ``shape`` (``-1`` allowed); with a symbolic batch the
        first dimension must stay the batch of one."""
        try:
            new = np.empty(lin.shape, dtype=np.int8).reshape(shape).shape
        except ValueError:
            raise self.unsupported(node, f"cannot reshape {lin.shape} to {list(shape)}") from None
        if self.dynamic_batch and (len(new) < 1 or new[0] != 1):
            raise self.unsupported(node, f"{what} does not keep the batch dimension")
        return self.reindex(lin, node, np.arange(lin.size), new, self.lead_of(new))

    def raw_axes(self, node, a) -> list[int]:
        """The ``axes`` of Squeeze/Unsqueeze as written (an input since opset 13, an attribute before)."""
        if len(node.input) > 1 and node.input[1]:
            return [int(x) for x in np.asarray(self.const(node, node.input[1], "axes")).reshape(-1).tolist()]
        return [int(x) for x in (a.get("axes") or [])]

    def axes_of(self, node, a, rank: int, what: str) -> list[int]:
        """The ``axes`` of Squeeze/Unsqueeze made non-negative for a result/operand of rank ``rank``."""
        axes = self.raw_axes(node, a)
        out = sorted(x + rank if x < 0 else x for x in axes)
        if any(not 0 <= x < rank for x in out) or len(set(out)) != len(out):
            raise self.err(f"{what} '{self.node_name(node)}': bad axes {axes} for rank {rank}")
        return out

    def op_Unsqueeze(self, node, ins, a):
        lin = ins[0]
        axes = self.axes_of(node, a, len(lin.shape) + len(self.raw_axes(node, a)), "Unsqueeze")
        shape, it = [], iter(lin.shape)
        for i in range(len(lin.shape) + len(axes)):
            shape.append(1 if i in axes else next(it))
        return self.reshaped(lin, node, shape, f"Unsqueeze at axes {axes}")

    def op_Squeeze(self, node, ins, a):
        lin = ins[0]
        axes = self.axes_of(node, a, len(lin.shape), "Squeeze")
        if not axes:
            axes = [i for i, d in enumerate(lin.shape) if d == 1 and not (self.dynamic_batch and i == 0)]
        if any(lin.shape[i] != 1 for i in axes):
            raise self.err(f"Squeeze '{self.node_name(node)}': an axis of {axes} has a size other than 1 in {lin.shape}")
        shape = [d for i, d in enumerate(lin.shape) if i not in axes]
        return self.reshaped(lin, node, shape, f"Squeeze of axes {axes}")

    def op_Transpose(self, node, ins, a):
        lin = ins[0]
        perm = list(a.get("perm", list(range(len(lin.shape)))[::-1]))
        if sorted(perm) != list(range(len(lin.shape))):
            raise self.err(f"Transpose '{self.node_name(node)}': perm {perm} for a rank-{len(lin.shape)} tensor")
        if self.dynamic_batch and perm[0] != 0:
            raise self.unsupported(node, f"Transpose perm {perm} moves the batch dimension")
        index = np.arange(lin.size).reshape(lin.shape).transpose(perm)
        return self.reindex(lin, node, index, index.shape, self.lead_of(index.shape))

    def op_Pad(self, node, ins, a):
        """Pad (modes constant, reflect and edge): every element of the result is an element of the
        input or the constant, so it is a gather stage (scale 0 and shift ``value`` where padded),
        exact for any value.  A constant-0 pad of the two spatial dimensions of an NCHW tensor is
        kept apart so that a following Conv or AveragePool takes it as its own zero padding; before a
        MaxPool (whose padding is -inf, not 0) it becomes an affine layer whose padded neurons are
        the constant 0."""
        lin = ins[0]
        rank = len(lin.shape)
        mode = a.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else str(mode)
        if len(node.input) > 1 and node.input[1]:
            pads = np.asarray(self.const(node, node.input[1], "pads")).astype(np.int64).reshape(-1).tolist()
        elif "pads" in a:
            pads = [int(p) for p in a["pads"]]
        else:
            raise self.unsupported(node, "no pads")
        value = float(a.get("value", 0.0))
        if len(node.input) > 2 and node.input[2]:
            v = np.asarray(self.const(node, node.input[2], "constant_value"), dtype=np.float64).reshape(-1)
            if v.size != 1:
                raise self.unsupported(node, f"constant_value of {v.size} elements")
            value = float(v[0])
        if len(node.input) > 3 and node.input[3]:
            axes = np.asarray(self.const(node, node.input[3], "axes")).astype(np.int64).reshape(-1).tolist()
            axes = [x + rank if x < 0 else x for x in axes]
        else:
            axes = list(range(rank))
        if len(pads) != 2 * len(axes) or any(not 0 <= x < rank for x in axes):
            raise self.err(f"Pad '{self.node_name(node)}': {len(pads)} pads for axes {axes} of a rank-{rank} tensor")
        if mode not in ("constant", "reflect", "edge"):
            raise self.unsupported(node, f"mode '{mode}' (constant, reflect and edge are supported)")
        if not np.isfinite(value):
            raise self.unsupported(node, f"constant value {value}")
        before, after = [0] * rank, [0] * rank
        for i, x in enumerate(axes):
            before[x], after[x] = int(pads[i]), int(pads[i + len(axes)])
        if any(p < 0 for p in before + after):
            raise self.unsupported(node, f"negative pads {pads} (cropping)")
        if lin.lead == 1 and (before[0] or after[0]):
            raise self.unsupported(node, "pads on the batch dimension")
        if mode == "reflect" and any((b or e) and max(b, e) >= d for b, e, d in zip(before, after, lin.shape)):
            raise self.unsupported(node, f"reflect pads {pads} as large as the padded dimension of {lin.shape}")
        index = np.arange(lin.size).reshape(lin.shape)
        width = list(zip(before, after))
        if mode == "constant":
            index = np.pad(index, width, mode="constant", constant_values=-1)
        else:
            index = np.pad(index, width, mode=mode)  # numpy's reflect/edge are ONNX's
        flat = index.reshape(-1)
        fill = flat < 0
        shape = tuple(int(d) for d in index.shape)
        stage = _GStage(np.where(fill, 0, flat).astype(np.int64), np.where(fill, 0.0, 1.0), np.where(fill, value, 0.0),
                        lin.size, shape[lin.lead:])
        spatial = rank == 4 and lin.lead == 1 and not any(before[:2] + after[:2])
        if mode == "constant" and value == 0.0 and spatial and any(before + after):
            stage.pad_info = (tuple(lin.shape[1:]), (before[2], before[3], after[2], after[3]))
        return self.push(lin, stage, node, shape, lin.lead)

    def fold_zero_pad(self, lin: _Lin, pads: tuple) -> tuple[_Lin, tuple, str | None]:
        """If ``lin`` ends in a spatial constant-0 Pad (:meth:`op_Pad`), the value before it, ``pads``
        (a convolution's own ``(top, left, bottom, right)``) plus the Pad's, and the Pad's name: a
        convolution of the padded tensor is the convolution of the tensor with that zero padding."""
        st = lin.stages[-1] if lin.stages else None
        info = getattr(st, "pad_info", None)
        if info is None:
            return lin, pads, None
        in_shape, extra = info
        base = _Lin(lin.src, (1, *in_shape), lin.stages[:-1], 1)
        return base, tuple(int(p + q) for p, q in zip(pads, extra)), st.name

    def op_BatchNormalization(self, node, ins, a):
        lin = ins[0]
        if a.get("training_mode", 0):
            raise self.unsupported(node, "training_mode=1")
        gamma, beta, mean, var = (np.asarray(self.const(node, n), dtype=np.float64).reshape(-1) for n in node.input[1:5])
        eps = a.get("epsilon", 1e-5)
        if len(lin.shape) < 2 or gamma.shape[0] != lin.shape[1]:
            raise self.unsupported(node, f"BatchNormalization with {gamma.shape[0]} channels on shape {lin.shape}")
        s = gamma / np.sqrt(var + eps)
        t = beta - mean * s
        cshape = (1, -1) + (1,) * (len(lin.shape) - 2)
        return self.elementwise(lin, node, scale=s.reshape(cshape), shift=t.reshape(cshape))

    def op_Gemm(self, node, ins, a):
        A, B = ins[0], ins[1]
        C = ins[2] if len(ins) > 2 else None
        alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
        if not isinstance(A, _Lin) or isinstance(B, _Lin):
            raise self.unsupported(node, "the data input must be operand A, the weight operand B")
        if a.get("transA", 0):
            raise self.unsupported(node, "transA=1 on the data input")
        if len(A.shape) != 2:
            raise self.unsupported(node, f"Gemm data input of rank {len(A.shape)}")
        Bm = np.asarray(B.value, dtype=np.float64)
        if a.get("transB", 0):
            Bm = Bm.T
        if Bm.ndim != 2 or Bm.shape[0] != A.shape[1]:
            raise self.err(f"Gemm '{self.node_name(node)}': weight of shape {B.value.shape} does not fit input {A.shape}")
        rows, n_out = A.shape[0], Bm.shape[1]
        W = alpha * Bm.T
        b = np.zeros((rows, n_out))
        if C is not None:
            if isinstance(C, _Lin):
                raise self.unsupported(node, "data-dependent C operand")
            try:
                b = beta * np.broadcast_to(np.asarray(C.value, dtype=np.float64), (rows, n_out))
            except ValueError:
                raise self.err(f"Gemm '{self.node_name(node)}': bias of shape {C.value.shape} does not fit {n_out} outputs") from None
        return self.rowwise(A, node, W, b, (rows, n_out))

    def rowwise(self, x: _Lin, node, W: np.ndarray, b: np.ndarray, shape: tuple) -> _Lin:
        """``y[r] = W x[r] + b[r]`` for every row ``r`` of ``x`` (all dimensions but the last), full
        result shape ``shape``: one dense stage (block diagonal when there are several rows, which
        only a model without a batch dimension can have)."""
        rows = _prod(shape[:-1])
        b = np.asarray(b, dtype=np.float64).reshape(-1)
        if rows > 1:
            if rows * W.shape[0] * rows * W.shape[1] > 1 << 26:
                raise self.unsupported(node, f"a product over {rows} rows of shape {x.shape} (too large to unroll)")
            W = np.kron(np.eye(rows), W)
        lead = x.lead if len(shape) == len(x.shape) else self.lead_of(shape)
        return self.push(x, _DStage(W, b.copy(), tuple(shape[lead:])), node, shape, lead)

    def op_MatMul(self, node, ins, a):
        """``x @ W`` with a 2-D constant ``W``: one dense stage (block diagonal over several rows);
        ``W @ x`` with a vector ``x``: one dense stage (VNN-COMP ``test`` nets); any other product with a
        constant operand: the dense map of its basis (:func:`.onnx_linear_ops.matmul_constant`); two
        perturbed operands: :func:`.onnx_products.op_MatMul_variables`."""
        x, w = ins
        if isinstance(x, _Lin) and isinstance(w, _Lin):
            return onnx_products.op_MatMul_variables(self, node, ins, a)
        if isinstance(w, _Lin) and len(w.shape) == 1 and np.ndim(x.value) == 2 and np.shape(x.value)[1] == w.shape[0]:
            # constant @ vector (VNN-COMP `test` nets: W @ X_0 with X_0 of shape [n]): W x = x W^T
            Wm = np.asarray(x.value, dtype=np.float64)
            return self.rowwise(w, node, Wm.copy(), np.zeros(Wm.shape[0]), (Wm.shape[0],))
        if isinstance(x, _Lin) and len(x.shape) >= 1 and np.ndim(w.value) == 2 and np.shape(w.value)[0] == x.shape[-1]:
            Wm = np.asarray(w.value, dtype=np.float64)
            shape = tuple(x.shape[:-1]) + (Wm.shape[1],)
            return self.rowwise(x, node, Wm.T.copy(), np.zeros(_prod(shape)), shape)
        return onnx_linear_ops.matmul_constant(self, node, x, w)

    # -- spatial ops -----------------------------------------------------------------------------
    def spatial_params(self, node, a, in_hw, kernel):
        stride = tuple(a.get("strides", [1, 1]))
        dil = tuple(a.get("dilations", [1, 1]))
        pads = list(a.get("pads", [0, 0, 0, 0]))
        if len(kernel) != 2 or len(stride) != 2 or len(dil) != 2 or len(pads) != 4:
            raise self.unsupported(node, "only 2-D spatial ops are supported")
        auto_pad = a.get("auto_pad", b"NOTSET")
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
        ceil_mode = a.get("ceil_mode", 0)
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            pads = [0, 0, 0, 0]
            for d in range(2):
                out = -(-in_hw[d] // stride[d])
                total = max((out - 1) * stride[d] + (kernel[d] - 1) * dil[d] + 1 - in_hw[d], 0)
                small, big = total // 2, total - total // 2
                pads[d], pads[d + 2] = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
        elif auto_pad == "VALID":
            pads = [0, 0, 0, 0]
        elif auto_pad != "NOTSET":
            raise self.unsupported(node, f"auto_pad {auto_pad}")
        out_hw = []
        for d in range(2):
            span = in_hw[d] + pads[d] + pads[d + 2] - ((kernel[d] - 1) * dil[d] + 1)
            if span < 0:
                raise self.err(f"node '{self.node_name(node)}': kernel larger than the padded input")
            o = (-(-span // stride[d]) if ceil_mode else span // stride[d]) + 1
            if ceil_mode and (o - 1) * stride[d] >= in_hw[d] + pads[d]:
                o -= 1  # last window must start inside the input or left padding
            out_hw.append(o)
        return stride, dil, tuple(int(p) for p in pads), tuple(out_hw)

    def op_Conv(self, node, ins, a):
        x = ins[0]
        if not isinstance(x, _Lin) or any(isinstance(v, _Lin) for v in ins[1:]):
            raise self.unsupported(node, "data-dependent weights")
        K = np.asarray(self.const(node, node.input[1], "weight"), dtype=np.float64)
        if len(x.shape) == 3 and x.shape[0] == 1 and K.ndim == 3:
            # a 1-D convolution is the 2-D one of a height-1 image; [1, C, L] and [1, C, 1, L] (and the
            # outputs [1, O, L'] and [1, O, 1, L']) have the same flat order
            one = lambda v, pad=0: [pad, *v] if v is not None else None  # noqa: E731
            pads = a.get("pads")
            a2 = {**a, "kernel_shape": one(a.get("kernel_shape"), 1), "strides": one(a.get("strides"), 1),
                  "dilations": one(a.get("dilations"), 1),
                  "pads": None if pads is None else [0, pads[0], 0, pads[1]]}
            y = self.conv2d(node, self.reshaped(x, node, (1, x.shape[1], 1, x.shape[2]), "Conv (1-D)"), ins, K[:, :, None, :],
                            {k: v for k, v in a2.items() if v is not None})
            return self.reshaped(y, node, (1, y.shape[1], y.shape[3]), "Conv (1-D)")
        if len(x.shape) != 4 or x.shape[0] != 1:
            raise self.unsupported(node, f"Conv on a tensor of shape {list(x.shape)} (only 1-D and 2-D convolutions of one sample)")
        return self.conv2d(node, x, ins, K, a)

    def conv2d(self, node, x, ins, K, a):
        """The layer of a 2-D convolution of ``x`` ([1, C, H, W]) by the constant kernel ``K`` ([O, C, kh, kw])."""
        if a.get("group", 1) != 1:
            raise self.unsupported(node, f"group={a.get('group')} (grouped convolutions are not supported)")
        C, H, W = x.shape[1:]
        if K.ndim != 4 or K.shape[1] != C:
            raise self.err(f"Conv '{self.node_name(node)}': kernel of shape {K.shape} does not fit input {x.shape}")
        kernel = tuple(a.get("kernel_shape", K.shape[2:]))
        if tuple(kernel) != tuple(K.shape[2:]):
            raise self.err(f"Conv '{self.node_name(node)}': kernel_shape {kernel} differs from the weight shape {K.shape}")
        stride, dil, pads, (oh, ow) = self.spatial_params(node, {**a, "ceil_mode": 0}, (H, W), kernel)
        O = K.shape[0]
        bias = np.zeros(O)
        if len(ins) > 2 and ins[2] is not None:
            bias = np.asarray(self.const(node, node.input[2], "bias"), dtype=np.float64).reshape(-1)
        if (oh, ow) == (1, 1) and not any(pads) and tuple(kernel) == (H, W):
            # a "convolution" whose kernel covers the whole input is a fully-connected layer
            # (MATLAB exports, e.g. the mnist_nln_* nets): keep it dense so it merges like a Gemm
            return self.push(x, _DStage(K.reshape(O, C * H * W).copy(), bias.copy(), (O, 1, 1)), node)
        bias_full = np.repeat(bias, oh * ow)
        x, pads, pad_name = self.fold_zero_pad(x, pads)
        name = f"{pad_name},{self.node_name(node)}" if pad_name else None
        return self.push(x, _CStage(K, bias_full, stride, pads, dil, tuple(x.shape[1:]), (O, oh, ow)), node, name=name)

    def windows(self, node, a, lin: _Lin, kernel):
        """For each output position: input flat indices (-1 = padding) and whether each is inside the padded extent."""
        if len(lin.shape) != 4 or lin.shape[0] != 1:
            raise self.unsupported(node, f"pooling on a tensor of shape {list(lin.shape)} (only 2-D pooling of one sample)")
        C, H, W = lin.shape[1:]
        stride, dil, pads, (oh, ow) = self.spatial_params(node, a, (H, W), kernel)
        kh, kw = kernel
        hs = np.arange(oh)[:, None] * stride[0] - pads[0] + np.arange(kh)[None, :] * dil[0]  # [oh, kh]
        ws = np.arange(ow)[:, None] * stride[1] - pads[1] + np.arange(kw)[None, :] * dil[1]
        hv = (hs >= 0) & (hs < H)
        wv = (ws >= 0) & (ws < W)
        hpad = (hs >= -pads[0]) & (hs < H + pads[2])
        wpad = (ws >= -pads[1]) & (ws < W + pads[3])
        c = np.arange(C)[:, None, None, None, None]
        hh = hs[None, :, None, :, None]
        ww = ws[None, None, :, None, :]
        idx = c * H * W + hh * W + ww  # [C, oh, ow, kh, kw]
        valid = np.broadcast_to(hv[None, :, None, :, None] & wv[None, None, :, None, :], idx.shape)
        inpad = np.broadcast_to(hpad[None, :, None, :, None] & wpad[None, None, :, None, :], idx.shape)
        idx = np.where(valid, idx, -1).reshape(C * oh * ow, kh * kw)
        return idx, valid.reshape(C * oh * ow, kh * kw), inpad.reshape(C * oh * ow, kh * kw), stride, dil, pads, (C, oh, ow)

    def op_MaxPool(self, node, ins, a):
        lin = ins[0]
        if len(node.output) > 1 and node.output[1]:
            raise self.unsupported(node, "the Indices output")
        kernel = tuple(a["kernel_shape"])
        idx, valid, _, stride, dil, pads, out_shape = self.windows(node, a, lin, kernel)
        if not np.all(valid.any(axis=1)):
            raise self.err(f"MaxPool '{self.node_name(node)}': a window lies entirely in the padding")
        src = self.materialize(lin)
        spec = MaxPoolSpec(kernel, stride, pads, dil, tuple(lin.shape[1:]), out_shape, torch.from_numpy(idx.astype(np.int64)))
        li = self.add_layer("maxpool", out_shape, [src], self.node_name(node), maxpool=spec)
        return _Lin(li, (1, *out_shape), [])

    def op_AveragePool(self, node, ins, a, kernel=None):
        lin = ins[0]
        kernel = tuple(kernel or a["kernel_shape"])
        idx, valid, inpad, stride, dil, pads, out_shape = self.windows(node, a, lin, kernel)
        count = (inpad if a.get("count_include_pad", 0) else valid).sum(axis=1)
        if np.any(count == 0):
            raise self.err(f"AveragePool '{self.node_name(node)}': empty window")
        C = lin.shape[1]
        kk = kernel[0] * kernel[1]
        if np.all(count == kk):  # uniform divisor: a convolution with a channel-diagonal kernel
            K = np.zeros((C, C, *kernel))
            K[np.arange(C), np.arange(C)] = 1.0 / kk
            # a zero Pad before it: the padded zeros count in every window (divisor kk), as conv padding
            lin, pads, pad_name = self.fold_zero_pad(lin, pads)
            name = f"{pad_name},{self.node_name(node)}" if pad_name else None
            stage = _CStage(K, np.zeros(_prod(out_shape)), stride, pads, dil, tuple(lin.shape[1:]), out_shape, from_pool=True)
            return self.push(lin, stage, node, name=name)
        n_out = idx.shape[0]
        Wd = np.zeros((n_out, lin.size))
        rows = np.repeat(np.arange(n_out), idx.shape[1])
        flat = idx.reshape(-1)
        ok = flat >= 0
        np.add.at(Wd, (rows[ok], flat[ok]), (1.0 / np.repeat(count, idx.shape[1]))[ok])
        return self.push(lin, _DStage(Wd, np.zeros(n_out), out_shape), node)

    def op_GlobalAveragePool(self, node, ins, a):
        lin = ins[0]
        if len(lin.shape) != 4 or lin.shape[0] != 1:
            raise self.unsupported(node, f"on a tensor of shape {list(lin.shape)}")
        return self.op_AveragePool(node, ins, {}, kernel=lin.shape[2:])

    # -- selections and joins --------------------------------------------------------------------
    def slice_params(self, node, a, rank: int) -> list[tuple[int, int, int, int]]:
        """``(start, end, axis, step)`` per sliced axis of a Slice on a rank-``rank`` tensor (axes made
        non-negative): ``starts``, ``ends``, ``axes``, ``steps`` are constant inputs since opset 10,
        attributes before."""
        if len(node.input) > 1:
            get = lambda i, what: (np.asarray(self.const(node, node.input[i], what)).astype(np.int64).reshape(-1).tolist()  # noqa: E731
                                   if len(node.input) > i and node.input[i] else None)
            starts, ends, axes, steps = get(1, "starts"), get(2, "ends"), get(3, "axes"), get(4, "steps")
        else:
            starts, ends, axes, steps = list(a.get("starts", [])), list(a.get("ends", [])), a.get("axes"), None
        axes = list(range(len(starts))) if axes is None else [int(x) + rank if x < 0 else int(x) for x in axes]
        steps = [1] * len(starts) if steps is None else steps
        if not len(starts) == len(ends) == len(axes) == len(steps) or any(not 0 <= x < rank for x in axes) \
                or len(set(axes)) != len(axes):
            raise self.err(f"Slice '{self.node_name(node)}': starts {starts}, ends {ends}, axes {axes}, steps {steps} "
                           f"for a rank-{rank} tensor")
        if 0 in steps:
            raise self.err(f"Slice '{self.node_name(node)}': step 0")
        return [(int(s), int(e), int(x), int(st)) for s, e, x, st in zip(starts, ends, axes, steps)]

    def slice_index(self, node, a, shape: tuple) -> np.ndarray:
        """The flat positions (shaped like the result) that Slice selects from a tensor of ``shape``."""
        index = np.arange(_prod(shape)).reshape(shape)
        for start, end, axis, step in self.slice_params(node, a, len(shape)):
            index = np.take(index, _slice_positions(shape[axis], start, end, step), axis=axis)
        if index.size == 0:
            raise self.err(f"Slice '{self.node_name(node)}': the slice of {list(shape)} is empty")
        return index

    def split_indices(self, node, a, shape: tuple) -> list[np.ndarray]:
        """The flat positions (shaped like each output) of every output of Split on ``shape``: the
        ``split`` sizes (an input since opset 13, an attribute before) or equal parts (the last one
        smaller when the size does not divide, opset 18's ``num_outputs``)."""
        rank, name = len(shape), self.node_name(node)
        axis = int(a.get("axis", 0))
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank:
            raise self.err(f"Split '{name}': axis {a.get('axis')} of a rank-{rank} tensor")
        dim, parts = shape[axis], len(node.output)
        if len(node.input) > 1 and node.input[1]:
            sizes = np.asarray(self.const(node, node.input[1], "split")).astype(np.int64).reshape(-1).tolist()
        elif "split" in a:
            sizes = [int(x) for x in a["split"]]
        else:
            chunk = -(-dim // parts)
            sizes = [min(chunk, max(dim - i * chunk, 0)) for i in range(parts)]
        if len(sizes) != parts or sum(sizes) != dim or any(x <= 0 for x in sizes):
            raise self.err(f"Split '{name}': sizes {sizes} for {parts} outputs of a dimension of {dim}")
        index = np.arange(_prod(shape)).reshape(shape)
        bounds = np.cumsum([0] + sizes)
        return [np.take(index, np.arange(bounds[i], bounds[i + 1]), axis=axis) for i in range(parts)]

    def check_batch_kept(self, node, lin: _Lin, shape: tuple, what: str) -> None:
        """A selection must keep the batch dimension of one sample (``lead`` 1) whole."""
        if lin.lead == 1 and (len(shape) < 1 or shape[0] != 1):
            raise self.unsupported(node, f"{what} on the batch dimension")

    def op_Slice(self, node, ins, a):
        """Slice with constant starts/ends/axes/steps selects neurons: a gather stage.  With a
        symbolic batch the batch dimension may only be sliced whole (``0:INT_MAX``, as exporters write)."""
        lin = ins[0]
        if self.dynamic_batch and not self.slices_batch_whole(node, a, len(lin.shape)):
            raise self.unsupported(node, "Slice on the batch dimension")
        index = self.slice_index(node, a, lin.shape)
        self.check_batch_kept(node, lin, index.shape, "Slice")
        return self.reindex(lin, node, index, index.shape, lin.lead)

    def slices_batch_whole(self, node, a, rank: int) -> bool:
        """Whether a Slice leaves dimension 0 alone or takes all of it (start 0, step 1, end at least
        2^31 - 1: any batch size)."""
        return all(s == 0 and e >= 2**31 - 1 and st == 1 for s, e, ax, st in self.slice_params(node, a, rank) if ax == 0)

    def op_Split(self, node, ins, a):
        """Split into constant sizes selects neurons: one gather stage per output."""
        lin = ins[0]
        axis = int(a.get("axis", 0))
        if lin.lead == 1 and axis in (0, -len(lin.shape)):
            raise self.unsupported(node, "Split on the batch dimension")
        out = []
        for index in self.split_indices(node, a, lin.shape):
            self.check_batch_kept(node, lin, index.shape, "Split")
            out.append(self.reindex(lin, node, index, index.shape, lin.lead))
        return tuple(out)

    def op_Concat(self, node, ins, a):
        """Concat of values computed from the input (and constants) along any axis but the batch one.

        Each operand is a pending map of one layer: its source layer with its single pending
        stage, or, when more stages are pending, the layer they materialise into.  Operands over the
        same layer join into one stage over it (gather when every operand's map is a gather, else
        dense), constants become fixed neurons (scale 0, shift the value).  Over one layer the result
        is that pending stage: an affine layer, so every certifier's Affine rule handles it.  Over
        several layers (branches after nonlinear layers) each layer's part becomes an affine layer
        of the full output size (zero rows where the other layers' parts go) and ``add`` layers sum
        them: exact, and it needs the certifier's ``Neuron_add`` rule."""
        axis = int(a["axis"])
        shapes = [tuple(v.shape) if isinstance(v, _Lin) else tuple(np.shape(v.value)) for v in ins]
        lins = [v for v in ins if isinstance(v, _Lin)]
        rank, lead = len(shapes[0]), lins[0].lead
        axis = axis + rank if axis < 0 else axis
        if any(len(sh) != rank for sh in shapes) or not 0 <= axis < rank or any(
                sh[:axis] + sh[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:] for sh in shapes):
            raise self.err(f"Concat '{self.node_name(node)}': operands of shapes {shapes} along axis {a['axis']}")
        if any(v.lead != lead for v in lins) or (lead == 1 and axis == 0):
            raise self.unsupported(node, "Concat along the batch dimension")
        # which operand and which of its (flat) elements every output element is
        ends = np.cumsum([_prod(sh) for sh in shapes])
        tokens = np.concatenate([np.arange(e - _prod(sh), e).reshape(sh) for sh, e in zip(shapes, ends)], axis=axis)
        channels = lead == 1 and axis == 1 and rank == 4 and len(lins) == len(ins)  # NCHW channels, no constants
        return self.join(node, ins, tokens, lead, channels)

    def join(self, node, ins: list, tokens: np.ndarray, lead: int, channels: bool = False):
        """The value whose element at each position of ``tokens`` (an array of the result's full shape)
        is element ``tokens[pos]`` of the operands' flat elements laid end to end (operand 0's first).
        Operands (``_Lin`` or ``_Const``) over the same layer join into one stage over it, several
        layers are summed by ``add`` layers (see :meth:`op_Concat`); a result of constants only is a
        constant.  Concat and every selection op (:mod:`cfruntime.network.onnx_selection`) end here."""
        sizes = [v.size if isinstance(v, _Lin) else int(np.asarray(v.value).size) for v in ins]
        ends = np.cumsum(sizes)
        out_shape = tuple(int(d) for d in tokens.shape)
        tokens = tokens.reshape(-1).astype(np.int64)
        if tokens.size and (tokens.min() < 0 or tokens.max() >= ends[-1]):
            raise self.err(f"node '{self.node_name(node)}': an element outside its operands")
        part = np.searchsorted(ends, tokens, side="right")
        local = tokens - (ends - np.asarray(sizes))[part]
        consts = np.concatenate([np.zeros(n) if isinstance(v, _Lin) else np.asarray(v.value, np.float64).reshape(-1)
                                 for v, n in zip(ins, sizes)])[tokens]
        used = set(np.unique(part).tolist())
        if not any(isinstance(v, _Lin) and i in used for i, v in enumerate(ins)):
            return _Const(consts.reshape(out_shape))
        # every operand from the input as (layer, pending stage over it)
        maps: dict[int, tuple[int, object]] = {}
        for i, v in enumerate(ins):
            if isinstance(v, _Lin) and i in used:
                if len(v.stages) == 1:
                    maps[i] = (v.src, v.stages[0])
                else:
                    src = v.src if not v.stages else self.materialize(v)
                    n = self.layers[src].size
                    maps[i] = (src, _GStage(np.arange(n), np.ones(n), np.zeros(n), n, tuple(self.layers[src].shape)))
        sources = list(dict.fromkeys(src for src, _ in maps.values()))
        inner = out_shape[lead:]
        joined = [self.concat_stage(node, [(i, st) for i, (src, st) in maps.items() if src == s], part, local,
                                    consts if k == 0 else np.zeros_like(consts), inner, channels)
                  for k, s in enumerate(sources)]
        if len(sources) == 1:
            return self.push(_Lin(sources[0], out_shape, [], lead), joined[0], node, out_shape, lead)
        name = self.node_name(node)
        layers = [self.materialize(self.push(_Lin(s, out_shape, [], lead), st, node, out_shape, lead)) for s, st in zip(sources, joined)]
        acc = layers[0]
        for other in layers[1:]:
            acc = self.add_layer("add", inner, [acc, other], name)
        return _Lin(acc, out_shape, [], lead)

    def concat_stage(self, node, maps: list, part: np.ndarray, local: np.ndarray, consts: np.ndarray, inner: tuple,
                     channels: bool = False):
        """One stage over a layer giving the output elements of the operands ``maps`` (operand
        number, stage over the layer), ``consts`` at the others' (0 where another layer's go):
        a gather if every operand's is one, a convolution for convolutions joined along the channels
        (``channels``) that fit one window (:func:`_joined_conv`), else dense."""
        n = part.shape[0]
        in_size = maps[0][1].in_size
        if all(isinstance(st, _GStage) for _, st in maps):
            index, scale, shift = np.zeros(n, np.int64), np.zeros(n), consts.copy()
            for i, st in maps:
                rows = part == i
                index[rows], scale[rows], shift[rows] = _gather_rows(st, local[rows])
            return _GStage(index, scale, shift, in_size, inner)
        if channels and len({i for i, _ in maps}) == len(maps) and all(isinstance(st, _CStage) for _, st in maps):
            order = [i for i in dict.fromkeys(part.tolist())]  # operands in the output's channel order
            stages = dict(maps)
            if sorted(order) == sorted(stages):
                conv = _joined_conv([stages[i] for i in order])
                if conv is not None:
                    bias = np.concatenate([stages[i].bias for i in order])
                    return _CStage(conv[0], bias, *conv[1:], from_pool=all(st.from_pool for st in stages.values()))
        if n * in_size > 1 << 26:
            raise self.unsupported(node, f"a Concat of {n} neurons over a layer of {in_size} (too large to unroll)")
        W, b = np.zeros((n, in_size)), consts.copy()
        for i, st in maps:
            rows = part == i
            W[rows], b[rows] = _dense_rows(st, local[rows])
        return _DStage(W, b, inner)
