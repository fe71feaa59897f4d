"""An ``nn.Module`` as a :class:`~cfruntime.network.graph.Network` whose tensors are its parameters.

::

    plan = trace_module(model, example_input)   # once: the layer structure
    net = plan.network()                         # every step: layers made of model's current tensors

The network's weights, kernels, scales and biases are *expressions of the module's parameters and
buffers* (read by reference when :meth:`ModulePlan.network` runs, cast to its dtype, folded), so the
compiled engine's bounds on it carry gradients back to ``model.parameters()`` and a training loop's
optimizer sees them.  :meth:`ModulePlan.network` is cheap (a few tensor operations per layer), so a
training loop builds it again every step; :meth:`ModulePlan.version` tells when nothing changed.

Algorithm: the module is traced by ``torch.fx.symbolic_trace`` and its tensor shapes propagated on
the example input (``ShapeProp``).  The nodes are walked in order, as the ONNX loader walks an ONNX
graph (:mod:`cfruntime.network.onnx_loader`), and give the same layers as the module's ONNX export
does: every value is either a constant (a lazy expression of parameters and buffers) or a *pending
linear value* -- the output of one layer followed by linear stages, each an elementwise scaling
``s x + t`` (normalisation, BatchNorm, ``x * c``...), a dense map ``W x + b`` (``Linear``) or a
convolution (``Conv2d``, average pooling).  A new stage is merged into the previous one where the
loader merges them (diagonal into anything; dense after dense or after an average pooling;
a per-channel scaling into a convolution after it, or before it when it has no padding); a
nonlinearity (activations, max pooling, a residual ``+`` of two data values) turns the pending stages
into ``affine`` layers, one per stage.  Reshapes (``view``, ``flatten``...) keep the element order
and make no stage.  A node without a data operand is a constant: its expression is the node itself,
evaluated on constants when the network is built.

Supported: ``Linear``; ``Conv2d`` (groups 1, zero padding); ``BatchNorm1d/2d`` (eval mode);
``ReLU``, ``Sigmoid``, ``Tanh``, ``LeakyReLU``, ``ELU``, ``Softplus`` (beta 1), ``Hardtanh``,
``ReLU6`` (also as functions and tensor methods); ``AvgPool2d``, ``AdaptiveAvgPool2d`` (an output
size dividing the input), ``MaxPool2d`` (no ceil mode); ``Flatten``/``view``/``reshape``/``flatten``
keeping the batch dimension; ``+``/``-``/``*``/``/`` by constants; ``+`` of two data values (a
residual join); ``Identity``, ``Dropout`` (eval mode), a final ``Softmax`` (dropped with a notice).
Anything else is an :class:`UnsupportedModuleError` naming the node.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from cfruntime.errors import NetworkError
from cfruntime.network.graph import ConvSpec, GatherSpec, Layer, MaxPoolSpec, Network, _prod
from cfruntime.network.module_stages import DTYPE, MEMO, Conv, Dense, Diag, Lazy, cast, compose, flat, lazy


class UnsupportedModuleError(NetworkError):
    """A module, function or method the import does not support (``error: <model>: unsupported ...``)."""

    def __init__(self, what: str, node: str, *, model: str, detail: str | None = None):
        self.op, self.node = what, node
        super().__init__(f"unsupported {what} at node '{node}'" + (f" ({detail})" if detail else ""), file=model)


# ---------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------
@dataclass(eq=False)
class _Const:
    value: Lazy


class _Static:
    """A value derived from shapes only (``x.size(0)``, ``x.shape[1] * 2``): the arguments of a
    reshape, whose result's shape is read from the trace instead."""


_STATIC = _Static()


@dataclass(eq=False)
class _Data:
    """A pending linear value: layer ``src`` followed by ``stages``; ``shape`` without the batch."""

    src: int
    shape: tuple
    stages: list = field(default_factory=list)


@dataclass
class _Recipe:
    """How one layer is made from the module's current tensors: ``make(memo) -> Layer`` keywords."""

    kind: str
    shape: tuple
    preds: list
    name: str
    make: object = None  # callable(memo) -> dict, or None (no tensors)


_ACTIVATION_FUNCTIONS = {F.relu: "relu", torch.relu: "relu", torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid",
                         torch.tanh: "tanh", F.tanh: "tanh", F.relu6: "relu6", F.leaky_relu: "leakyrelu",
                         F.elu: "elu", F.softplus: "softplus", F.hardtanh: "hardtanh", torch.abs: "abs"}
_ACTIVATION_METHODS = {"relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "abs": "abs"}
_ACTIVATION_MODULES = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.ReLU6: "relu6",
                       nn.LeakyReLU: "leakyrelu", nn.ELU: "elu", nn.Softplus: "softplus", nn.Hardtanh: "hardtanh"}
_RESHAPES = {"view", "reshape", "flatten", "contiguous", "squeeze", "unsqueeze"}
_ARITHMETIC = {operator.add: "add", torch.add: "add", operator.sub: "sub", torch.sub: "sub", operator.mul: "mul",
               torch.mul: "mul", operator.truediv: "div", torch.div: "div", operator.neg: "neg", torch.neg: "neg"}
_ARITHMETIC_METHODS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "neg": "neg"}


class _Importer:
    def __init__(self, model: nn.Module, gm, model_name: str):
        self.model, self.gm, self.model_name = model, gm, model_name
        self.recipes: list[_Recipe] = []
        self.notices: list[str] = []
        self.values: dict = {}
        self.prefixes: dict = {}
        self.sources: list = []  # (module, attribute) read by the network

    # -- errors --------------------------------------------------------------------------------
    def unsupported(self, node, detail: str | None = None, what: str | None = None):
        return UnsupportedModuleError(what or _describe(self.gm, node), node.name, model=self.model_name, detail=detail)

    # -- tensors ---------------------------------------------------------------------------------
    def attr(self, module: nn.Module, name: str) -> Lazy | None:
        """``module.<name>`` (a parameter or buffer) read when the network is built, in its dtype."""
        if getattr(module, name, None) is None:
            return None
        self.sources.append((module, name))
        return lazy(lambda memo: cast(getattr(module, name), memo[DTYPE]), MEMO)

    # -- layers ----------------------------------------------------------------------------------
    def add(self, kind, shape, preds, name, make=None) -> int:
        self.recipes.append(_Recipe(kind, tuple(int(s) for s in shape), list(preds), name, make))
        return len(self.recipes)  # layer 0 is the input

    def materialize(self, v: _Data) -> int:
        """The pending stages of ``v`` as affine layers (one per stage; shared by values that share
        a prefix of stages); returns the layer holding ``v``."""
        cur, done = v.src, ()
        for st in v.stages:
            done = done + (st,)
            key = (v.src, *map(id, done))
            if key not in self.prefixes:
                self.prefixes[key] = (self.stage_layer(st, cur), done)  # the tuple keeps the ids alive
            cur = self.prefixes[key][0]
        return cur

    def stage_layer(self, st, cur: int) -> int:
        if isinstance(st, Diag):
            n = st.in_size
            scale, shift = st.scale, st.shift

            def make(memo, n=n):
                s = scale(memo) if scale is not None else torch.ones(n, dtype=memo[DTYPE])
                t = shift(memo) if shift is not None else torch.zeros(n, dtype=s.dtype, device=s.device)
                return {"linear_kind": "gather", "gather": GatherSpec(torch.arange(n, device=s.device), s, n), "bias": t}
            return self.add("affine", st.shape, [cur], st.name, make)
        if isinstance(st, Dense):
            return self.add("affine", st.out_shape, [cur], st.name,
                            lambda memo: {"linear_kind": "dense", "weight": st.W(memo), "bias": st.b(memo)})

        def make_conv(memo):
            spec = ConvSpec(st.kernel(memo), tuple(st.stride), tuple(st.pads), tuple(st.dilation), tuple(st.in_shape),
                            tuple(st.out_shape))
            return {"linear_kind": "conv", "conv": spec, "bias": st.bias(memo)}
        return self.add("affine", st.out_shape, [cur], st.name, make_conv)

    def push(self, v: _Data, stage, node, shape=None) -> _Data:
        """``v`` followed by ``stage`` (merged into its last stage where exact)."""
        stage.name = node.name
        stages = list(v.stages)
        merged = compose(stages[-1], stage) if stages else None
        if merged is not None:
            merged.name = stages[-1].name + "," + stage.name
            stages[-1] = merged
        else:
            stages.append(stage)
        return _Data(v.src, tuple(shape if shape is not None else stage.out_shape), stages)

    def nonlinear(self, kind: str, node, v: _Data, alpha: float | None = None, make=None) -> _Data:
        src = self.materialize(v)
        return _Data(self.add(kind, v.shape, [src], node.name, make or (lambda memo: {"alpha": alpha})), v.shape)

    def diag(self, v: _Data, node, scale=None, shift=None, scale_shape: tuple | None = None) -> _Data:
        """``scale * v + shift`` with constants (numbers or lazies broadcastable to ``v``'s shape);
        ``scale_shape``: the shape of a lazy ``scale`` (default: its recorded one)."""
        shape = v.shape
        flat_of = lambda c: None if c is None else lazy(lambda x, memo: flat(x, shape, memo[DTYPE]), c, MEMO)  # noqa: E731
        channel = None
        if scale is not None and len(shape) == 3:
            cs = scale_shape if scale_shape is not None else self.const_shape(scale)
            if _per_channel_shape(cs, shape):
                channel = lazy(lambda x, memo: flat(x, shape, memo[DTYPE]).reshape(shape)[:, 0, 0], scale, MEMO)
        return self.push(v, Diag(flat_of(scale), flat_of(shift), shape, channel), node, shape)

    def const_shape(self, c) -> tuple:
        """The shape of a constant: a lazy's recorded one, () for a number."""
        return tuple(self.const_meta.get(id(c), ())) if isinstance(c, Lazy) else ()

    # -- the walk ----------------------------------------------------------------------------------
    def run(self, example: torch.Tensor) -> tuple[list[_Recipe], tuple, str]:
        self.const_meta: dict = {}
        graph = self.gm.graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]  # one (trace_module checked)
        out = None
        for node in graph.nodes:
            if node.op == "placeholder":
                self.values[node] = _Data(0, tuple(example.shape[1:]))
            elif node.op == "get_attr":
                self.values[node] = self.constant(node)
            elif node.op == "output":
                out = node.args[0]
            else:
                self.values[node] = self.convert(node)
        if not isinstance(out, torch.fx.Node) or not isinstance(self.values.get(out), _Data):
            raise UnsupportedModuleError("output", "output", model=self.model_name,
                                         detail="the model must return one tensor computed from its input")
        last = self.materialize(self.values[out])
        if last != len(self.recipes) or last == 0:
            raise UnsupportedModuleError("output", "output", model=self.model_name,
                                         detail="the output is not a layer computed from the input")
        return self.recipes, tuple(example.shape[1:]), placeholders[0].name

    def constant(self, node) -> _Const:
        """A ``get_attr`` node: the parameter or buffer at ``node.target``, read at build time."""
        *path, name = node.target.split(".")
        owner = self.gm
        for p in path:
            owner = getattr(owner, p)
        value = self.attr(owner, name)
        t = getattr(owner, name)
        self.const_meta[id(value)] = tuple(t.shape) if isinstance(t, torch.Tensor) else ()
        return _Const(value)

    def arg(self, a):
        """A node argument: a data value, a constant (lazy), or a plain Python value."""
        if isinstance(a, torch.fx.Node):
            v = self.values[a]
            return v.value if isinstance(v, _Const) else v
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
        return a

    def convert(self, node):
        args = [self.arg(a) for a in node.args]
        kwargs = {k: self.arg(v) for k, v in node.kwargs.items()}
        leaves = _leaves(list(args) + list(kwargs.values()))
        if (node.op == "call_method" and node.target in ("size", "dim")) or (
                node.op == "call_function" and node.target is getattr and args[1:] == ["shape"]):
            return _STATIC
        if not any(isinstance(a, _Data) for a in leaves):
            return _STATIC if any(isinstance(a, _Static) for a in leaves) else self.folded(node, args, kwargs)
        if node.op == "call_module":
            module = self.gm.get_submodule(node.target)
            handler = _MODULE_HANDLERS.get(type(module))
            if handler is None:
                raise self.unsupported(node)
            return handler(self, node, module, *args, **kwargs)
        if node.op == "call_function":
            if node.target in _ACTIVATION_FUNCTIONS:
                return self.activation(node, _ACTIVATION_FUNCTIONS[node.target], args, kwargs)
            if node.target in _ARITHMETIC:
                return self.arithmetic(node, _ARITHMETIC[node.target], args)
            handler = _FUNCTION_HANDLERS.get(node.target)
            if handler is None:
                raise self.unsupported(node)
            return handler(self, node, *args, **kwargs)
        if node.op == "call_method":
            if node.target in _RESHAPES:
                return self.reshaped(node, args[0])
            if node.target in _ACTIVATION_METHODS:
                return self.activation(node, _ACTIVATION_METHODS[node.target], args, kwargs)
            if node.target in _ARITHMETIC_METHODS:
                return self.arithmetic(node, _ARITHMETIC_METHODS[node.target], args)
            if node.target in ("clamp", "clip"):
                return self.clamp(node, args[0], *args[1:], **kwargs)
        raise self.unsupported(node)

    def folded(self, node, args, kwargs) -> _Const:
        """A node without a data operand: evaluated on constants when the network is built."""
        gm = self.gm
        deps = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Lazy)]

        def run(*vals):
            it = iter(vals)
            sub = lambda a: next(it) if isinstance(a, Lazy) else a  # noqa: E731
            a2, k2 = [sub(a) for a in args], {k: sub(v) for k, v in kwargs.items()}
            if node.op == "call_module":
                return gm.get_submodule(node.target)(*a2, **k2)
            if node.op == "call_function":
                return node.target(*a2, **k2)
            return getattr(a2[0], node.target)(*a2[1:], **k2)

        value = Lazy(run, *deps)
        meta = node.meta.get("tensor_meta")
        self.const_meta[id(value)] = tuple(meta.shape) if hasattr(meta, "shape") else ()
        return _Const(value)

    # -- shapes ------------------------------------------------------------------------------------
    def out_shape(self, node) -> tuple:
        meta = node.meta.get("tensor_meta")
        if meta is None or not hasattr(meta, "shape"):
            raise self.unsupported(node, "no tensor shape")
        return tuple(int(d) for d in meta.shape)

    def reshaped(self, node, v: _Data) -> _Data:
        shape = self.out_shape(node)
        batch = self.batch
        if not shape or shape[0] != batch or _prod(shape[1:]) != _prod(v.shape):
            raise self.unsupported(node, f"a reshape to {list(shape)} that does not keep the batch dimension")
        return _Data(v.src, shape[1:], v.stages)

    # -- ops -------------------------------------------------------------------------------------------
    def activation(self, node, kind: str, args, kwargs, module=None) -> _Data:
        v = args[0]
        if kind == "leakyrelu":
            alpha = module.negative_slope if module is not None else _option(args, kwargs, 1, "negative_slope", 0.01)
            return self.nonlinear(kind, node, v, float(alpha))
        if kind == "elu":
            alpha = module.alpha if module is not None else _option(args, kwargs, 1, "alpha", 1.0)
            return self.nonlinear(kind, node, v, float(alpha))
        if kind == "softplus":
            beta = module.beta if module is not None else _option(args, kwargs, 1, "beta", 1.0)
            if float(beta) != 1.0:
                raise self.unsupported(node, f"beta {beta} (only beta 1)")
            return self.nonlinear(kind, node, v)
        if kind == "hardtanh":
            lo = module.min_val if module is not None else _option(args, kwargs, 1, "min_val", -1.0)
            hi = module.max_val if module is not None else _option(args, kwargs, 2, "max_val", 1.0)
            return self.clamp(node, v, float(lo), float(hi))
        return self.nonlinear(kind, node, v)

    def clamp(self, node, v: _Data, lo=None, hi=None, *, min=None, max=None) -> _Data:  # noqa: A002
        """``min(max(x, lo), hi)`` as the ONNX loader reads Clip: ``relu6``, ``hardtanh``, ``relu``
        layers, other bounds by an exact rescaling around ``hardtanh``/``relu``."""
        lo = min if lo is None else lo
        hi = max if hi is None else hi
        if any(isinstance(b, (Lazy, _Data)) for b in (lo, hi)):
            raise self.unsupported(node, "tensor bounds")
        lo = None if lo is None else float(lo)
        hi = None if hi is None else float(hi)
        kind = {(0.0, 6.0): "relu6", (-1.0, 1.0): "hardtanh", (0.0, None): "relu"}.get((lo, hi))
        if kind is not None:
            return self.nonlinear(kind, node, v)
        if lo is None and hi is None:
            return v
        if lo is None:
            return self.diag(self.nonlinear("relu", node, self.diag(v, node, -1.0, hi)), node, -1.0, hi)
        if hi is None:
            return self.diag(self.nonlinear("relu", node, self.diag(v, node, None, -lo)), node, None, lo)
        if not lo < hi:
            raise self.unsupported(node, f"min {lo:g} not below max {hi:g}")
        half, mid = (hi - lo) / 2.0, (hi + lo) / 2.0
        unit = self.diag(v, node, 1.0 / half, -mid / half)
        return self.diag(self.nonlinear("hardtanh", node, unit), node, half, mid)

    def arithmetic(self, node, op: str, args) -> _Data:
        if op == "neg":
            return self.diag(args[0], node, -1.0)
        if len(args) != 2:
            raise self.unsupported(node)
        x, y = args
        if isinstance(x, _Data) and isinstance(y, _Data):
            if op != "add":
                raise self.unsupported(node, f"'{op}' of two data tensors")
            if x.shape != y.shape:
                raise self.unsupported(node, f"'+' of shapes {x.shape} and {y.shape}")
            if x is y:
                return self.diag(x, node, 2.0)
            px, py = self.materialize(x), self.materialize(y)
            return _Data(self.add("add", x.shape, [px, py], node.name), x.shape)
        data, c = (x, y) if isinstance(x, _Data) else (y, x)
        self.check_broadcast(node, c, data.shape)
        if op == "add":
            return self.diag(data, node, None, c)
        if op == "mul":
            return self.diag(data, node, c)
        if op == "sub":
            if data is x:
                return self.diag(data, node, None, lazy(operator.neg, c) if isinstance(c, Lazy) else -c)
            return self.diag(data, node, -1.0, c)
        if data is not x:
            raise self.unsupported(node, "division by a data tensor")
        if isinstance(c, Lazy):
            return self.diag(data, node, lazy(lambda t: 1.0 / t, c), scale_shape=self.const_shape(c))
        if c == 0:
            raise self.unsupported(node, "division by zero")
        return self.diag(data, node, 1.0 / c)

    def check_broadcast(self, node, c, shape: tuple) -> None:
        """A constant must broadcast to the data's shape without changing it (batch dimension first)."""
        cs = self.const_shape(c) if isinstance(c, Lazy) else ()
        full = (self.batch,) + tuple(shape)
        try:
            got = torch.broadcast_shapes(cs, full)
        except RuntimeError:
            got = None
        if tuple(got or ()) != full or (len(cs) == len(full) and cs[0] != 1):
            raise self.unsupported(node, f"a constant of shape {list(cs)} on data of shape {list(shape)}")
        if not isinstance(c, (Lazy, int, float)):
            raise self.unsupported(node, f"operand of type {type(c).__name__}")

    def linear(self, node, v: _Data, W: Lazy, b: Lazy | None, n_out: int) -> _Data:
        if len(v.shape) != 1:
            raise self.unsupported(node, f"a linear map of data of shape {list(v.shape)} (flatten it first)")
        bias = b if b is not None else lazy(lambda w: torch.zeros(w.shape[0], dtype=w.dtype, device=w.device), W)
        return self.push(v, Dense(W, bias, (n_out,), v.shape[0]), node)

    def conv(self, node, v: _Data, K: Lazy, b: Lazy | None, kshape, stride, padding, dilation, groups) -> _Data:
        if len(v.shape) != 3:
            raise self.unsupported(node, f"a 2-D convolution of data of shape {list(v.shape)}")
        if groups != 1:
            raise self.unsupported(node, f"groups={groups} (grouped convolutions are not supported)")
        C, H, W = v.shape
        O, kh, kw = kshape[0], kshape[2], kshape[3]
        stride, dilation = _pair(stride), _pair(dilation)
        pads = _pads(padding, (H, W), (kh, kw), stride, dilation)
        oh = (H + pads[0] + pads[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (W + pads[1] + pads[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        if (oh, ow) == (1, 1) and not any(pads) and (kh, kw) == (H, W):
            # a kernel covering the whole input is a fully-connected layer (as the ONNX loader reads it)
            bias = b if b is not None else lazy(lambda k: torch.zeros(k.shape[0], dtype=k.dtype, device=k.device), K)
            return self.push(v, Dense(lazy(lambda k: k.reshape(O, -1), K), bias, (O, 1, 1), C * H * W), node)
        if b is None:
            bias = lazy(lambda k: torch.zeros(O * oh * ow, dtype=k.dtype, device=k.device), K)
        else:
            bias = lazy(lambda t: t.repeat_interleave(oh * ow), b)
        return self.push(v, Conv(K, bias, stride, pads, dilation, (C, H, W), (O, oh, ow)), node)

    def avg_pool(self, node, v: _Data, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override) -> _Data:
        if len(v.shape) != 3:
            raise self.unsupported(node, f"2-D pooling of data of shape {list(v.shape)}")
        if ceil_mode or divisor_override:
            raise self.unsupported(node, "ceil_mode or divisor_override")
        C, H, W = v.shape
        kernel = _pair(kernel)
        stride = _pair(stride) if stride not in (None, [], ()) else kernel
        pads = _pads(padding, (H, W), kernel, stride, (1, 1))
        oh = (H + pads[0] + pads[2] - kernel[0]) // stride[0] + 1
        ow = (W + pads[1] + pads[3] - kernel[1]) // stride[1] + 1
        if not any(pads) or count_include_pad:  # one divisor: a convolution with a channel-diagonal kernel
            K = lazy(lambda memo: (torch.eye(C, dtype=memo[DTYPE]) / (kernel[0] * kernel[1]))[:, :, None, None]
                    .expand(C, C, *kernel).clone(), MEMO)
            bias = lazy(lambda memo: torch.zeros(C * oh * ow, dtype=memo[DTYPE]), MEMO)
            return self.push(v, Conv(K, bias, stride, pads, (1, 1), (C, H, W), (C, oh, ow), from_pool=True), node)
        n = C * H * W
        W_ = lazy(lambda memo: F.avg_pool2d(torch.eye(n, dtype=memo[DTYPE]).reshape(n, C, H, W), kernel, stride,
                                           (pads[0], pads[1]), count_include_pad=False).reshape(n, -1).T.contiguous(), MEMO)
        zeros = lazy(lambda memo: torch.zeros(C * oh * ow, dtype=memo[DTYPE]), MEMO)
        return self.push(v, Dense(W_, zeros, (C, oh, ow), n), node)

    def max_pool(self, node, v: _Data, kernel, stride, padding, dilation, ceil_mode, return_indices) -> _Data:
        if len(v.shape) != 3:
            raise self.unsupported(node, f"2-D pooling of data of shape {list(v.shape)}")
        if ceil_mode or return_indices:
            raise self.unsupported(node, "ceil_mode or return_indices")
        kernel, dilation = _pair(kernel), _pair(dilation)
        stride = _pair(stride) if stride not in (None, [], ()) else kernel
        pads = _pads(padding, v.shape[1:], kernel, stride, dilation)
        index, out_shape = _pool_windows(v.shape, kernel, stride, pads, dilation)
        if not bool((index >= 0).any(1).all()):
            raise self.unsupported(node, "a window lies entirely in the padding")
        spec = MaxPoolSpec(kernel, stride, pads, dilation, tuple(v.shape), out_shape, index)
        src = self.materialize(v)
        return _Data(self.add("maxpool", out_shape, [src], node.name, lambda memo: {"maxpool": spec}), out_shape)

    @property
    def batch(self) -> int:
        return self._batch


# -- module handlers ---------------------------------------------------------------------------------
def _linear_module(imp: _Importer, node, m: nn.Linear, x):
    return imp.linear(node, x, imp.attr(m, "weight"), imp.attr(m, "bias"), m.out_features)


def _conv_module(imp: _Importer, node, m: nn.Conv2d, x):
    if m.padding_mode != "zeros":
        raise imp.unsupported(node, f"padding_mode '{m.padding_mode}'")
    return imp.conv(node, x, imp.attr(m, "weight"), imp.attr(m, "bias"), tuple(m.weight.shape), m.stride, m.padding,
                    m.dilation, m.groups)


def _batch_norm_module(imp: _Importer, node, m, x):
    if m.training or m.running_mean is None:
        raise imp.unsupported(node, "BatchNorm in training mode or without running statistics (call model.eval())")
    c = x.shape[0]
    gamma, beta = imp.attr(m, "weight"), imp.attr(m, "bias")
    mean, var = imp.attr(m, "running_mean"), imp.attr(m, "running_var")
    cshape = (c,) + (1,) * (len(x.shape) - 1)

    def scale(var, gamma):
        root = torch.sqrt(var + m.eps)
        return ((1.0 if gamma is None else gamma) / root).reshape(cshape)

    s = lazy(scale, var, gamma)
    t = lazy(lambda s, mean, beta: (0.0 if beta is None else beta.reshape(cshape)) - mean.reshape(cshape) * s, s, mean, beta)
    return imp.diag(x, node, s, t, scale_shape=cshape)


def _flatten_module(imp: _Importer, node, m, x):
    return imp.reshaped(node, x)


def _identity_module(imp: _Importer, node, m, x, *rest):
    if isinstance(m, nn.Dropout) and m.training and m.p > 0:
        raise imp.unsupported(node, "Dropout in training mode (call model.eval())")
    return x


def _softmax_module(imp: _Importer, node, m, x):
    if list(node.users) != [n for n in node.graph.nodes if n.op == "output"]:
        raise imp.unsupported(node, "Softmax is only supported as the last operation")
    imp.notices.append(f"Softmax at the output (node '{node.name}') dropped: bounds are on the logits")
    return x


def _avg_pool_module(imp: _Importer, node, m: nn.AvgPool2d, x):
    return imp.avg_pool(node, x, m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad, m.divisor_override)


def _adaptive_avg_pool(imp: _Importer, node, x, output_size):
    C, H, W = x.shape
    oh, ow = _pair(output_size)
    oh, ow = oh or H, ow or W
    if H % oh or W % ow:
        raise imp.unsupported(node, f"an adaptive pooling of {H}x{W} to {oh}x{ow} (the output must divide the input)")
    k = (H // oh, W // ow)
    # (as its ONNX export reads: GlobalAveragePool, stride 1, for a 1x1 output)
    return imp.avg_pool(node, x, k, (1, 1) if (oh, ow) == (1, 1) else k, 0, False, True, None)


def _max_pool_module(imp: _Importer, node, m: nn.MaxPool2d, x):
    return imp.max_pool(node, x, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode, m.return_indices)


def _activation_module(imp: _Importer, node, m, x):
    return imp.activation(node, _ACTIVATION_MODULES[type(m)], [x], {}, module=m)


_MODULE_HANDLERS = {
    nn.Linear: _linear_module, nn.Conv2d: _conv_module, nn.BatchNorm1d: _batch_norm_module,
    nn.BatchNorm2d: _batch_norm_module, nn.Flatten: _flatten_module, nn.Identity: _identity_module,
    nn.Dropout: _identity_module, nn.Softmax: _softmax_module, nn.AvgPool2d: _avg_pool_module,
    nn.AdaptiveAvgPool2d: lambda imp, node, m, x: _adaptive_avg_pool(imp, node, x, m.output_size),
    nn.MaxPool2d: _max_pool_module, **{cls: _activation_module for cls in _ACTIVATION_MODULES},
}


# -- function handlers ---------------------------------------------------------------------------------
def _f_linear(imp: _Importer, node, x, weight, bias=None):
    if not isinstance(weight, Lazy):
        raise imp.unsupported(node, "a weight that is not a parameter or buffer")
    n_out = imp.const_shape(weight)[0]
    return imp.linear(node, x, weight, bias, n_out)


def _f_conv2d(imp: _Importer, node, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return imp.conv(node, x, weight, bias, imp.const_shape(weight), stride, padding, dilation, groups)


def _f_flatten(imp: _Importer, node, x, *a, **kw):
    return imp.reshaped(node, x)


def _f_avg_pool2d(imp: _Importer, node, x, kernel_size, stride=None, padding=0, ceil_mode=False,
                  count_include_pad=True, divisor_override=None):
    return imp.avg_pool(node, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _f_max_pool2d(imp: _Importer, node, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                  return_indices=False):
    return imp.max_pool(node, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _f_clamp(imp: _Importer, node, x, min=None, max=None):  # noqa: A002
    return imp.clamp(node, x, min, max)


_FUNCTION_HANDLERS = {
    F.linear: _f_linear, F.conv2d: _f_conv2d, torch.flatten: _f_flatten, torch.reshape: _f_flatten,
    F.avg_pool2d: _f_avg_pool2d, F.max_pool2d: _f_max_pool2d, torch.clamp: _f_clamp, torch.clip: _f_clamp,
    F.adaptive_avg_pool2d: lambda imp, node, x, output_size: _adaptive_avg_pool(imp, node, x, output_size),
    F.dropout: lambda imp, node, x, p=0.5, training=False, inplace=False: _dropout(imp, node, x, p, training),
}


def _dropout(imp: _Importer, node, x, p, training):
    if training and p > 0:
        raise imp.unsupported(node, "dropout in training mode")
    return x


# -- helpers ------------------------------------------------------------------------------------------
def _leaves(args) -> list:
    out = []
    for a in args:
        out.extend(_leaves(a) if isinstance(a, (list, tuple)) else [a])
    return out


def _option(args, kwargs, i: int, name: str, default):
    return args[i] if len(args) > i else kwargs.get(name, default)


def _pair(v) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    v = tuple(int(x) for x in v)
    return v if len(v) == 2 else (v[0], v[0])


def _pads(padding, hw, kernel, stride, dilation) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` of torch's ``padding`` (a number, a pair, ``'valid'``/``'same'``)."""
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        out = []
        for d in range(2):
            total = dilation[d] * (kernel[d] - 1)
            out.append((total // 2, total - total // 2))
        return (out[0][0], out[1][0], out[0][1], out[1][1])
    p = _pair(padding)
    return (p[0], p[1], p[0], p[1])


def _per_channel_shape(cshape: tuple, shape: tuple) -> bool:
    """A constant of shape ``cshape`` broadcast over a ``(C, H, W)`` value (batch first) is one number
    per channel when it has no height or width extent."""
    full = (1,) * (4 - len(cshape)) + tuple(cshape) if len(cshape) <= 4 else cshape
    return len(full) == 4 and full[2] == 1 and full[3] == 1


def _pool_windows(shape, kernel, stride, pads, dilation):
    """``(index_map [out, kh*kw], out_shape)``: every output's window as flat input positions, -1 for
    padding (the ONNX loader's windows)."""
    C, H, W = shape
    idx = torch.arange(C * H * W, dtype=torch.float64).reshape(1, C, H, W)
    idx = F.pad(idx, (pads[1], pads[3], pads[0], pads[2]), value=-1.0)
    cols = F.unfold(idx, kernel, dilation=dilation, stride=stride)  # [1, C*kh*kw, L]
    kk = kernel[0] * kernel[1]
    oh = (H + pads[0] + pads[2] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (W + pads[1] + pads[3] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    index = cols.reshape(C, kk, oh * ow).permute(0, 2, 1).reshape(C * oh * ow, kk)
    return index.to(torch.int64), (C, oh, ow)


def _describe(gm, node) -> str:
    if node.op == "call_module":
        return f"module {type(gm.get_submodule(node.target)).__name__}"
    if node.op == "call_function":
        return f"function {getattr(node.target, '__name__', str(node.target))}"
    if node.op == "call_method":
        return f"tensor method '{node.target}'"
    return f"node kind '{node.op}'"


# ---------------------------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------------------------
class ModulePlan:
    """The layer structure of a traced module; :meth:`network` makes its network from the module's
    current tensors."""

    def __init__(self, model: nn.Module, recipes: list[_Recipe], input_shape: tuple, input_name: str,
                 notices: list[str], sources: list, source: str):
        self.model, self.recipes, self.input_shape, self.input_name = model, recipes, input_shape, input_name
        self.notices, self.sources, self.source = notices, sources, source

    def network(self, dtype: torch.dtype = torch.float64) -> Network:
        """The network, every tensor an expression of the module's parameters and buffers now
        (gradients flow back to them when grad mode is on), in ``dtype`` (float64, as the ONNX loader's,
        unless the analysis is in another dtype and needs no exact parameters: see
        :class:`cfmlir.BoundedNetwork`)."""
        memo: dict = {DTYPE: dtype}
        layers = [Layer(index=0, kind="input", shape=self.input_shape, name=self.input_name)]
        for i, r in enumerate(self.recipes, start=1):
            kw = r.make(memo) if r.make is not None else {}
            layers.append(Layer(index=i, kind=r.kind, shape=r.shape, preds=list(r.preds), name=r.name, **kw))
        return Network(layers, source=self.source, notices=self.notices, input_name=self.input_name)

    def version(self) -> tuple:
        """Changes whenever a tensor the network reads is replaced or written in place."""
        out = []
        for module, name in self.sources:
            t = getattr(module, name)
            out.append((id(t), t._version if isinstance(t, torch.Tensor) else None))
        return tuple(out) + (tuple(m.training for m in self.model.modules()),)


def trace_module(model: nn.Module, example: torch.Tensor, *, name: str | None = None) -> ModulePlan:
    """Trace ``model`` on ``example`` (``[batch, *input shape]``) into a :class:`ModulePlan`."""
    from torch.fx.passes.shape_prop import ShapeProp

    model_name = name or type(model).__name__
    try:
        gm = torch.fx.symbolic_trace(model)
    except Exception as e:  # noqa: BLE001 - tracing runs the user's forward on proxies
        raise UnsupportedModuleError("model", model_name, model=model_name,
                                     detail=f"torch.fx cannot trace it: {' '.join(str(e).split())[:200]}") from None
    inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(inputs) != 1:
        raise UnsupportedModuleError("model", model_name, model=model_name,
                                     detail=f"{len(inputs)} inputs (one input tensor is supported)")
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(example)
    except Exception as e:  # noqa: BLE001
        raise NetworkError(f"the model does not run on an input of shape {list(example.shape)} "
                           f"({type(e).__name__}: {' '.join(str(e).split())[:200]})", file=model_name) from None
    imp = _Importer(model, gm, model_name)
    imp._batch = int(example.shape[0])
    recipes, input_shape, input_name = imp.run(example)
    return ModulePlan(model, recipes, input_shape, input_name, imp.notices, imp.sources, model_name)
