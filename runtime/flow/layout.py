"""Where each layer's neurons lie in the network's global neuron numbering, made once per network.

``Layer.size`` is computed from the layer's shape on every read, and the compiled engine asks which
layer holds a range of neurons thousands of times per certification; this table answers from lists.
"""

from __future__ import annotations

import bisect


class NetworkLayout:
    def __init__(self, network) -> None:
        self.offsets = [l.offset for l in network.layers]
        self.sizes = [l.size for l in network.layers]
        self.total = (self.offsets[-1] + self.sizes[-1]) if self.offsets else 0
        self.layer_at = {off: k for k, off in enumerate(self.offsets)}

    def containing(self, start: int, count: int) -> int | None:
        """The layer whose neurons include ``start .. start + count - 1``, or None."""
        k = bisect.bisect_right(self.offsets, start) - 1
        if k >= 0 and start + count <= self.offsets[k] + self.sizes[k]:
            return k
        return None


def layout_of(network) -> NetworkLayout:
    """The network's layout, kept on the network object (its layers do not change once loaded)."""
    cached = network.__dict__.get("_engine_layout")
    if cached is None or len(cached.offsets) != len(network.layers):
        cached = network.__dict__["_engine_layout"] = NetworkLayout(network)
    return cached
