"""How deep a ConstraintFlow expression may nest, and the measure of its depth.

Every stage after the parser (type checker, lowering to ``cf``, shape analysis, emission, the reference
interpreter, the prover) walks expressions recursively, so a source nested thousands of levels deep
would end in Python's ``RecursionError`` somewhere.  Instead the frontend refuses it, located:

* :data:`MAX_NESTING` -- one expression (a function body, a rule, a shape constraint) nests at most
  this many levels: parentheses, operators, conditionals, calls, member accesses and list elements
  inside one another.  A chain ``a + b + c + ...`` nests one level per operator (it is a tree of
  additions).  The parser counts its own recursion against the same limit, so ``((((x))))`` is
  refused before the parser itself runs out of stack.
* :data:`MAX_EXPANDED_NESTING` -- the same expression with the bodies of the functions it names put
  in their place (as the compiler inlines them) nests at most this many levels.

The shipped certifiers nest at most 8 levels (24 expanded).  Every later stage is tested at both
limits (``test/unit/cfmlir/syntax/test_bad_input_nesting.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from cfmlir.syntax import ast

#: The deepest one expression may nest (see the module docstring).
MAX_NESTING = 64
#: The deepest an expression may nest with the functions it names expanded in place.
MAX_EXPANDED_NESTING = 128


def children(e: ast.ExprBase) -> Iterator[ast.ExprBase]:
    """The sub-expressions of ``e``, in field order."""
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        if isinstance(v, ast.ExprBase):
            yield v
        elif isinstance(v, list):
            yield from (x for x in v if isinstance(x, ast.ExprBase))


def deepest(e: ast.ExprBase, extra: Callable[[ast.ExprBase], int] = lambda _n: 0) -> tuple[int, ast.ExprBase]:
    """``(depth, node)``: the depth of the tree ``e`` (a leaf is 1) where a node ``n`` counts
    ``extra(n)`` more levels below it (the body of a function it names), and the node where the
    deepest path ends.  Iterative: it measures trees of any depth."""
    best = (0, e)
    stack = [(e, 1)]
    while stack:
        node, d = stack.pop()
        total = d + extra(node)
        if total > best[0]:
            best = (total, node)
        stack.extend((c, d + 1) for c in children(node))
    return best


def too_deep(limit: int, expanded: bool = False) -> str:
    """The message of an expression nested deeper than ``limit`` (with its functions ``expanded``)."""
    if expanded:
        return (f"expression nested too deeply once the functions it names are expanded (more than {limit} "
                "levels); use fewer or flatter helper functions")
    return (f"expression nested too deeply (more than {limit} levels of parentheses, operators, calls or "
            "conditionals); split it into smaller functions")
