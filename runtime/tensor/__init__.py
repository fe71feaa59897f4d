"""g-BSCR runtime tensors (``cfruntime.tensor``).

A tensor is ``T = (d, S, B, Z)``: background ``d``, blocks ``B`` at starts
``S`` and shape ``Z`` (:class:`SparseTensor`).  Block kinds: :class:`DenseBlock`,
:class:`DiagonalBlock`, :class:`RepeatBlock`, :class:`ConstantBlock`,
:class:`ConvBlock`, :class:`PatchesBlock`, :class:`SelectBlock`.  The functional API (see
:mod:`cfruntime.tensor.api`) accepts g-BSCR tensors and plain torch tensors
alike.  Depends only on torch and numpy.
"""

from .api import (  # noqa: F401
    add_dim, all, any, binary, cat, clamp, embed_range, expand, expand_dim, from_dense, inner,
    is_segmented, is_sparse, nbytes, permute, reduce_sum, remove_dim, repeat, shape, slice_range, to_dense,
    transpose, unary, where,
)
from .block_base import Block, absent_zero_semantics  # noqa: F401
from .masked_reduce import masked_extremum  # noqa: F401
from .block_conv import ConvBlock  # noqa: F401
from .block_diagonal import DiagonalBlock  # noqa: F401
from .block_patches import PatchesBlock  # noqa: F401
from .block_select import SelectBlock  # noqa: F401
from .block_repeat import ConstantBlock, DenseBlock, RepeatBlock, make_bcast_block  # noqa: F401
from .kept_columns import KeptColumns  # noqa: F401
from .segmented import Segmented  # noqa: F401
from .sparse_tensor import SparseTensor  # noqa: F401
