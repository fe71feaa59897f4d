"""A size-1 dimension added and taken away again with one operation, not two.

``add_dim`` of a plain tensor is an ``unsqueeze`` (a view: one dispatcher operation, CPU time for each
call); the segmented kernels often take that dimension away again -- a ReLU rule's mask ``m [B, n]``
is given a poly dimension (``add_dim(m, 2)`` -> ``[B, n, 1]``) and multiplied into a diagonal block,
whose core is ``[B, n]``: the kernel squeezes it back.  :func:`unsqueezed` records on the view it makes
which dimension it added and to what; :func:`squeezed` of that view at that dimension returns the
original tensor (no operation), any other tensor or dimension gets a ``squeeze``::

    u = unsqueezed(m, 2)        # m.unsqueeze(2), remembered
    squeezed(u, 2) is m         # True: nothing dispatched
    squeezed(u, 0)              # u.squeeze(0): an ordinary squeeze

The original and the view share their data (a view), so handing back the original is the same
values, and autograd sees the same graph (the original is what the view was made from).
"""

from __future__ import annotations

import torch

_KEY = "_cf_unsqueezed_from"


def unsqueezed(a: torch.Tensor, dim: int) -> torch.Tensor:
    """``a.unsqueeze(dim)``, remembering ``a`` for :func:`squeezed`."""
    out = a.unsqueeze(dim)
    out.__dict__[_KEY] = (dim % out.dim(), a)
    return out


def squeezed(t: torch.Tensor, dim: int) -> torch.Tensor:
    """``t.squeeze(dim)``: the tensor :func:`unsqueezed` made ``t`` from when ``dim`` is the dimension it
    added (no operation), else a ``squeeze``."""
    hit = t.__dict__.get(_KEY)
    if hit is not None and hit[0] == dim % t.dim():
        return hit[1]
    return t.squeeze(dim)
