"""Bounds for some neurons (rows) of a layer only: what ``BoundOverride(rows=...)`` runs.

An optimisation loop needs new bounds only for the neurons whose bounds can still change what follows
(alpha-CROWN's sparse intermediate bounds: the inputs of unstable ReLUs); the others keep bounds given
by the caller.  With ``ctx.rows`` set, a layer's rule runs as for the whole layer, except that every
layer-granular traverse (:meth:`LayerContext.traverse_layers
<cfruntime.flow.context.LayerContext.traverse_layers>`) starts from those rows of its expression only
and the parameters read inside it are those rows' own (:func:`read_rows`).  The rule's Float bounds then
come out for the rows and are written into the given ones (:func:`scatter`).  A rule's values are per
neuron (each neuron's depend on its own row of the layer's metadata and on earlier layers), so a row's
bounds are exactly what the whole-layer rule gives it::

    # an affine layer of 100 neurons, rows = tensor([2, 7]): DeepPoly's back-substitution runs on
    # coefficients [B, 2, W] instead of [B, 100, W];
    # lower = given_lower.index_copy(1, rows, rule_lower_of_the_two_rows)

Algorithm of :func:`select_rows`: the constant's rows are gathered; the coefficients, segmented along
the neurons they sum over, are gathered segment by segment -- a dense segment by ``index_select``, a
convolution's by transposed convolutions of the rows' unit images (only the rows' kernels are made,
never the layer's dense matrix), any other block by its dense form.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cfruntime import tensor as gb
from cfruntime.flow.values import Affine
from cfruntime.tensor import Segmented
from cfruntime.tensor.block_conv import ConvBlock
from cfruntime.tensor.segmented import part_dense


def select_rows(e: Affine, rows: torch.Tensor) -> Affine:
    """Rows ``rows`` (dimension 1) of a layer's PolyExp ``e`` (coefficients ``[B, n, W]``, constant ``[B, n]``)."""
    coeff = e.coeff
    if coeff is not None:
        if isinstance(coeff, Segmented):
            parts = {s: _part_rows(p, rows) for s, p in coeff.parts.items()}
            shape = (coeff.shape[0], rows.numel(), *coeff.shape[2:])
            coeff = Segmented(shape, coeff.sdim, parts, coeff.dtype, coeff.device)
        else:
            coeff = _tensor_rows(gb.to_dense(coeff), rows)
    return Affine(coeff, _tensor_rows(e.const, rows))


def _tensor_rows(t, rows: torch.Tensor):
    """Rows of a tensor along dimension 1 (a size-1 dimension broadcasts: kept; a number stays)."""
    if not isinstance(t, torch.Tensor) or t.dim() < 2 or t.shape[1] == 1:
        return t
    return t.index_select(1, rows)


def _part_rows(p, rows: torch.Tensor):
    if isinstance(p, torch.Tensor):
        return _tensor_rows(p, rows)
    if isinstance(p, ConvBlock) and len(p.shape) == 3:
        return _conv_rows(p, rows)
    return _tensor_rows(part_dense(p), rows)


def _conv_rows(c: ConvBlock, rows: torch.Tensor) -> torch.Tensor:
    """Rows of a convolution's matrix ``[1, r, Ci*Hi*Wi]``: row ``i`` is output ``i``'s kernel laid on the
    input image, the transposed convolution of output ``i``'s unit image."""
    co, ho, wo = c.out_chw
    (hi, wi), (kh, kw), (sh, sw), (ph, pw) = c.in_hw, c.k_hw, c.stride, c.padding
    unit = torch.zeros(rows.numel(), co * ho * wo, dtype=c.weight.dtype, device=c.weight.device)
    unit[torch.arange(rows.numel(), device=rows.device), rows] = 1.0
    out_pad = (hi - ((ho - 1) * sh - 2 * ph + kh), wi - ((wo - 1) * sw - 2 * pw + kw))
    img = F.conv_transpose2d(unit.reshape(-1, co, ho, wo), c.weight, stride=c.stride, padding=c.padding,
                             output_padding=out_pad)
    return img.reshape(1, rows.numel(), -1)


def pad_rows(e: Affine, rows: torch.Tensor, n: int) -> Affine:
    """``e`` computed on ``rows`` (``[B, r, ...]``) laid into a layer of ``n`` rows, the others NaN: a block's
    traverse result that the rule then combines with values of the whole layer (alpha_deeppoly's product:
    ``max(interval bound, back-substituted bound)``).  Only ``rows`` of the bounds that follow are kept
    (:func:`scatter`); an expression member with NaN came from the rows computed (the engine refuses blocks
    then, as for a member of ``r`` rows)."""
    def pad(t):
        if not isinstance(t, torch.Tensor) or t.dim() < 2 or t.shape[1] != rows.numel():
            return t  # a number, or a dimension that broadcasts over the rows
        return t.new_full((t.shape[0], n, *t.shape[2:]), float("nan")).index_copy(1, rows, t)

    return Affine(None if e.coeff is None else pad(gb.to_dense(e.coeff)), pad(e.const))


def read_rows(value, rows: torch.Tensor):
    """The rows of a pair parameter read (``[B, n_curr, n_k]`` tensor, :class:`KeptColumns` or number)."""
    if isinstance(value, gb.KeptColumns):
        kept = value.kept if value.kept.shape[-2] == 1 else value.kept.index_select(-2, rows)
        return gb.KeptColumns(kept, value.held, value.cols)
    return _tensor_rows(value, rows)


def scatter(value, given: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``given`` ``[B, n]`` with the rule's bounds of ``rows`` written in: ``value`` is ``[B, r]`` (from a
    traverse on the rows), or ``[B, n]`` (a rule that computed the whole layer: its rows are taken)."""
    b, n = given.shape
    v = gb.to_dense(value) if not isinstance(value, (int, float)) else torch.full((b, n), float(value))
    v = v.to(given.dtype).to(given.device)
    if v.dim() == 2 and v.shape[1] == n and n != rows.numel():
        v = v.index_select(1, rows)
    return given.index_copy(1, rows, v.expand(b, rows.numel()))


def bounds_in_blocks(rule_on_rows, n: int, size: int, bound_pos: tuple, b: int, dtype, device) -> list:
    """A layer's rule values with its Float bounds (positions ``bound_pos``) computed ``size`` rows at a
    time: ``rule_on_rows(rows)`` runs the rule with its traverses on ``rows`` only (None: its values cannot
    be had that way, or it ran no traverse on the rows, so blocks would save nothing); its other values are
    the whole layer's, whatever the rows (taken from the last block).  What a layer whose back-substitution
    does not fit in memory at once runs: DeepPoly's coefficients ``[B, size, W]`` instead of ``[B, n, W]``;
    each row's bounds are the whole-layer rule's (see the module docstring)."""
    bounds = [torch.full((b, n), float(fill), dtype=dtype, device=device) for fill in ("-inf", "inf")]
    values = None
    for start in range(0, n, size):
        rows = torch.arange(start, min(n, start + size), device=device)
        values = rule_on_rows(rows)
        if values is None:
            return None
        for k, pos in enumerate(bound_pos):
            bounds[k] = scatter(values[pos], bounds[k], rows)
            values[pos] = None  # the block's bounds are in; its tensors can go
    for k, pos in enumerate(bound_pos):
        values[pos] = bounds[k]
    return values
