"""Subdomains as rows of tensors: a batch of domains (:class:`Domains`) and the pool of domains waiting to
be branched (:class:`DomainPool`).

A domain of one input region is a dict of named per-row tensors, the same names for every domain of a
search::

    "value" [P]           the domain's verification value (> 0: verified), see cfmlir.bab.objective
    "rows" [P, R]         the best lower bounds of the property's constraint rows found so far
    "depth" [P]           how many splits made it
    "lo3", "hi3" [P, n3]  bounds of each carried layer (here layer 3) on the domain
    "split3" [P, n3]      ReLU splits of a split layer's pre-activation neurons: +1 active (z >= 0),
                          -1 inactive (z <= 0), 0 not split
    "lb", "ub" [P, n0]    the input box, when input branching made it differ from the region's

(:func:`lo_key`, :func:`hi_key`, :func:`split_key` give the names.)  The pool stores the carried layers'
bounds in float32, a step outward where the cast rounded inward
(:func:`cfruntime.flow.widening.box_to_dtype_exact`: 0 stays 0, so a split neuron stays stable), so every
stored bound is still a bound of its domain; a popped domain has the pushed dtypes again.  Those bounds are
most of a domain's bytes, so the same memory bound holds more domains (cifar10_resnet ``prop_11`` then runs its
300 s where it stopped on memory at 269 s; docs/bab.md, *Smaller rows*).

Bounds of a domain hold on every domain split from it, so children start from their parent's
(:mod:`cfmlir.bab.bounding`).

Algorithm (the pool): preallocated storage with a free list.  :meth:`DomainPool.pop` takes the ``k``
domains with the smallest value (best-first: the domains furthest from being verified, where a
counterexample is likeliest) or, once the pool holds more than its memory bound allows, the deepest ones
(depth-first: their children are closest to being decided, so the pool stops growing); :meth:`push`
writes domains into free rows; the storage is reserved for the whole memory bound (at most 2^20 rows) at the
first push -- virtual memory: only the rows written take memory -- and doubles past that or where that
allocation fails.
"""

from __future__ import annotations

import torch

from cfruntime.flow.widening import box_to_dtype_exact

#: the storage starts with room for this many domains (where the reservation below fails)
_INITIAL_CAPACITY = 1024
#: at most this many rows are reserved at the first push (every push and pop scans a flag per row)
_RESERVED_ROWS = 1 << 20
#: the carried layers' bounds are stored in this dtype (rounded outward)
STORED_BOUND_DTYPE = torch.float32


_LO, _HI, _SPLIT = "lo", "hi", "split"


def lo_key(k: int) -> str:
    return f"{_LO}{k}"


def hi_key(k: int) -> str:
    return f"{_HI}{k}"


def split_key(k: int) -> str:
    return f"{_SPLIT}{k}"


def _bound_pairs(names) -> list[tuple[str, str]]:
    """The ``(lo_key(k), hi_key(k))`` field pairs among ``names``: the carried layers' bounds."""
    names = set(names)
    layers = sorted(int(n[len(_LO):]) for n in names if n.startswith(_LO) and n[len(_LO):].isdigit())
    return [(lo_key(k), hi_key(k)) for k in layers if hi_key(k) in names]


def _bytes_per_row(domains) -> int:
    return sum(v[0].numel() * v.element_size() for v in domains.values())


class Domains(dict):
    """A batch of domains: ``{name: [P, ...] tensor}`` (see the module docstring)."""

    def __len__(self) -> int:  # the number of domains, not of fields
        return int(self["value"].shape[0]) if "value" in self else 0

    def select(self, index) -> "Domains":
        return Domains({k: v[index] for k, v in self.items()})

    def repeat(self, times: int) -> "Domains":
        """Every domain ``times`` times, in blocks: rows ``0..P-1`` are the domains, ``P..2P-1`` again..."""
        return Domains({k: v.repeat(times, *([1] * (v.dim() - 1))) for k, v in self.items()})

    @staticmethod
    def cat(batches) -> "Domains":
        batches = [b for b in batches if len(b)]
        if not batches:
            return Domains()
        return Domains({k: torch.cat([b[k] for b in batches]) for k in batches[0]})


class PoolFull(Exception):
    """The pool cannot take more domains within its memory bound."""


class DomainPool:
    """Domains waiting to be branched (see the module docstring); ``max_bytes`` bounds the storage."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self.store: dict[str, torch.Tensor] = {}
        self.dtypes: dict[str, torch.dtype] = {}  # the pushed dtype of each field (pop gives it back)
        self.alive = torch.zeros(0, dtype=torch.bool)
        self.size = 0
        self.depth_first = False

    def __len__(self) -> int:
        return self.size

    @property
    def capacity(self) -> int:
        return int(self.alive.shape[0])

    @staticmethod
    def _narrowed(domains: Domains) -> Domains:
        """``domains`` as stored: the carried layers' float64 bounds in :data:`STORED_BOUND_DTYPE`, outward."""
        out = Domains(domains)
        for lo, hi in _bound_pairs(domains):
            if torch.finfo(domains[lo].dtype).bits > torch.finfo(STORED_BOUND_DTYPE).bits:
                out[lo], out[hi] = box_to_dtype_exact(domains[lo], domains[hi], STORED_BOUND_DTYPE)
        return out

    @staticmethod
    def row_bytes(like: Domains) -> int:
        """The bytes the pool stores for each domain of ``like``'s fields."""
        return _bytes_per_row(DomainPool._narrowed(like.select(slice(0, 1)))) if len(like) else 0

    def _grow(self, like: Domains, need: int) -> None:
        """Room for ``need`` domains of ``like``'s stored fields."""
        per = _bytes_per_row(like)
        limit = self.max_bytes // max(per, 1)
        if need > limit:
            raise PoolFull(f"{need} domains of {per} bytes each exceed the pool's {self.max_bytes} bytes")
        if self.capacity == 0 and need <= _RESERVED_ROWS and self._reserve(like, min(limit, _RESERVED_ROWS)):
            return
        cap = max(_INITIAL_CAPACITY, self.capacity)
        while cap < need:
            cap *= 2
        cap = min(cap, limit)
        self._allocate(like, cap)

    def _reserve(self, like: Domains, cap: int) -> bool:
        """Storage for the whole bound at once, if the system gives it (untouched pages take no memory, and
        free rows are reused lowest first): the pool then never copies itself to grow -- a doubling copied
        half a gigabyte in 0.9 s, a round ten times longer than the driver's prediction, and at 300 s one
        overran the time limit.  False: no such allocation (the storage then doubles as it fills)."""
        try:
            self._allocate(like, cap)
        except (RuntimeError, MemoryError):
            self.store, self.alive = {}, torch.zeros(0, dtype=torch.bool)
            return False
        return True

    def _allocate(self, like: Domains, cap: int) -> None:
        for k, v in like.items():
            new = torch.empty((cap, *v.shape[1:]), dtype=v.dtype)
            if k in self.store:
                new[:self.capacity] = self.store[k]
            self.store[k] = new
        alive = torch.zeros(cap, dtype=torch.bool)
        alive[:self.capacity] = self.alive
        self.alive = alive

    def push(self, domains: Domains) -> None:
        """Store ``domains`` (:class:`PoolFull` when the memory bound leaves no room)."""
        n = len(domains)
        if n == 0:
            return
        for k, v in domains.items():
            self.dtypes.setdefault(k, v.dtype)
        domains = self._narrowed(domains)
        free = torch.nonzero(~self.alive).reshape(-1)
        if free.numel() < n:
            self._grow(domains, self.size + n)
            free = torch.nonzero(~self.alive).reshape(-1)
        rows = free[:n]
        for k, v in domains.items():
            self.store[k][rows] = v
        self.alive[rows] = True
        self.size += n
        per = _bytes_per_row(domains)
        # past half the memory bound, depth-first keeps the pool from growing further
        self.depth_first = self.size * per > self.max_bytes // 2

    def pop(self, k: int) -> Domains:
        """Remove and return up to ``k`` domains: the smallest values, or the deepest (depth-first)."""
        k = min(k, self.size)
        if k == 0:
            return Domains()
        alive = torch.nonzero(self.alive).reshape(-1)
        if self.depth_first:
            key = self.store["depth"][alive].to(torch.float64) - torch.sigmoid(self.store["value"][alive])
        else:
            key = -self.store["value"][alive]
        rows = alive[torch.topk(key, k).indices]
        out = Domains({name: v[rows].to(self.dtypes[name]) for name, v in self.store.items()})
        self.alive[rows] = False
        self.size -= k
        return out

    def min_value(self) -> float:
        """The smallest value in the pool (inf when empty)."""
        if self.size == 0:
            return float("inf")
        return float(self.store["value"][self.alive].min())
