"""Block overlap analysis: overlap groups, transitive closure, split-or-merge.

A *region* is a tuple of ``(lo, hi)`` half-open ranges, one per dimension.

Given the block regions of several operands, :func:`plan_regions` returns the
output regions of an elementwise operation (paper, "Operations over Sparse
Tensors"):

1. blocks that overlap (share an index) are connected; connected components of
   the overlap graph (its transitive closure) are the *groups*;
2. a group whose regions all coincide except along one dimension is *split*
   along that dimension at every block boundary (pieces covered by no block are
   dropped); any other group is *merged* into its bounding box;
3. if a merged bounding box intersects another group's output regions, the
   two groups are united and planned again, so output regions never overlap.
"""

from __future__ import annotations

from typing import Sequence

Region = tuple[tuple[int, int], ...]


def region_of(start: Sequence[int], shape: Sequence[int]) -> Region:
    return tuple((int(s), int(s) + int(n)) for s, n in zip(start, shape))


def intersect(a: Region, b: Region) -> Region | None:
    out = []
    for (a0, a1), (b0, b1) in zip(a, b):
        lo, hi = max(a0, b0), min(a1, b1)
        if lo >= hi:
            return None
        out.append((lo, hi))
    return tuple(out)


def overlaps(a: Region, b: Region) -> bool:
    """Whether two regions share an index (:func:`intersect` without building the intersection)."""
    for (a0, a1), (b0, b1) in zip(a, b):
        if a1 <= b0 or b1 <= a0:
            return False
    return True


def contains(outer: Region, inner: Region) -> bool:
    return all(o0 <= i0 and i1 <= o1 for (o0, o1), (i0, i1) in zip(outer, inner))


def relative(inner: Region, outer: Region) -> Region:
    return tuple((i0 - o0, i1 - o0) for (i0, i1), (o0, _) in zip(inner, outer))


def bbox(regions: Sequence[Region]) -> Region:
    return tuple((min(r[d][0] for r in regions), max(r[d][1] for r in regions))
                 for d in range(len(regions[0])))


def shape_of(region: Region) -> tuple[int, ...]:
    return tuple(hi - lo for lo, hi in region)


def start_of(region: Region) -> tuple[int, ...]:
    return tuple(lo for lo, _ in region)


class UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            self.parent[max(ri, rj)] = min(ri, rj)

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return list(out.values())


def overlap_groups(regions: Sequence[Region], owners: Sequence[int] | None = None) -> UnionFind:
    """Union-find over regions; regions with the same owner are known disjoint."""
    n = len(regions)
    uf = UnionFind(n)
    # sweep along the dimension where the regions' starts differ most (a layer's neuron range, for
    # per-layer blocks) to avoid most of the O(n^2) pair tests
    ndim = len(regions[0]) if n else 0
    d = max(range(ndim), key=lambda k: len({r[k][0] for r in regions})) if ndim else None
    order = sorted(range(n), key=lambda i: regions[i][d][0]) if ndim else list(range(n))
    active: list[int] = []
    for i in order:
        r = regions[i]
        if ndim:
            active = [j for j in active if regions[j][d][1] > r[d][0]]
        for j in active:
            if owners is not None and owners[i] == owners[j]:
                continue
            if overlaps(r, regions[j]):
                uf.union(i, j)
        active.append(i)
    return uf


def split_or_merge(regions: Sequence[Region]) -> list[Region]:
    """Output regions for one overlap group."""
    if len(regions) == 1:
        return [regions[0]]
    ndim = len(regions[0])
    differ = [d for d in range(ndim) if len({r[d] for r in regions}) > 1]
    if not differ:
        return [regions[0]]
    if len(differ) > 1:
        return [bbox(regions)]
    d = differ[0]
    cuts = sorted({x for r in regions for x in r[d]})
    out = []
    for lo, hi in zip(cuts, cuts[1:]):
        if any(r[d][0] <= lo and hi <= r[d][1] for r in regions):
            reg = list(regions[0])
            reg[d] = (lo, hi)
            out.append(tuple(reg))
    return out


def plan_regions(regions: Sequence[Region], owners: Sequence[int] | None = None
                 ) -> list[tuple[Region, list[int]]]:
    """Non-overlapping output regions, each with the indices of the input
    regions that intersect it."""
    if not regions:
        return []
    uf = overlap_groups(regions, owners)
    while True:
        groups = uf.groups()
        planned = []  # (group id, region)
        for g in groups:
            for r in split_or_merge([regions[i] for i in g]):
                planned.append((g[0], r))
        conflict = False
        if len(groups) > 1 and any(len(g) > 1 for g in groups):
            outs = [r for _, r in planned]
            owner = [g for g, _ in planned]
            cuf = overlap_groups(outs, owner)
            for i in range(len(outs)):
                j = cuf.find(i)
                if owner[j] != owner[i]:
                    uf.union(owner[i], owner[j])
                    conflict = True
        if not conflict:
            break
    result = []
    members_of = {}
    for g in groups:
        for i in g:
            members_of.setdefault(g[0], []).append(i)
    for gid, r in planned:
        members = members_of[gid]
        mem = members if len(members) == 1 else [i for i in members if overlaps(regions[i], r)]
        result.append((r, mem))
    return result
