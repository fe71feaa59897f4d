"""Parts of a :class:`~cfruntime.tensor.segmented.Segmented` tensor made on first read.

A rule that reads a Float member of *every* neuron before the current layer (``prev.dot(W)`` over the
global neuron range, :meth:`cfruntime.flow.context.LayerContext.access`) gets one part per stored layer,
and each part is a view of the stored values in the rule's layout (one ``unsqueeze`` each); the
product against ``W`` then reads the predecessor's part only.  :class:`LazyParts` keeps a maker per
segment and calls it the first time the part is read, so the views nobody reads are never made::

    stored = {0: l0, 1: l1}
    parts = LazyParts({0: 0, 784: 1}, lambda k: stored[k].unsqueeze(1))     # segment start: layer
    Segmented((10, 1, 884), 2, parts, torch.float32, "cpu").parts.get(784)   # makes one view

It is a read-only mapping: iterating its items (a copy, ``map_parts``) makes every part, as a dict
would hold them.

A part laid out ``[B, 1, w]`` may also be read *flat*, ``[B, w]`` (:meth:`LazyParts.flat`, from a
second maker: the stored values themselves, no ``unsqueeze``), by a kernel that would take the unit
dimension away again (IBP's interval product: ``conv2d`` of the images, ``mm`` of the rows)::

    parts = LazyParts({0: 0, 784: 1}, lambda k: stored[k].unsqueeze(1), flat=stored.__getitem__)
    parts.flat(784) is l1                                   # True: nothing dispatched
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Callable


class LazyParts(Mapping):
    """``{segment start: part}`` whose parts are ``make(keys[start])``, made when first read (one
    function and a dict of keys: a rule reads such a mapping per layer, so it is cheap to make)."""

    __slots__ = ("_keys", "_make", "_flat", "_made")

    def __init__(self, keys: dict[int, object], make: Callable, flat: Callable | None = None):
        self._keys = keys
        self._make = make
        self._flat = flat
        self._made: dict = {}

    def flat(self, start):
        """The part at ``start`` without its unit row dimension (the one before the segmented one), or
        None where no flat maker was given or no part starts there (the maker keeps what it makes: the
        context's views)."""
        key = self._keys.get(start)
        return None if key is None or self._flat is None else self._flat(key)

    def __getitem__(self, start):
        made = self._made
        if start not in made:
            made[start] = self._make(self._keys[start])  # KeyError for a start without a part, as a dict
        return made[start]

    def __contains__(self, start) -> bool:
        return start in self._keys

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)
