"""Bounds of an ``nn.Module`` on input tensors, with gradients: the auto_LiRPA-style API.

::

    import cfmlir
    bounded = cfmlir.BoundedNetwork(model, certifier="crown_ibp")
    lb, ub = bounded.bounds(x, eps=0.1, C=C)     # margins C @ model(x') for every x' in the L-inf ball
    loss = torch.nn.functional.softplus(-lb).mean()
    loss.backward()                              # gradients in model.parameters()

``model`` is an ``nn.Module`` (traced with ``torch.fx`` into our network graph,
:mod:`cfruntime.network.torch_import`; its parameters are read by reference on every call, so a
training loop's optimizer steps are seen and the bounds' gradients reach the parameters), or an ONNX
file, or a loaded network (:func:`cfmlir.load_network`); ``certifier`` is a shipped certifier's name,
a ``.cf`` path or source, or a :func:`cfmlir.compile` result.  The bounds are the compiled engine's
(:func:`cfruntime.flow.engine.run_certifier`), differentiable with respect to the input box, the
model's parameters and ``C``.

Errors (each one line, ``str(err)``): :class:`BoundsError` (a ``ValueError``) for arguments
:meth:`BoundedNetwork.bounds` cannot use -- no input, both an ``eps`` ball and a box, a negative or
NaN ``eps``, ``lb > ub``, shapes that do not fit the model, a ``C`` of the wrong shape, ``optimize``
for a certifier without parameters; :class:`cfruntime.network.torch_import.UnsupportedModuleError` (a
:class:`cfruntime.errors.NetworkError`) for a module, function or method the import does not support;
:class:`cfmlir.diagnostics.CfError` for a bad certifier; :class:`TypeError` for a ``model`` of
another kind.  The page ``docs/api.md`` is the user's documentation.
"""

from __future__ import annotations

from pathlib import Path

from cfruntime.errors import UserError

__all__ = ["BoundedNetwork", "BoundsError"]

_DTYPES = {"float32", "float64"}


class BoundsError(UserError, ValueError):
    """Arguments :meth:`BoundedNetwork.bounds` (or the constructor) cannot use; one line."""


class BoundedNetwork:
    """A network to bound: see the module docstring.

    ``dtype`` (``"float32"``, ``"float64"``, a torch dtype, or None: the input's dtype) and ``device``
    (None: the input's) are where the analysis runs; ``widen`` (None: on for float32) makes float32
    bounds rigorous despite rounding (:mod:`cfruntime.flow.widening`; with gradients the widening
    terms are constants for the gradient); ``representation`` is the engine's (None: its default,
    ``"planned"``, ``"gbscr"`` or ``"dense"``).  ``example_input`` traces an ``nn.Module`` at once
    (else on the first :meth:`bounds` call, on its input)."""

    def __init__(self, model, certifier="crown_ibp", *, dtype=None, device=None, widen=None, representation=None,
                 example_input=None):
        import torch

        from cfmlir.engines import Certifier

        self.certifier = certifier if isinstance(certifier, Certifier) else _compile(certifier)
        self.dtype = _dtype(dtype)
        self.device = None if device is None else torch.device(device)
        if widen not in (None, True, False):
            raise BoundsError(f"widen must be None, True or False, got {widen!r}")
        self.widen = widen
        from cfruntime.flow.representation import KINDS

        if representation is not None and representation not in KINDS:
            raise BoundsError(f"unknown representation '{representation}' (one of {', '.join(KINDS)})")
        self.representation = representation
        self.module, self._static, self._plan, self._cached = None, None, None, None
        from cfmlir.api import Network as LoadedNetwork
        from cfruntime.network import Network, load_onnx

        if isinstance(model, torch.nn.Module):
            self.module = model
            if example_input is not None:
                self._trace(example_input)
        elif isinstance(model, (str, Path)):
            self._static = load_onnx(model)
        elif isinstance(model, LoadedNetwork):  # cfmlir.load_network's: its network (the inputs as given)
            self._static = model.network
        elif isinstance(model, Network):
            self._static = model
        else:
            raise TypeError(f"BoundedNetwork takes an nn.Module, an ONNX path or a loaded network, not {type(model).__name__}")

    # -- the network ------------------------------------------------------------------------------
    @property
    def input_shape(self) -> tuple | None:
        """The input shape without the batch dimension (None for a module not traced yet)."""
        if self._static is not None:
            return tuple(self._static.input_shape)
        return None if self._plan is None else tuple(self._plan.input_shape)

    def _trace(self, example) -> None:
        import torch

        from cfruntime.network.torch_import import trace_module

        if not isinstance(example, torch.Tensor) or example.dim() < 1:
            raise BoundsError("the example input must be a tensor with a batch dimension first")
        ref = next((p for p in self.module.parameters() if p.is_floating_point()), None)
        if ref is not None:
            example = example.to(dtype=ref.dtype, device=ref.device)
        self._plan = trace_module(self.module, example.detach())

    def network(self, dtype=None):
        """The network bounded now (a :class:`cfruntime.network.Network`): for a module, made from its
        current parameters (a gradient path to them when grad mode is on), its tensors in ``dtype``
        (default float64, the ONNX loader's); kept while none changes and no gradient is wanted."""
        import torch

        if self._static is not None:
            return self._static
        if self._plan is None:
            raise BoundsError("the module is not traced yet: give example_input or call bounds() first")
        dtype = dtype or torch.float64
        wants_grad = torch.is_grad_enabled() and any(p.requires_grad for p in self.module.parameters())
        if wants_grad:
            return self._plan.network(dtype)
        version = (self._plan.version(), dtype)
        if self._cached is None or self._cached[0] != version:
            with torch.no_grad():
                self._cached = (version, self._plan.network(dtype))
        return self._cached[1]

    def forward(self, x):
        """The network's outputs at ``x`` (``[B, *input shape]``), as the analysis sees the model."""
        if self.module is not None and self._plan is None:
            self._trace(x)
        net = self.network()
        return net.forward(x.reshape(x.shape[0], -1).to(_net_dtype(net)))

    __call__ = forward

    # -- bounds --------------------------------------------------------------------------------------
    def bounds(self, x=None, eps=None, *, box=None, C=None, optimize=None, bound_upper=True):
        """Lower and upper bounds ``[B, K]`` of ``C[b] @ model(x')`` (``[B, n_out]`` of ``model(x')``
        when ``C`` is None) over every ``x'`` in the input region of sample ``b``:

        * ``x`` ``[B, *input shape]`` and ``eps``: the L-inf ball ``|x' - x| <= eps``; ``eps`` a number,
          a ``[B]`` tensor (one per sample) or a tensor broadcastable to ``x``;
        * ``box=(lb, ub)``: the box ``lb <= x' <= ub`` (each ``[B, *input shape]``).

        ``C``: ``[K, n_out]`` (the same for every sample) or ``[B, K, n_out]``.  ``optimize``: a number
        of iterations or :class:`cfmlir.optimize.OptimizeOptions` for alpha-CROWN's loop over the
        certifier's parameters (:meth:`_optimized`; a :class:`BoundsError` for certifiers without any).
        The bounds are tensors of the analysis dtype on its device, differentiable (grad mode on) with
        respect to ``x``, ``eps``, ``box``, ``C`` and the model's parameters.  ``bound_upper=False``
        (auto_LiRPA's option): the upper bounds are not computed and None is returned for them (the
        lower bounds are the same; about half the back-substitution of CROWN-IBP saved: a training loss)."""
        import torch

        from cfruntime.flow.engine import run_certifier

        options = self._optimize_options(optimize)
        lb, ub = self._region(x, eps, box)
        if self.module is not None and self._plan is None:
            self._trace(lb)
        dtype = self.dtype or (lb.dtype if lb.dtype in (torch.float32, torch.float64) else torch.float64)
        # the layers in float64 (folds exact, as the ONNX loader's), or directly in the analysis
        # dtype when its bounds need not be rigorous (no widening: a training loss)
        net = self.network(dtype if self.widen is False else torch.float64)
        b = lb.shape[0]
        lb, ub = self._flat_box(lb, ub, net)
        if C is not None:
            net = net.with_margin_layer(self._margins(C, b, net.output_size, dtype if self.widen is False else None))
        device = self.device or lb.device
        kw = {"representation": self.representation} if self.representation is not None else {}
        store = None
        if options is not None:
            lower, upper, store = self._optimized(options, C, lb, ub, dtype, device)
            if store is None:  # nothing asks for a gradient: the optimisation's bounds as they are
                return lower, (upper if bound_upper else None)
        res = run_certifier(self.certifier.compiled, net, lb, ub, dtype=dtype, device=device, widen=self.widen,
                            bound_upper=bool(bound_upper), params=store, **kw)
        return res.lower, (res.upper if bound_upper else None)

    def _optimize_options(self, optimize):
        """``optimize`` as options (None: no optimisation); a :class:`BoundsError` for bad values and for a
        certifier without parameters."""
        from cfmlir.optimize import OptimizeError, options_from

        try:
            options = options_from(optimize)
        except OptimizeError as err:
            raise BoundsError(str(err)) from None
        if options is not None and not self.certifier.compiled.params:
            raise BoundsError(f"certifier '{self.certifier.name}' has no parameters to optimise "
                              f"(optimize={optimize!r}); use a certifier that declares some, or optimize=None")
        return options

    def _optimized(self, options, C, lb, ub, dtype, device):
        """The optimised bounds (:func:`cfmlir.optimize.optimize_bounds`, alpha-CROWN's loop) on a
        detached copy of the network and region, so that its gradient steps touch neither the model's
        parameters' ``.grad`` nor the caller's tensors: ``(lower, upper, None)``; when grad mode is on and
        something asks for a gradient, ``(None, None, params)``: the best parameters, frozen, for one
        differentiable run (a bound at one point of the domains, so sound; the optimisation's own
        result is the element-wise best of several runs and is a little tighter)."""
        import torch

        from cfmlir.optimize import optimize_bounds
        from cfruntime.flow.param_store import ParamStore

        with torch.no_grad():
            net = self.network(dtype if self.widen is False else torch.float64)
            if C is not None:
                net = net.with_margin_layer(self._margins(C.detach(), lb.shape[0], net.output_size,
                                                          dtype if self.widen is False else None))
        params = ParamStore(requires_grad=True, sparse=True)
        # the network may hold the module's parameters themselves: frozen while the loop back-propagates
        frozen = [] if self.module is None else [p for p in self.module.parameters() if p.requires_grad]
        try:
            for p in frozen:
                p.requires_grad_(False)
            lower, upper, _ = optimize_bounds(self.certifier.compiled, net, lb.detach(), ub.detach(), options,
                                              dtype=dtype, device=device, widen=self.widen, params=params)
        finally:
            for p in frozen:
                p.requires_grad_(True)
        wants_grad = torch.is_grad_enabled() and (lb.requires_grad or ub.requires_grad or bool(frozen)
                                                  or (C is not None and C.requires_grad))
        if not wants_grad:
            return lower, upper, None
        params.cast_(dtype)  # detached values in the run's dtype (the optimisation may end in float64)
        return None, None, params

    def _region(self, x, eps, box):
        """``(lb, ub)`` ``[B, ...]`` of an ``x``/``eps`` ball or a box, checked (one host sync)."""
        if box is not None:
            if x is not None or eps is not None:
                raise BoundsError("give either x and eps (an L-inf ball) or box=(lb, ub), not both")
            if not isinstance(box, (tuple, list)) or len(box) != 2:
                raise BoundsError("box must be a pair (lb, ub) of tensors")
            lb, ub = (_tensor(t, what) for t, what in zip(box, ("box lb", "box ub")))
            if lb.shape != ub.shape:
                raise BoundsError(f"box lb and ub have different shapes {list(lb.shape)} and {list(ub.shape)}")
        else:
            if x is None:
                raise BoundsError("no input region: give x and eps, or box=(lb, ub)")
            if eps is None:
                raise BoundsError("x given without eps (an L-inf radius; or give box=(lb, ub))")
            x = _tensor(x, "x")
            eps = self._eps(eps, x)
            lb, ub = x - eps, x + eps
        if lb.dim() < 1 or lb.shape[0] == 0:
            raise BoundsError(f"the input needs a batch dimension first, got shape {list(lb.shape)}")
        ok = (lb <= ub).all()  # false for lb > ub, a negative eps and NaN anywhere
        if not bool(ok):
            what = "eps is negative or NaN somewhere" if box is None else "lb > ub (or NaN) somewhere in the box"
            raise BoundsError(f"empty input region: {what}")
        return lb, ub

    @staticmethod
    def _eps(eps, x):
        import torch

        if isinstance(eps, (int, float)) and not isinstance(eps, bool):
            return float(eps)
        if not isinstance(eps, torch.Tensor):
            raise BoundsError(f"eps must be a number or a tensor, not {type(eps).__name__}")
        if eps.dim() == 1 and eps.shape[0] == x.shape[0] and x.dim() > 1:  # one radius per sample
            return eps.reshape(-1, *([1] * (x.dim() - 1)))
        try:
            if torch.broadcast_shapes(eps.shape, x.shape) != x.shape:
                raise RuntimeError
        except RuntimeError:
            raise BoundsError(f"eps of shape {list(eps.shape)} fits neither one radius per sample "
                              f"([{x.shape[0]}]) nor the input's shape {list(x.shape)}") from None
        return eps

    def _flat_box(self, lb, ub, net):
        shape = tuple(net.input_shape)
        n = net.input_size
        if tuple(lb.shape[1:]) != shape and tuple(lb.shape[1:]) != (n,):
            raise BoundsError(f"input of shape {list(lb.shape)} does not fit the model's input "
                              f"[batch, {', '.join(map(str, shape))}]")
        return lb.reshape(lb.shape[0], n), ub.reshape(ub.shape[0], n)

    @staticmethod
    def _margins(C, b: int, n_out: int, dtype=None):
        import torch

        C = _tensor(C, "C")
        if C.dim() not in (2, 3) or C.shape[-1] != n_out or (C.dim() == 3 and C.shape[0] != b):
            raise BoundsError(f"C of shape {list(C.shape)} is neither [K, {n_out}] nor [{b}, K, {n_out}] "
                              f"(batch {b}, {n_out} outputs)")
        return C.to(dtype or torch.float64)


def _compile(spec):
    from cfmlir.api import compile as compile_certifier

    return compile_certifier(spec)


def _dtype(dtype):
    import torch

    if dtype is None or isinstance(dtype, torch.dtype) and dtype in (torch.float32, torch.float64):
        return dtype
    if isinstance(dtype, str) and dtype in _DTYPES:
        return getattr(torch, dtype)
    raise BoundsError(f"dtype must be float32 or float64, got {dtype!r}")


def _tensor(t, what: str):
    import torch

    if not isinstance(t, torch.Tensor):
        raise BoundsError(f"{what} must be a torch tensor, not {type(t).__name__}")
    if not t.is_floating_point():
        raise BoundsError(f"{what} must be a floating-point tensor, not {t.dtype}")
    return t


def _net_dtype(net):
    import torch

    for layer in net.layers:
        for t in (layer.weight, layer.bias):
            if t is not None:
                return t.dtype
    return torch.float64
