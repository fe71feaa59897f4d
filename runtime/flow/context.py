"""One rule invocation's view of the network: what emitted code calls as ``ctx.<name>``.

The context resolves the rule's inputs (``curr``, ``prev``, ``weight``, ``bias``...), the symbolic
sizes of the metadata (``batch``, ``curr``, ``prev``, ``poly`` = all neurons, ``sym`` = all noise
symbols), member and metadata accesses on sets of neurons, the PolyExp ``dot``, the promotion of
neurons/noise symbols to PolyExps/SymExps, and fresh noise symbols.
"""

from __future__ import annotations

import functools

import torch

from cfruntime import contract
from cfruntime import tensor as gb
from cfruntime.errors import RuleError
from cfruntime.flow import parameters
from cfruntime.flow.layout import layout_of
from cfruntime.flow.store import ShapeStore
from cfruntime.flow.values import Affine, Neurons, Window, WindowRows
from cfruntime.tensor import Segmented
from cfruntime.tensor.lazy_parts import LazyParts
from cfruntime.tensor.segmented import part_as_block, part_dense
from cfruntime.tensor.segmented_ops import is_constant, kept_view


class LayerContext:
    def __init__(self, network, layer, store: ShapeStore, batch: int, sym_start: int, sym_total: int):
        self.network = network
        self.layer = layer
        self.store = store
        self.rep = store.rep
        self.batch = batch
        self.sym_next = sym_start
        self.sym_total = sym_total
        self.layout = layout_of(network)
        sizes = self.layout.sizes
        self._sizes = {
            "batch": batch, "curr": sizes[layer.index], "poly": store.total, "sym": sym_total,
            "prev": sizes[layer.preds[0]] if layer.preds else 0,
        }
        if layer.kind == "maxpool":  # a Maxpool rule's prev is each neuron's window
            self._sizes["prev"] = int(layer.maxpool.index_map.shape[1])
        #: the neurons whose bounds are wanted (None: all), set by the engine for a row override
        #: (:mod:`cfruntime.flow.row_subset`); ``in_rows`` while a traverse runs on those rows only
        self.rows: torch.Tensor | None = None
        self.in_rows = False
        #: whether a traverse ran on ``rows``, and whether its result is laid back into the whole layer's rows
        #: (the others 0: a rule that combines it with values of the whole layer, as a product's interval bound
        #: with its back-substituted one, then runs unchanged; :func:`~cfruntime.flow.row_subset.pad_rows`)
        self.rows_traversed = False
        self.pad_rows = False

    # -- sizes and inputs ----------------------------------------------------------------------------
    def traverse_cap(self) -> int:
        """The most steps a per-neuron traverse loop may take on this network (the interpreter's cap)."""
        return contract.traverse_step_cap(self.store.total)

    def size(self, expr: str) -> int:
        out = 1
        for f in expr.split("*"):
            out *= int(f) if f.isdigit() else self.rows.numel() if f == "curr" and self.in_rows else self._sizes[f]
        return out

    def _layer_neurons(self, k: int, dim: int, rank: int) -> Neurons:
        return Neurons(self.layout.offsets[k], self.layout.sizes[k], dim, rank)

    def input(self, name: str):
        layer = self.layer
        if name == "curr":
            return self._layer_neurons(layer.index, 1, 2)
        if name == "curr_list":
            return self._layer_neurons(layer.index, 2, 3)
        if name == "prev":
            if layer.kind == "affine":
                return self._layer_neurons(layer.preds[0], 2, 3)
            if layer.kind == "maxpool":
                return self._windows()[0]
            if len(layer.preds) == 1:
                return self._layer_neurons(layer.preds[0], 1, 2)
            raise NotImplementedError("the list 'prev' of a binary operator is not supported by the compiled engine")
        if name in ("prev_0", "prev_1"):
            return self._layer_neurons(layer.preds[int(name[-1])], 1, 2)
        if name == "prev_mask":
            return self._windows()[1]
        if name == "weight":
            return parameters.weight(layer, self.rep)
        if name == "bias":
            return parameters.bias(layer, self.rep)
        if name == "alpha":
            return parameters.alpha(layer, self.rep)
        raise KeyError(f"unknown rule input '{name}'")

    def _windows(self) -> tuple[Window, object]:
        """A max-pool layer's windows ``[1, curr, K]`` (padding entries repeat a neuron of their
        window) and the mask of the entries that are neurons (``True`` when no window is cut by
        padding), made once per layer and device."""
        layer = self.layer
        pred, size = self.layout.offsets[layer.preds[0]], self.layout.sizes[layer.preds[0]]
        # kept on the pooling spec, which copies of the network share (their layers may lie elsewhere)
        cache = layer.maxpool.__dict__.setdefault("_engine_windows", {})
        key = (self.rep.device, pred, size)
        hit = cache.get(key)
        if hit is None:
            index, present = layer.maxpool.dense_windows()
            window = Window((index + pred).unsqueeze(0).to(self.rep.device), pred, size)
            mask = True if bool(present.all()) else present.unsqueeze(0).to(self.rep.device)
            hit = cache[key] = (window, mask)
        return hit

    def param(self, n: Neurons, name: str, scale: bool = False):
        """``n[name]`` for an optimisable parameter, as read by this layer's rule
        (:func:`cfruntime.flow.param_reads.read`; ``scale``: the value is only a scale of
        ``substitute_scaled``)."""
        from cfruntime.flow import param_reads  # noqa: PLC0415 - it builds contexts of other layers

        return param_reads.read(self, n, name, scale)

    # -- neuron sets -----------------------------------------------------------------------------------
    def all_neurons(self, rank: int) -> Neurons:
        return Neurons(0, self.store.total, rank, rank + 1)

    def all_noise(self, rank: int) -> Neurons:
        return Neurons(0, self.sym_total, rank, rank + 1, noise=True)

    def fresh_noise(self) -> Neurons:
        n = self.layer.size
        start = self.sym_next
        if start + n > self.sym_total:
            raise RuntimeError("more fresh noise symbols than were allocated for this rule")
        self.sym_next += n
        return Neurons(start, n, 1, 2, noise=True)

    def _spread(self, x, n: Neurons, trailing: int):
        """A ``[B, count, *trail]`` tensor laid out like ``n``: ``[B, 1.., count@dim, 1.., *trail]``."""
        for d in range(1, n.dim):
            x = gb.add_dim(x, d)
        for d in range(n.dim + 1, n.rank):
            x = gb.add_dim(x, d)
        return x

    def access(self, n: Neurons, member: str):
        if isinstance(n, Window):
            return self._access_window(n, member)
        if n.noise:
            raise RuntimeError("noise symbols have no members")
        net = self.network
        if member in ("layer", "last_layer"):
            last = len(net.layers) - 1
            value = (lambda k: float(k)) if member == "layer" else (lambda k: float(k == last))
            return self.rep.per_layer_constant(net.layers, n, value)
        letter = self.store.members[member]
        k = _layer_containing(net, n.start, n.count)
        if k is None:
            return self._access_global(n, member, letter)
        # a stored member of one layer seen through the neurons' layout: stored values never change
        key = (k, member, n.start, n.count, n.dim, n.rank, self.sym_total if letter == "S" else 0)
        hit = self.store.views.get(key)
        if hit is None:
            hit = self.store.views[key] = self._access_layer(n, member, letter, k)
        return hit

    def _access_window(self, n: Window, member: str):
        """A member of every neuron of a window list: the stored values of its layer, gathered
        (``[B, *window shape, width]`` coefficients for PolyExp/SymExp members)."""
        k = _layer_containing(self.network, n.start, n.count)
        if member in ("layer", "last_layer"):
            return float(k) if member == "layer" else float(k == len(self.network.layers) - 1)
        letter = self.store.members[member]
        # keyed like a layer's other views, so that releasing the layer's member drops it too
        key = (k, member, "window", id(n.index), n.shape, self.sym_total if letter == "S" else 0)
        hit = self.store.views.get(key)
        if hit is not None and hit[0] is n.index:
            return hit[1]
        stored = self.store.get(k, member)
        idx = n.local()
        lead = n.shape[1:]
        if letter == "S":
            stored = self.store.pad_sym(stored, self.sym_total)
        if letter in "PS":
            coeff = stored.coeff if stored.coeff is not None else self.rep.zeros((self.batch, n.count, self._width(letter)))
            rows = WindowRows((max(self.batch, coeff.shape[0]), *lead, coeff.shape[-1]),
                              lambda: self._gather_coeff(coeff, idx, lead),
                              lambda w: self._window_weighted(w, coeff, n, idx, lead))
            out = Affine(rows, _gather(stored.const, idx, lead))
        else:
            out = _gather(stored, idx, lead)
        self.store.views[key] = (n.index, out)
        return out

    def _window_weighted(self, w, coeff, n: Window, idx: torch.Tensor, lead: tuple):
        """``sum_k w[b, i, k] * coeff[b, window(i, k), :]``: the window weights as one patches block
        ``[B, out, n]`` on the window's layer times its stored coefficients ``[B, n, W]`` (segment by
        segment when they are segmented), so the coefficients are never gathered per entry."""
        w = gb.to_dense(w) if not isinstance(w, torch.Tensor) else w
        full = torch.broadcast_shapes(tuple(w.shape), (1, *lead))
        patches = None
        if len(full) == 3 and self.layer.kind == "maxpool" and tuple(full[1:]) == tuple(lead):
            b = max(full[0], coeff.shape[0])
            patches = self.rep.pool_weights(w.expand(b, *full[1:]), self.layer.maxpool, 0, n.count)
        if patches is None:  # the gathered rows, weighted
            rows = self._gather_coeff(coeff, idx, lead)
            return gb.reduce_sum(gb.binary(rows, gb.add_dim(w, len(full)), "mul"), len(full) - 1)
        if isinstance(coeff, Segmented):
            parts = {}
            for s, p in coeff.parts.items():
                extent = (p.shape[0], n.count, p.shape[2])
                part = gb.SparseTensor(extent, 0.0, [((0, 0, 0), _part_block(p, extent))], dtype=coeff.dtype, device=coeff.device)
                parts[s] = _as_part(gb.inner(patches, part, -2))
            return Segmented((patches.shape[0], lead[0], coeff.shape[-1]), 2, parts, coeff.dtype, coeff.device)
        return gb.inner(patches, coeff, -2)

    def _gather_coeff(self, coeff, idx: torch.Tensor, lead: tuple):
        """Rows ``idx`` of coefficients ``[B, n, W]`` laid out as ``[B, *lead, W]``: a segmented
        tensor keeps its segments (each gathered densely), others are gathered densely."""
        if isinstance(coeff, Segmented):
            parts = {}
            for s, p in coeff.parts.items():
                d = part_dense(p)
                d = d.expand(d.shape[0], coeff.shape[1], d.shape[2])
                parts[s] = d.index_select(1, idx).reshape(d.shape[0], *lead, d.shape[2])
            b = max([coeff.shape[0]] + [p.shape[0] for p in parts.values()])
            return Segmented((b, *lead, coeff.shape[-1]), len(lead) + 1, parts, coeff.dtype, coeff.device)
        d = gb.to_dense(coeff)
        return self.rep.tensor(d.index_select(1, idx).reshape(d.shape[0], *lead, d.shape[2]))

    def _access_layer(self, n: Neurons, member: str, letter: str, k: int):
        layer = self.network[k]
        lo = n.start - layer.offset
        stored = self.store.get(k, member)
        if letter == "S":
            stored = self.store.pad_sym(stored, self.sym_total)
        if letter in "PS":
            coeff = stored.coeff if stored.coeff is not None else self.rep.zeros((self.batch, layer.size, self._width(letter)))
            return Affine(self._view(coeff, n, lo, 1), self._view(stored.const, n, lo, 0))
        return self._view(stored, n, lo, 0)

    def _view(self, x, n: Neurons, lo: int, trailing: int):
        """``x`` (a stored tensor) sliced to ``n`` and laid out like it, made once per stored value
        (so members that hold one value, DeepPoly's ``L`` and ``U`` of an affine layer, share it)."""
        if isinstance(x, (int, float)):
            return x
        key = ("view", id(x), lo, n.count, n.dim, n.rank, trailing)
        hit = self.store.views.get(key)
        if hit is None or hit[0] is not x:
            def make(t):
                return self._spread(_slice(t, lo, n.count) if trailing == 0 else gb.slice_range(t, 1, lo, lo + n.count), n, trailing)

            # a constant's view (a layer's bias) is kept on it, for every later run too: its own kept views
            # (seg_ops' columns of it) then outlive the run as well
            view = kept_view(x, key[2:], make) if is_constant(x) else make(x)
            hit = self.store.views[key] = (x, view)
        return hit[1]

    def _access_global(self, n: Neurons, member: str, letter: str):
        if self.rep.planned and letter not in "PS":
            # per layer, the cached view of the stored values: a segmented tensor without a copy
            # (made when read: a product against one layer's weights reads that layer's part only)
            # (and flat, without the unit dimension before the neurons': the stored values as they are,
            # for a kernel that would squeeze it away again, seg_ops.interval_inner)
            offsets, sizes = self.layout.offsets, self.layout.sizes
            dim, rank, end = n.dim, n.rank, n.start + n.count
            # the layers before this one (a rule run late, flow.deferred, sees the store as it was then)
            keys = {offsets[k] - n.start: k for k in sorted(self.store.values[member])
                    if k < self.layer.index and n.start <= offsets[k] and offsets[k] + sizes[k] <= end}

            def make(k, d=dim, r=rank):
                return self.access(Neurons(offsets[k], sizes[k], d, r), member)

            flat = functools.partial(make, d=dim - 1, r=rank - 1) if dim >= 2 and rank == dim + 1 else None
            parts = LazyParts(keys, make, flat)
            shape = list(n.shape)
            shape[0] = self.batch
            return Segmented(shape, n.dim, parts, self.rep.dtype, self.rep.device)
        glob = self.store.global_member(member, self.sym_total)
        if letter in "PS":
            coeff = gb.slice_range(glob.coeff, 1, n.start, n.start + n.count)
            return Affine(self._spread(coeff, n, 1), self._spread(glob.const[:, n.start : n.start + n.count], n, 0))
        return self._spread(gb.slice_range(glob, 1, n.start, n.start + n.count), n, 0)

    def _width(self, letter: str) -> int:
        return self.store.total if letter == "P" else self.sym_total

    def layer_value(self, n: Neurons, member: str) -> float:
        """``layer``/``last_layer`` of neurons that all lie in one layer, as a host number (the compiler
        calls such a value uniform)."""
        k = _layer_containing(self.network, n.start, n.count)  # a Window's neurons lie in one layer
        if k is None:
            raise RuntimeError(f"'{member}' of neurons from several layers is not one number")
        return float(k) if member == "layer" else float(k == len(self.network.layers) - 1)

    # -- layer-granular traverse ---------------------------------------------------------------------
    def layer_neurons(self, k: int, rank: int) -> Neurons:
        """The neurons of layer ``k`` laid out along the last of ``rank`` dimensions."""
        return Neurons(self.layout.offsets[k], self.layout.sizes[k], rank - 1, rank)

    def traverse_layers(self, e: Affine, priority, replace, rank: int) -> Affine:
        """``cftensor.layer_traverse`` (:meth:`_traverse_layers`), on the rows ``self.rows`` of ``e``
        only when they are set (:mod:`cfruntime.flow.row_subset`)."""
        if self.rows is None:
            return self._traverse_layers(e, priority, replace, rank)
        from cfruntime.flow.row_subset import select_rows  # noqa: PLC0415 - only row runs need it

        self.in_rows = True
        try:
            out = self._traverse_layers(select_rows(e, self.rows), priority, replace, rank)
        finally:
            self.in_rows = False
        self.rows_traversed = True
        if self.pad_rows:
            from cfruntime.flow.row_subset import pad_rows  # noqa: PLC0415

            return pad_rows(out, self.rows, self.layer.size)
        return out

    def _traverse_layers(self, e: Affine, priority, replace, rank: int) -> Affine:
        """``cftensor.layer_traverse``: substitute whole layers of ``e`` in priority order.

        ``priority(neurons)`` gives a layer's (priority, stop) as host numbers (computed once per
        layer); ``replace(neurons, c)`` the PolyExp that replaces the summands ``c`` (the coefficients
        of ``e`` on that layer, ``[batch, curr, layer size]``).  Each step takes the layers ``e`` may
        still hold (:meth:`Representation.layers_in`, decided from its structure, never its values)
        whose stop is false, picks those of minimal priority, removes their summands and adds their
        replacements; it ends when no such layer is left."""
        coeff, const = e.coeff, e.const
        offsets, sizes = self.layout.offsets, self.layout.sizes
        known: dict[int, tuple] = {}
        for _ in range(4 * len(offsets) + 8):
            cands = []
            for k in self.rep.layers_in(coeff, self.layout, self.layer.index):
                if k not in known:
                    with self._laying(k):
                        p, stop = priority(self.layer_neurons(k, rank))
                    known[k] = (p, bool(stop))
                p, stop = known[k]
                if not stop:
                    cands.append((p, k))
            if not cands:
                return Affine(coeff, const)
            best = min(p for p, _ in cands)
            chosen = [k for p, k in cands if p == best]
            taken = [(k, self.rep.take_range(coeff, offsets[k], sizes[k])) for k in chosen]
            coeff = self.rep.drop_ranges(coeff, [(offsets[k], sizes[k]) for k in chosen])
            for k, c in taken:
                with self._laying(k):
                    r = replace(self.layer_neurons(k, rank), c)
                if r.coeff is not None:
                    coeff = r.coeff if coeff is None else gb.binary(coeff, r.coeff, "add")
                const = _add(const, r.const)
        raise RuleError("a layer-granular traverse did not finish (does the replacement re-introduce the layer it replaces?)")

    def _laying(self, k: int) -> "_Laying":
        """While a traverse step runs on layer ``k``: ``ctx.size('lay')`` is its size."""
        return _Laying(self._sizes, self.layout.sizes[k])

    # -- PolyExp/SymExp constructors -----------------------------------------------------------------
    def dot(self, n: Neurons, w) -> Affine:
        """``neurons.dot(weights)``: the weights become coefficients at the neurons' indices (for
        max-pool window lists, added up at each window's neurons: one patches block on their layer,
        or a dense one where the windows are not patches)."""
        if isinstance(n, Window):
            w = gb.to_dense(w) if not isinstance(w, torch.Tensor) else w
            full = torch.broadcast_shapes(tuple(w.shape), n.shape)
            if len(full) == 3 and self.layer.kind == "maxpool" and n.shape[1:] == full[1:]:
                patches = self.rep.pool_weights(w.expand(full), self.layer.maxpool, n.start, self.store.total)
                if patches is not None:
                    return Affine(patches, 0.0)
            idx = (n.index - n.start).expand(full)
            coeff = torch.zeros(full[:-1] + (n.count,), dtype=self.rep.dtype, device=self.rep.device)
            coeff.scatter_add_(len(full) - 1, idx, w.to(self.rep.dtype).expand(full))
            return Affine(self.rep.embed(coeff, len(full) - 1, n.start, self.store.total), 0.0)
        coeff = self.rep.embed(w, len(w.shape) - 1, n.start, self.store.total)
        return Affine(coeff, 0.0)

    def neuron_to_poly(self, n: Neurons) -> Affine:
        if isinstance(n, Window):  # one-hot rows over the window's layer (a scatter: no value check)
            idx = (n.index - n.start).unsqueeze(-1)
            oh = torch.zeros(n.shape + (n.count,), dtype=self.rep.dtype, device=self.rep.device).scatter_(-1, idx, 1.0)
            return Affine(self.rep.embed(oh, oh.dim() - 1, n.start, self.store.total), 0.0)
        return Affine(self._one_hot(n, self.store.total), 0.0)

    def noise_to_sym(self, n: Neurons) -> Affine:
        return Affine(self._one_hot(n, self.sym_total), 0.0)

    def _one_hot(self, n: Neurons, total: int):
        lead = (1,) * n.dim
        x = self.rep.one_hot(lead, n.count, n.start, total)
        for d in range(n.dim + 1, n.rank):
            x = gb.add_dim(x, d)
        return x


def _layer_containing(net, start: int, count: int) -> int | None:
    return layout_of(net).containing(start, count)


class _Laying:
    """Sets ``sizes['lay']`` for the duration of a ``with`` block (nested traverses restore it)."""

    __slots__ = ("sizes", "size", "old")

    def __init__(self, sizes: dict, size: int) -> None:
        self.sizes, self.size = sizes, size

    def __enter__(self) -> None:
        self.old = self.sizes.get("lay")
        self.sizes["lay"] = self.size

    def __exit__(self, *exc) -> None:
        self.sizes["lay"] = self.old


def _add(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a + b
    if isinstance(b, (int, float)) and b == 0:
        return a
    if isinstance(a, (int, float)) and a == 0:
        return b
    return gb.binary(a, b, "add")


def _as_part(x):
    """A product as a segment's part: its one block when it covers the whole extent (patches @
    diagonal stays patches), else dense."""
    if gb.is_sparse(x) and len(x.blocks) == 1 and x.background == 0:
        start, block = x.blocks[0]
        if not any(start) and tuple(block.shape) == tuple(x.shape):
            return block
    return gb.to_dense(x)


def _part_block(p, extent):
    """A segment's part (a broadcastable dense tensor or a block) as one block of ``extent``."""
    return part_as_block(p.expand(extent) if isinstance(p, torch.Tensor) else p, extent)


def _gather(x, idx: torch.Tensor, lead: tuple):
    """Columns ``idx`` of a stored ``[B, n]`` value (a number stays a number) as ``[B, *lead]``."""
    if isinstance(x, (int, float)):
        return x
    d = gb.to_dense(x)
    return d.index_select(1, idx).reshape(d.shape[0], *lead)


def _slice(x, lo: int, count: int):
    if isinstance(x, (int, float)):
        return x
    if x.shape[1] == count and lo == 0:
        return x
    return gb.slice_range(x, 1, lo, lo + count)
