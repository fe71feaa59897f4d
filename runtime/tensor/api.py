"""Public functional API of the g-BSCR runtime (what emitted code calls).

Every function accepts :class:`SparseTensor`, plain ``torch.Tensor`` or Python
scalars for every tensor argument.  If any argument is a ``SparseTensor`` the
result is a ``SparseTensor`` (dense arguments are wrapped as one dense block);
otherwise the plain torch operation runs and a ``torch.Tensor`` is returned --
so one emitted program runs both sparse and dense (no-sparsity ablation).
Device and dtype follow the inputs (torch promotion rules; Python floats take
the dtype of the tensor they meet).

=============================================  ===============================================
``binary(a, b, op)``                           elementwise, torch broadcasting; ``op`` in
                                               add sub mul div min max lt le gt ge eq ne and or
                                               xor pow
``unary(a, op)``                               neg not abs relu sigmoid tanh exp log sqrt square
                                               sign floor ceil reciprocal isnan isinf
``where(c, a, b)``                             ``c ? a : b`` (``c`` cast to bool)
``clamp(a, min=None, max=None)``               ``min(max(a, min), max)``
``add_dim(a, dim)`` / ``remove_dim(a, dim)``   unsqueeze / squeeze a size-1 dim
``expand_dim(a, dim, size)``                   size-1 dim -> ``size`` (logical repeat)
``expand(a, shape)``                           torch ``expand`` semantics
``repeat(a, dim, times)``                      ``cat([a] * times, dim)``
``reduce_sum(a, dim, keepdim=False)``          sum over one dim
``inner(a, b, dim_b=-2)``                      contract last dim of ``a`` with dim ``dim_b``
                                               of ``b``; ``torch.matmul`` batching/broadcast
``slice_range(a, dim, start, stop)``           ``a[..., start:stop, ...]`` along ``dim``
``embed_range(a, dim, start, total, fill)``    inverse of ``slice_range``: place ``a`` at
                                               ``start`` in a size-``total`` dim
``permute(a, perm)`` / ``transpose(a, d0, d1)``
``cat(tensors, dim)``
``to_dense(a)`` / ``from_dense(t, background)``
``any(a)`` / ``all(a)``                        Python bools (loop conditions)
``shape(a)``                                   tuple of ints
``nbytes(a)``                                  bytes of stored data
=============================================  ===============================================
"""

from __future__ import annotations

import builtins
import operator
from typing import Sequence

import torch

from . import shape_ops as _sh
from .binary import binary_sparse
from .block_repeat import make_bcast_block
from .clamps import clamp_number
from .masked_grad import divide, multiply
from .matmul import matmul_sparse
from .ops_table import BINARY, UNARY
from .scalars import where_number
from .unit_views import squeezed, unsqueezed
from . import segmented_ops as _seg
from .segmented import Segmented
from .sparse_tensor import SparseTensor, register_operators
from .unary import unary_sparse, where_sparse



def is_sparse(x) -> bool:
    return isinstance(x, SparseTensor)


def is_segmented(x) -> bool:
    return isinstance(x, Segmented)


def _unseg(x):
    """A segmented tensor as a general g-BSCR tensor (the fallback of every operation without a
    segmented fast path); anything else unchanged."""
    return x.to_sparse() if isinstance(x, Segmented) else x


def _dtype_of(x):
    if isinstance(x, (SparseTensor, torch.Tensor, Segmented)):
        return x.dtype
    return None


def _device_of(args):
    for x in args:
        if isinstance(x, (SparseTensor, torch.Tensor, Segmented)):
            return x.device
    return torch.device("cpu")


def _scalar_dtype(v, others) -> torch.dtype:
    like = next((d for d in map(_dtype_of, others) if d is not None), None)
    if isinstance(v, bool):
        return torch.bool
    if isinstance(v, int):
        return like if like is not None and like != torch.bool else torch.int64
    if like is not None and like.is_floating_point:
        return like
    return torch.get_default_dtype()


def _as_torch(x, others, device):
    """A number as a 0-dimensional CPU tensor, which torch broadcasts against tensors on any device
    (no host-to-device copy: a CUDA graph can be captured around it)."""
    if isinstance(x, torch.Tensor):
        return x
    return torch.tensor(x, dtype=_scalar_dtype(x, others))


def _as_sparse(x, others, device) -> SparseTensor:
    if isinstance(x, SparseTensor):
        return x
    if isinstance(x, torch.Tensor):
        if x.dim() == 0:
            return SparseTensor((), x.item(), [], dtype=x.dtype, device=x.device)
        return SparseTensor(x.shape, 0, [((0,) * x.dim(), _block_of_view(x))], dtype=x.dtype, device=x.device)
    return SparseTensor((), x, [], dtype=_scalar_dtype(x, others), device=device)


def _block_of_view(x: torch.Tensor):
    """A dense torch tensor as one block; a broadcast view (stride 0 along some dimensions, as
    ``expand`` makes) becomes a repeat/constant block over its stored core, never a copy."""
    core = x
    for d, (st, n) in enumerate(zip(x.stride(), x.shape)):
        if st == 0 and n > 1:
            core = core.narrow(d, 0, 1)
    return make_bcast_block(core, x.shape)


def _sparse_args(*args):
    dev = _device_of(args)
    sp = [_as_sparse(a, args, dev) for a in args]
    shape = _sh.broadcast_shape(*[s.shape for s in sp])
    return [_sh.broadcast_to(s, shape) for s in sp]


# ------------------------------------------------------------ elementwise
def binary(a, b, op: str):
    if op not in BINARY:
        raise ValueError(f"unknown binary op {op!r}")
    if is_segmented(a) or is_segmented(b):
        out = _seg.binary(a, b, op)
        if out is not NotImplemented:
            return out
        a, b = _unseg(a), _unseg(b)
    if is_sparse(a) or is_sparse(b):
        sa, sb = _sparse_args(a, b)
        return binary_sparse(sa, sb, op)
    if op in _PY_OPERATORS and (isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor)) \
            and (isinstance(a, torch.Tensor) and a.is_floating_point() or isinstance(b, torch.Tensor) and b.is_floating_point()):
        return _PY_OPERATORS[op](a, b)  # a float tensor and a number: no tensor made for the number
    dev = _device_of((a, b))
    ta, tb = _as_torch(a, (b,), dev), _as_torch(b, (a,), dev)
    if op == "div" and not (ta.is_floating_point() or tb.is_floating_point()):
        ta = ta.to(torch.get_default_dtype())
    return BINARY[op](ta, tb)


_PY_OPERATORS = {
    "add": operator.add, "sub": operator.sub, "mul": multiply, "div": divide,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne,
}


def unary(a, op: str):
    if op not in UNARY:
        raise ValueError(f"unknown unary op {op!r}")
    if is_segmented(a):
        out = _seg.unary(a, op)
        if out is not NotImplemented:
            return out
        a = _unseg(a)
    if is_sparse(a):
        return unary_sparse(a, op)
    return UNARY[op](_as_torch(a, (), _device_of((a,))))


def where(c, a, b):
    if is_segmented(c) or is_segmented(a) or is_segmented(b):
        out = _seg.where(c, a, b)
        if out is not NotImplemented:
            return out
        c, a, b = _unseg(c), _unseg(a), _unseg(b)
    if is_sparse(c) or is_sparse(a) or is_sparse(b):
        sc, sa, sb = _sparse_args(c, a, b)
        return where_sparse(sc, sa, sb)
    dev = _device_of((c, a, b))
    tc = _as_torch(c, (), dev)
    tc = tc if tc.dtype == torch.bool else tc.to(torch.bool)
    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor) and isinstance(a, (torch.Tensor, float)) \
            and isinstance(b, (torch.Tensor, float)) and (a if isinstance(a, torch.Tensor) else b).is_floating_point():
        return where_number(tc, a, b)  # a number branch: a kept 0-dimensional tensor
    ta, tb = _as_torch(a, (b,), dev), _as_torch(b, (a,), dev)
    return torch.where(tc, ta, tb)


def clamp(a, min=None, max=None):  # noqa: A002 - mirrors torch.clamp
    if is_segmented(a):
        out = _seg.clamp(a, min, max)
        if out is not NotImplemented:
            return out
        a = _unseg(a)
    if isinstance(a, torch.Tensor) and a.is_floating_point() and not isinstance(min, torch.Tensor) and not isinstance(max, torch.Tensor):
        return clamp_number(a, min, max)
    out = a
    if min is not None:
        out = binary(out, min, "max")
    if max is not None:
        out = binary(out, max, "min")
    return out


# ------------------------------------------------------------ shape ops
def _norm(dim, ndim):
    return dim % ndim if ndim else 0


def add_dim(a, dim: int):
    if is_segmented(a):
        return a.add_dim(dim)
    return _sh.add_dim(a, dim) if is_sparse(a) else unsqueezed(a, dim)


def remove_dim(a, dim: int):
    if is_segmented(a):
        return a.remove_dim(dim)
    if is_sparse(a):
        return _sh.remove_dim(a, dim)
    if a.shape[dim] != 1:
        raise ValueError(f"remove_dim: dim {dim} has size {a.shape[dim]}, not 1")
    return squeezed(a, dim)


def expand_dim(a, dim: int, size: int):
    if is_segmented(a):
        return a.expand_dim(dim, size)
    if is_sparse(a):
        return _sh.expand_dim(a, dim, size)
    shape = list(a.shape)
    shape[dim] = size
    return a.expand(shape)


def expand(a, shape: Sequence[int]):
    if is_segmented(a) and len(shape) == a.ndim:
        for d, n in enumerate(shape):
            a = a.expand_dim(d, n) if n not in (-1, a.shape[d]) else a
        return a
    a = _unseg(a)
    return _sh.expand(a, shape) if is_sparse(a) else a.expand(*shape)


def repeat(a, dim: int, times: int):
    a = _unseg(a)
    if is_sparse(a):
        return _sh.repeat(a, dim, times)
    return torch.cat([a] * times, dim=dim)


def reduce_sum(a, dim: int, keepdim: bool = False):
    if is_segmented(a) and not keepdim:
        out = _seg.reduce_sum(a, dim)
        if out is not NotImplemented:
            return out
    a = _unseg(a)
    return _sh.reduce_sum(a, dim, keepdim) if is_sparse(a) else a.sum(dim, keepdim=keepdim)


def permute(a, perm: Sequence[int]):
    if is_segmented(a):
        return a.permute(perm)
    return _sh.permute(a, perm) if is_sparse(a) else a.permute(*perm)


def transpose(a, d0: int, d1: int):
    if is_segmented(a):
        perm = list(range(a.ndim))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return a.permute(perm)
    return _sh.transpose(a, d0, d1) if is_sparse(a) else a.transpose(d0, d1)


def slice_range(a, dim: int, start: int, stop: int):
    if is_segmented(a):
        return a.slice(dim, start, stop)
    if is_sparse(a):
        return _sh.slice_range(a, dim, start, stop)
    return a.narrow(dim, start, builtins.max(0, stop - start))


def embed_range(a, dim: int, start: int, total: int, fill=None):
    if is_segmented(a) and dim % a.ndim == a.sdim and fill in (None, 0, 0.0):
        shape = list(a.shape)
        shape[a.sdim] = total
        return a.like({s + start: p for s, p in a.parts.items()}, tuple(shape))
    a = _unseg(a)
    if is_sparse(a):
        return _sh.embed_range(a, dim, start, total, fill)
    dim = _norm(dim, a.dim())
    shape = list(a.shape)
    shape[dim] = total
    out = torch.full(shape, 0 if fill is None else fill, dtype=a.dtype, device=a.device)
    out.narrow(dim, start, a.shape[dim]).copy_(a)
    return out


def cat(tensors: Sequence, dim: int):
    tensors = [_unseg(t) for t in tensors]
    if builtins.any(is_sparse(t) for t in tensors):
        dev = _device_of(tensors)
        return _sh.cat([_as_sparse(t, tensors, dev) for t in tensors], dim)
    return torch.cat(list(tensors), dim=dim)


# ------------------------------------------------------------ inner product
def inner(a, b, dim_b: int = -2):
    """Contract the last dim of ``a`` with dim ``dim_b`` of ``b``.

    ``b`` is first permuted so that ``dim_b`` is its second-to-last dim (its
    last dim stays last unless ``dim_b == -1``, in which case the last two dims
    are swapped); then ``torch.matmul`` semantics apply (rank-1 operands are
    treated as vectors, leading dims broadcast)."""
    a, b = _unseg(a), _unseg(b)
    if is_sparse(a) or is_sparse(b):
        dev = _device_of((a, b))
        sa, sb = _as_sparse(a, (b,), dev), _as_sparse(b, (a,), dev)
        return _inner_sparse(sa, sb, dim_b)
    if b.dim() >= 2:
        d = _norm(dim_b, b.dim())
        if d == b.dim() - 1:
            b = b.transpose(-1, -2)
        elif d != b.dim() - 2:
            b = b.movedim(d, -2)
    return torch.matmul(a, b)


def _inner_sparse(a: SparseTensor, b: SparseTensor, dim_b: int) -> SparseTensor:
    if b.ndim >= 2:
        d = _norm(dim_b, b.ndim)
        if d == b.ndim - 1:
            b = _sh.transpose(b, -1, -2)
        elif d != b.ndim - 2:
            perm = [i for i in range(b.ndim) if i != d]
            perm.insert(b.ndim - 2, d)
            b = _sh.permute(b, perm)
    va, vb = a.ndim == 1, b.ndim == 1
    if va:
        a = _sh.add_dim(a, 0)
    if vb:
        b = _sh.add_dim(b, 1)
    out = matmul_sparse(a, b)
    if vb:
        out = _sh.remove_dim(out, -1)
    if va:
        out = _sh.remove_dim(out, -2 if out.ndim >= 2 else 0)
    return out


# ------------------------------------------------------------ conversion
def to_dense(a) -> torch.Tensor:
    return a.to_dense() if is_sparse(a) or is_segmented(a) else a


def from_dense(t: torch.Tensor, background=None) -> SparseTensor:
    return SparseTensor.from_dense(t, background)


def shape(a) -> tuple[int, ...]:
    return tuple(a.shape)


def nbytes(a) -> int:
    a = _unseg(a)
    if is_sparse(a):
        return a.nbytes()
    return a.numel() * a.element_size()


def any(a) -> bool:  # noqa: A001 - API name
    a = _unseg(a)
    if not is_sparse(a):
        return bool(torch.as_tensor(a).any())
    uncovered = a.numel() - a.covered()
    if uncovered > 0 and bool(a.background):
        return True
    return builtins.any(b.any_value(a.background) for _, b in a.blocks)


def all(a) -> bool:  # noqa: A001 - API name
    a = _unseg(a)
    if not is_sparse(a):
        return bool(torch.as_tensor(a).all())
    uncovered = a.numel() - a.covered()
    if uncovered > 0 and not bool(a.background):
        return False
    return builtins.all(b.all_value(a.background) for _, b in a.blocks)


# ``SparseTensor``'s operators (``a + b``, ``-a``, ``a @ b``, ...) are these functions; sparse_tensor
# cannot import this module, which imports it.
register_operators(binary=binary, unary=unary, inner=inner)

__all__ = [
    "SparseTensor", "binary", "unary", "where", "clamp", "add_dim", "remove_dim", "expand_dim",
    "expand", "repeat", "reduce_sum", "permute", "transpose", "slice_range", "embed_range", "cat",
    "inner", "to_dense", "from_dense", "shape", "nbytes", "any", "all", "is_sparse", "is_segmented",
]

