"""Split constraints in the bound (beta-CROWN's Lagrangian), for any certifier, by a network transformation.

A ReLU split of a subdomain says ``s_i z_i >= 0`` for a pre-activation neuron ``z_i`` (``s_i = +1``: active,
``-1``: inactive).  For multipliers ``beta_i >= 0`` and every point ``x`` of the subdomain,

    f_r(x)  >=  f_r(x) - sum_i beta_ri s_i z_i(x)  =:  g_r(x)        (each term subtracted is >= 0 there)

so any lower bound of ``g_r`` over the relaxation the certifier sees is a lower bound of the property row
``f_r`` on the subdomain; ``beta = 0`` gives back ``f_r``.  Instead of teaching one certifier's
back-substitution about ``beta`` (beta-CROWN's way), the driver hands the certifier a network whose last
layer *is* ``g``: the margin network followed, for every split layer ``k``, by a per-row affine layer
``w_k = -beta_k * s_k`` (``[P, R, n_k]``, the engine's batched affine) reading ``z_k``, and an addition::

    ... -> z_k -> ... -> f (margins, layer L)
    L' = affine_batched(z_k; W = -beta_k * s_k)      # [P, R]: -sum_i beta_ri s_i z_i
    g  = add(f, L')                                   # one affine + add per split layer

A polyhedral certifier (DeepPoly, CROWN-IBP's back-substitution, SkipPoly, a user's spec) back-substitutes
``g`` symbolically, so the term meets ``z_k``'s own coefficients and changes the whole bound -- exactly
beta-CROWN's ``+ beta^T S z`` in the back-substitution -- and the gradient of the bound with respect to
``beta`` flows through the compiled engine.  The new layers between ``f`` and ``g`` need no bounds of their
own: they are given (replaced by) huge placeholder bounds, so no rule computes them.  Whether a certifier
carries the term symbolically is found out, not assumed (:func:`carries_term`): with ``beta = 0`` its
bound of ``g`` must equal its bound of ``f``; a certifier that concretises ``f`` and ``L'`` separately
(interval arithmetic at the addition) would lose everything, and BaB then runs without beta.

Soundness needs only ``beta >= 0`` and the sign ``s`` of the domain's own splits (``s = 0``: no term): the
weights ``-beta * s`` are computed exactly in floating point (a sign change and a product by 1).

A cut of an S-curve neuron (:mod:`cfmlir.bab.branching`) says ``s_i (z_i - t_i) >= 0`` for its point ``t_i``
(``s_i = +1``: ``z_i >= t_i``, the interval's lower end; ``-1``: ``z_i <= t_i``, its upper end), so its term is
``-beta_ri s_i (z_i - t_i)``: the same weights and the bias ``sum_i beta_ri s_i t_i`` (a ReLU split is the
case ``t = 0``).  A smaller bias only loosens the bound, so the computed sum is rounded down by a bound of
its rounding error (``(n + 2) eps sum |beta t|``, ``n`` terms).
"""

from __future__ import annotations

import torch

from cfruntime.flow.overrides import BoundOverride
from cfruntime.network.graph import Layer, Network, _copy_layer


def beta_key(k: int) -> str:
    return f"beta{k}"


def placeholder(dtype: torch.dtype) -> float:
    """A finite bound of every value of the new layers (a few of them added stay finite)."""
    return torch.finfo(dtype).max / 2 ** 16


def lagrangian_network(mnet: Network, weights: dict, biases: dict | None = None) -> Network:
    """``mnet`` (the margin network, ``R`` rows) followed by ``g = f + sum_k (W_k z_k + c_k)`` (``weights``:
    ``{k: W_k [P, R, n_k]}``, one entry per split layer's pre-activation layer ``k``; ``biases``: ``{k: c_k
    [P, R]}`` for the layers with cut points, others 0); the layers of ``mnet`` keep their indices, the new
    ones follow (see the module docstring)."""
    layers = [_copy_layer(l) for l in mnet.layers]
    rows = mnet.layers[-1].size
    cur = mnet.layers[-1].index
    biases = biases or {}
    for k, w in weights.items():
        i = len(layers)
        bias = biases[k] if k in biases else torch.zeros(w.shape[0], rows, dtype=w.dtype)
        layers.append(Layer(index=i, kind="affine", shape=(rows,), preds=[k], name=f"beta{k}", linear_kind="dense",
                            weight=w, bias=bias))
        layers.append(Layer(index=i + 1, kind="add", shape=(rows,), preds=[cur, i], name=f"lagrangian{k}"))
        cur = i + 1
    return Network(layers, source=mnet.source, notices=mnet.notices, input_name=mnet.input_name)


def last_layer_index(mnet: Network, split_layers) -> int:
    """The index of the last layer (``g``) of :func:`lagrangian_network` for ``mnet`` and these split layers
    (an affine and an add per split layer follow ``mnet``'s layers)."""
    return mnet.layers[-1].index + 2 * len(split_layers)


def new_layer_overrides(mnet: Network, lnet: Network, batch: int, dtype: torch.dtype) -> dict:
    """Bound overrides for the layers ``lnet`` adds and for ``mnet``'s last layer: every one of them but the
    last replaced by the placeholder bounds, the last's upper bounds (not wanted) too."""
    big = placeholder(dtype)
    out = {}
    last = lnet.layers[-1].index
    for layer in lnet.layers[mnet.layers[-1].index:]:
        up = torch.full((batch, layer.size), big, dtype=dtype)
        if layer.index == last:
            out[layer.index] = BoundOverride(upper=up, replace="upper")
        else:
            out[layer.index] = BoundOverride(-up, up, replace=True)
    return out


def split_weights(betas: dict, signs: dict) -> dict:
    """``{k: -beta_k * s_k}`` (``betas[k]`` ``[P, R, n_k]`` >= 0, ``signs[k]`` ``[P, n_k]`` in {-1, 0, 1})."""
    return {k: -(b * signs[k].to(b.dtype).unsqueeze(1)) for k, b in betas.items()}


def cut_biases(betas: dict, signs: dict, points: dict) -> dict:
    """``{k: sum_i beta_ki s_ki t_ki}`` ``[P, R]``, rounded down (see the module docstring), for the layers of
    ``points`` (``{k: t_k [P, n_k]}``, the cut points of S-curve neurons)."""
    out = {}
    for k, t in points.items():
        if k not in betas:
            continue
        b = betas[k]
        st = (signs[k].to(b.dtype) * t.to(b.dtype)).unsqueeze(1)  # [P, 1, n]: exact (a sign times t)
        n = st.shape[-1]
        err = (n + 2) * torch.finfo(b.dtype).eps * (b.abs() * st.abs()).sum(2) + n * torch.finfo(b.dtype).tiny
        out[k] = (b * st).sum(2) - err
    return out


def project(raw: torch.Tensor, split: torch.Tensor) -> torch.Tensor:
    """The multipliers a raw optimisation variable stands for: ``>= 0``, and 0 where nothing is split."""
    return raw.clamp(min=0) * (split != 0).to(raw.dtype).unsqueeze(1)
