"""The IR metadata stack of the ``cftensor`` dialect (paper section "IR Metadata", appendix
"IR Metadata Auxiliary Functions").

Every ``cftensor`` value carries a *metadata stack*: a non-empty list of elements, written top first::

    m ::= e :: <>  |  e :: m          e = <type, is-const, intrinsic shape sigma, broadcast factor beta>

The intrinsic shape is what is materialised at run time; the broadcast factor says how many times each
dimension may logically be repeated, so the value's *total shape* is ``sigma (x) beta`` (element-wise
product).  Sizes are symbolic: products of ``batch``, ``curr``, ``prev``, ``poly``, ``sym`` (and loop
symbols ``s0, s1, ...`` that a traverse loop resolves at run time) with a positive integer.  The stack grows
by one element per enclosing ``map``: the element pushed by a map records the dimension the map reduces
over when it ends.  ``lay`` is the size of one layer: the neurons that one step of a layer-granular
traverse substitutes.

A value whose intrinsic sizes are all 1 without being a compile-time constant is *uniform*: the same for
every sample and every position, e.g. ``curr[last_layer]``.  Such a value is one host-side number at
run time, so a condition on it is a branch decided once per layer (see :func:`is_uniform`).

Textual form (used in ``!cftensor.t<...>``)::

    R, [1], [1]                                  a Float constant (``const`` marks compile-time constants)
    N, [poly], [1] :: P, [1, curr], [batch, 1]   neurons of a map over per-neuron PolyExps
    R, [batch, curr*poly], [1, 1]                a product of sizes

Type letters: I Int, R Float (Real), B Bool, N Neuron, E Noise (epsilon), P PolyExp, S SymExp, C Ct.

The physical tensor lays the elements out from the bottom of the stack to the top: in
``R, [poly], [1] :: R, [curr], [1]`` (the coefficients inside a map over per-neuron PolyExps) the tensor
is ``[curr, poly]``.

This module holds the whole metadata algebra (alignShapes and its LCM, the rank and letter helpers the
shape analysis and the rewrites use) and the one parser of the text form, so the shape analysis and
its tests can use it directly.  It is plain Python: the parser runs on xDSL's attribute parser, which
``!cftensor.t<...>`` hands it, and :func:`parse_metadata`/:func:`parse_size` import xDSL only when
called.  The type letters are the compiler-runtime contract's (:mod:`cfruntime.contract`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from cfruntime import contract

if TYPE_CHECKING:
    from xdsl.parser import AttrParser

#: Symbolic size names, in printing order.
SIZE_SYMBOLS = ("batch", "curr", "prev", "poly", "sym", "lay")
#: Sizes whose positions all lie in one layer of the network (the current layer, its predecessor, the
#: layer a traverse step substitutes): per-layer metadata is the same along such a dimension.
LAYER_LOCAL = frozenset({"curr", "prev", "lay"})
TYPE_LETTERS = contract.TYPE_LETTERS
TYPE_LETTER_OF = contract.LETTER_OF_TYPE


def _symbol_key(name: str) -> tuple[int, str]:
    return (SIZE_SYMBOLS.index(name), "") if name in SIZE_SYMBOLS else (len(SIZE_SYMBOLS), name)


@dataclass(frozen=True)
class Size:
    """A symbolic size: ``coeff * prod(symbols)``; ``Size.one()`` is 1."""

    coeff: int = 1
    symbols: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.coeff < 1:
            raise ValueError(f"sizes are positive, got {self.coeff}")
        object.__setattr__(self, "symbols", tuple(sorted(self.symbols, key=_symbol_key)))

    @staticmethod
    def one() -> "Size":
        return Size()

    @staticmethod
    def of(name: str) -> "Size":
        return Size(1, (name,))

    @property
    def is_one(self) -> bool:
        return self.coeff == 1 and not self.symbols

    def __mul__(self, other: "Size") -> "Size":
        return Size(self.coeff * other.coeff, self.symbols + other.symbols)

    def __str__(self) -> str:
        parts = ([str(self.coeff)] if self.coeff != 1 or not self.symbols else []) + list(self.symbols)
        return "*".join(parts)

    def evaluate(self, env: dict[str, int]) -> int:
        """The concrete size given concrete values of the symbols."""
        out = self.coeff
        for s in self.symbols:
            out *= env[s]
        return out


ONE = Size.one()


@dataclass(frozen=True)
class Element:
    """One stack element ``<type, is-const, shape, broadcast>``."""

    type: str
    shape: tuple[Size, ...]
    broadcast: tuple[Size, ...]
    is_const: bool = False

    def __post_init__(self) -> None:
        if self.type not in TYPE_LETTERS:
            raise ValueError(f"unknown type letter '{self.type}'")
        if len(self.shape) != len(self.broadcast):
            raise ValueError("shape and broadcast factor have different ranks")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def total(self) -> tuple[Size, ...]:
        """``sigma (x) beta``: the logical (maximal) shape."""
        return tuple(s * b for s, b in zip(self.shape, self.broadcast))

    @property
    def is_expanded(self) -> bool:
        return all(b.is_one for b in self.broadcast)

    def with_type(self, t: str) -> "Element":
        return replace(self, type=t)

    def __str__(self) -> str:
        dims = lambda xs: "[" + ", ".join(map(str, xs)) + "]"  # noqa: E731
        return f"{'const ' if self.is_const else ''}{self.type}, {dims(self.shape)}, {dims(self.broadcast)}"


@dataclass(frozen=True)
class Metadata:
    """A metadata stack, top element first."""

    elements: tuple[Element, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.elements:
            raise ValueError("a metadata stack has at least one element")

    @staticmethod
    def single(type: str, shape, broadcast, is_const: bool = False) -> "Metadata":
        return Metadata((Element(type, tuple(shape), tuple(broadcast), is_const),))

    @property
    def top(self) -> Element:
        return self.elements[0]

    @property
    def rest(self) -> tuple[Element, ...]:
        return self.elements[1:]

    @property
    def height(self) -> int:
        return len(self.elements)

    @property
    def shape(self) -> tuple[Size, ...]:
        """``m(sigma)``: the physical intrinsic shape, i.e. the elements' shapes concatenated from the
        bottom of the stack to the top (a map's new dimensions come after the ones it maps over)."""
        return tuple(s for e in reversed(self.elements) for s in e.shape)

    @property
    def broadcast(self) -> tuple[Size, ...]:
        """``m(beta)``, in the same physical order as :attr:`shape`."""
        return tuple(b for e in reversed(self.elements) for b in e.broadcast)

    @property
    def is_expanded(self) -> bool:
        return all(e.is_expanded for e in self.elements)

    def total_shape(self) -> tuple[Size, ...]:
        """The logical (total) size of every physical dimension: intrinsic size times broadcast."""
        return tuple(s * b for s, b in zip(self.shape, self.broadcast))

    def push(self, e: Element) -> "Metadata":
        return Metadata((e,) + self.elements)

    def pop(self) -> "Metadata":
        return Metadata(self.rest)

    def with_top(self, e: Element) -> "Metadata":
        return Metadata((e,) + self.rest)

    def with_type(self, t: str) -> "Metadata":
        return self.with_top(self.top.with_type(t))

    def __str__(self) -> str:
        return " :: ".join(map(str, self.elements))


class ShapeMismatch(ValueError):
    """Two metadata stacks whose total shapes cannot be aligned."""


def lcm_element(e1: Element, e2: Element) -> tuple[tuple[Size, ...], tuple[Size, ...]]:
    """Rule Lcm-metadata-element: the smallest common (shape, broadcast) of two elements.

    The total shapes must agree.  A dimension whose intrinsic sizes agree keeps them (and its broadcast
    factor); a dimension where they differ is expanded to its total size, broadcast 1.
    """
    if e1.rank != e2.rank or e1.total != e2.total:
        raise ShapeMismatch(f"cannot align <{e1}> with <{e2}>")
    shape, bcast = [], []
    for s1, b1, s2 in zip(e1.shape, e1.broadcast, e2.shape):
        if s1 == s2:
            shape.append(s1)
            bcast.append(b1)
        else:
            shape.append(s1 * b1)
            bcast.append(ONE)
    return tuple(shape), tuple(bcast)


def lcm(m1: Metadata, m2: Metadata, type: str | None = None) -> Metadata:
    """Rule Lcm-metadata: element-wise LCM of two stacks of equal height (types from ``m1``).

    >>> str(lcm(parse_metadata("R, [1, curr], [batch, 1]"), parse_metadata("R, [batch, 1], [1, curr]")))
    'R, [batch, curr], [1, 1]'
    """
    if m1.height != m2.height:
        raise ShapeMismatch(f"cannot align stacks of heights {m1.height} and {m2.height}")
    out = []
    for i, (e1, e2) in enumerate(zip(m1.elements, m2.elements)):
        shape, bcast = lcm_element(e1, e2)
        t = type if (type is not None and i == 0) else e1.type
        out.append(Element(t, shape, bcast, e1.is_const and e2.is_const))
    return Metadata(tuple(out))


def extend_rank(e: Element, target: Element) -> Element:
    """Rule Unequal-rank: give ``e`` the rank of ``target`` by appending dimensions of intrinsic size
    1 whose broadcast factor is ``target``'s total size there (a broadcast, never a materialisation)."""
    if e.rank > target.rank:
        raise ShapeMismatch(f"cannot extend <{e}> to the lower rank of <{target}>")
    extra = target.total[e.rank :]
    return Element(e.type, e.shape + (ONE,) * len(extra), e.broadcast + extra, e.is_const)


@dataclass(frozen=True)
class Alignment:
    """How to bring one operand to the common metadata: append the new trailing physical dimensions
    ``added_dims`` (IrAddDimension; they belong to the top element), then repeat along ``repeat`` — a
    tuple of (physical dimension, repeated size) pairs (IrRepeat)."""

    added_dims: tuple[int, ...]
    repeat: tuple[tuple[int, Size], ...]
    metadata: Metadata


def _plan(m: Metadata, extended: Metadata, target: Metadata) -> Alignment:
    below = sum(e.rank for e in m.rest)
    added = tuple(range(below + m.top.rank, below + extended.top.rank))
    reps = []
    for i, (s, t) in enumerate(zip(extended.shape, target.shape)):
        if s != t:
            if not s.is_one:
                raise ShapeMismatch(f"cannot repeat a dimension of size {s} to {t}")
            reps.append((i, t))
    return Alignment(added, tuple(reps), target)


def align_shapes(m1: Metadata, m2: Metadata) -> tuple[Alignment, Alignment, Metadata]:
    """alignShapes: align two operands for an element-wise operation.

    Constants (``is_const``) are polymorphic: a constant's stack is first given the other operand's
    height by copying its lower elements.  The operand whose top element has the lower rank is extended
    (Unequal-rank), then both stacks meet at their LCM; each operand is repeated only along the
    dimensions where its intrinsic size is 1 and the LCM's is not.

    >>> a1, a2, m = align_shapes(parse_metadata("R, [batch, curr], [1, 1]"),
    ...                          parse_metadata("R, [1, curr, poly], [batch, 1, 1]"))
    >>> str(m)
    'R, [batch, curr, poly], [1, 1, 1]'
    >>> a1.added_dims, [(d, str(s)) for d, s in a1.repeat]
    ((2,), [(2, 'poly')])
    >>> a2.added_dims, [(d, str(s)) for d, s in a2.repeat]
    ((), [(0, 'batch')])
    """
    if m1.height != m2.height:
        if m1.top.is_const and m1.height == 1:
            m1 = Metadata((m1.top,) + m2.rest)
        elif m2.top.is_const and m2.height == 1:
            m2 = Metadata((m2.top,) + m1.rest)
        else:
            raise ShapeMismatch(f"cannot align stacks of heights {m1.height} and {m2.height}")
    m1, m2 = _broadcast_scalar(m1, m2), _broadcast_scalar(m2, m1)
    e1, e2 = m1.top, m2.top
    x1 = m1.with_top(extend_rank(e1, e2)) if e1.rank < e2.rank else m1
    x2 = m2.with_top(extend_rank(e2, e1)) if e2.rank < e1.rank else m2
    target = lcm(x1, x2)
    return _plan(m1, x1, target), _plan(m2, x2, target), target


def _broadcast_scalar(m: Metadata, other: Metadata) -> Metadata:
    """A compile-time scalar (all intrinsic sizes 1) takes the other operand's rank, with the other's
    total shape as its broadcast factor: it is never materialised beyond one element."""
    e, o = m.top, other.top
    if e.is_const and all(s.is_one for s in e.shape) and e.rank <= o.rank:
        return m.with_top(Element(e.type, (ONE,) * o.rank, o.total, True))
    return m


def per_layer(m: Metadata) -> Metadata:
    """The metadata of a per-layer quantity (``n[layer]``, ``n[last_layer]``) of the neurons ``m``:
    along every dimension that stays within one layer (intrinsic size ``curr``, ``prev`` or ``lay``)
    the value does not change, so that dimension becomes intrinsic 1 with its total size as broadcast
    factor.  Dimensions over several layers (``poly``, the two operands of a binary layer) keep their
    intrinsic size."""

    def local(s: Size) -> bool:
        return s.coeff == 1 and len(s.symbols) == 1 and s.symbols[0] in LAYER_LOCAL

    out = []
    for e in m.elements:
        shape = tuple(ONE if local(s) else s for s in e.shape)
        bcast = tuple(s * b if local(s) else b for s, b in zip(e.shape, e.broadcast))
        out.append(Element(e.type, shape, bcast, e.is_const))
    return Metadata(tuple(out))


def is_uniform(m: Metadata) -> bool:
    """Whether a value is the same everywhere without being a compile-time constant: every intrinsic
    size is 1.  The runtime holds it as one host-side number."""
    return not (m.height == 1 and m.top.is_const) and all(s.is_one for e in m.elements for s in e.shape)


def compress(m: Metadata) -> Metadata:
    """The neurons of a map: the same list for every (batch, curr, ...) position, so intrinsic shape 1
    and the old total as broadcast factor (paper, Algorithm visitMapPolyexp, "Compress")."""
    return Metadata(tuple(Element(e.type, (ONE,) * e.rank, e.total, e.is_const) for e in m.elements))


def is_scalar_const(m: Metadata) -> bool:
    """A compile-time scalar: it broadcasts against anything and is never materialised.

    >>> is_scalar_const(parse_metadata("const R, [1], [1]")), is_scalar_const(parse_metadata("R, [1], [1]"))
    (True, False)
    """
    return m.height == 1 and m.top.is_const and all(s.is_one for s in m.top.shape)


# ----------------------------------------------------------------------------------------------
# Letters, ranks and physical dimensions
# ----------------------------------------------------------------------------------------------


def with_letter(m: Metadata, letter: str) -> Metadata:
    """``m`` with the type letter of its top element replaced (the elements below keep theirs: they
    describe the dimensions the value is mapped over).

    >>> str(with_letter(parse_metadata("R, [poly], [1] :: R, [curr], [1]"), "B"))
    'B, [poly], [1] :: R, [curr], [1]'
    """
    return m.with_top(m.top.with_type(letter))


def with_flat_dim(m: Metadata, i: int, shape: Size, bcast: Size) -> Metadata:
    """``m`` with its physical dimension ``i`` (counted in the flat tensor, from the bottom element
    of the stack up, see :attr:`Metadata.shape`) set to intrinsic size ``shape`` and broadcast
    factor ``bcast``: the metadata after a ``repeat`` along ``i``.  Raises IndexError when ``m`` has
    no dimension ``i``.

    >>> m = parse_metadata("R, [1], [poly] :: R, [batch, curr], [1, 1]")
    >>> str(with_flat_dim(m, 2, Size.of("poly"), ONE))
    'R, [poly], [1] :: R, [batch, curr], [1, 1]'
    >>> str(with_flat_dim(m, 0, Size.of("batch"), Size(2)))
    'R, [1], [poly] :: R, [batch, curr], [2, 1]'
    """
    elements = list(m.elements)
    offset = 0
    for idx in range(len(elements) - 1, -1, -1):
        e = elements[idx]
        if i < offset + e.rank:
            j = i - offset
            elements[idx] = Element(e.type, e.shape[:j] + (shape,) + e.shape[j + 1 :],
                                    e.broadcast[:j] + (bcast,) + e.broadcast[j + 1 :], e.is_const)
            return Metadata(tuple(elements))
        offset += e.rank
    raise IndexError(i)


def _locate_flat(m: Metadata, i: int) -> tuple[int, int]:
    """(stack index, position in that element) of physical dimension ``i`` (counted from the bottom
    element up, see :attr:`Metadata.shape`); ``i == len(m.shape)`` is one past the top's last."""
    offset = 0
    for idx in range(m.height - 1, -1, -1):
        e = m.elements[idx]
        if i < offset + e.rank:
            return idx, i - offset
        offset += e.rank
    if i == offset:
        return 0, m.top.rank
    raise IndexError(i)


def _replace_element(m: Metadata, idx: int, e: Element) -> Metadata:
    return Metadata(m.elements[:idx] + (e,) + m.elements[idx + 1 :])


def insert_dim(m: Metadata, i: int, bcast: Size, new_element: bool = False) -> Metadata:
    """The metadata after an ``add_dim`` at physical dimension ``i``: a dimension of intrinsic size 1
    and broadcast factor ``bcast`` in the element holding ``i`` (past the last dimension: the top's),
    or, with ``new_element``, a new top element ``<letter, [1], [bcast]>`` (a value lifted into a map).

    >>> str(insert_dim(parse_metadata("R, [curr, poly], [1, 1]"), 2, Size.of("sym")))
    'R, [curr, poly, 1], [1, 1, sym]'
    >>> str(insert_dim(parse_metadata("R, [curr], [1]"), 1, Size.of("poly"), new_element=True))
    'R, [1], [poly] :: R, [curr], [1]'
    """
    top = m.top
    if new_element:
        if i != len(m.shape):
            raise IndexError(i)
        return m.push(Element(top.type, (ONE,), (bcast,), top.is_const))
    idx, j = _locate_flat(m, i)
    e = m.elements[idx]
    return _replace_element(m, idx, Element(e.type, e.shape[:j] + (ONE,) + e.shape[j:],
                                             e.broadcast[:j] + (bcast,) + e.broadcast[j:], e.is_const))


def drop_dim(m: Metadata, i: int, is_const: bool | None = None) -> Metadata:
    """``m`` without physical dimension ``i`` (the element holding it keeps its others; its
    constness is ``is_const`` when given).

    >>> str(drop_dim(parse_metadata("R, [curr, poly, 1], [1, 1, 1]"), 2))
    'R, [curr, poly], [1, 1]'
    """
    idx, j = _locate_flat(m, i)
    e = m.elements[idx]
    return _replace_element(m, idx, Element(e.type, e.shape[:j] + e.shape[j + 1 :], e.broadcast[:j] + e.broadcast[j + 1 :],
                                             e.is_const if is_const is None else is_const))


def merge_top(m: Metadata) -> Metadata:
    """The top element folded into the one below it (its dimensions appended to that element's; the
    top's type letter; not a constant): the metadata of ``merge_top``.

    >>> str(merge_top(parse_metadata("R, [poly], [1] :: R, [batch, curr], [1, 1]")))
    'R, [batch, curr, poly], [1, 1, 1]'
    """
    top, below = m.top, m.elements[1]
    merged = Element(top.type, below.shape + top.shape, below.broadcast + top.broadcast, False)
    return Metadata((merged,) + m.elements[2:])


def reduce_dim(m: Metadata, i: int) -> Metadata:
    """The metadata after a reduction along physical dimension ``i`` (not a constant): a reduction
    along the first dimension of a map's element (above the bottom) ends the map, so that element is
    popped and its other dimensions are appended to the element below; any other dimension is
    dropped from its element.

    >>> str(reduce_dim(parse_metadata("R, [poly, 2], [1, 1] :: R, [curr], [1]"), 1))
    'R, [curr, 2], [1, 1]'
    >>> str(reduce_dim(parse_metadata("R, [batch, curr, prev], [1, 1, 1]"), 2))
    'R, [batch, curr], [1, 1]'
    """
    idx, j = _locate_flat(m, i)
    if idx == 0 and j == 0 and m.height > 1:
        top = m.top
        return merge_top(m.with_top(Element(top.type, top.shape[1:], top.broadcast[1:], False)))
    return drop_dim(m, i, is_const=False) if idx == 0 else drop_dim(m, i)


def elementwise(letter: str, operands: "list[Metadata] | tuple[Metadata, ...]") -> Metadata:
    """The metadata of an element-wise operation's result with type letter ``letter``: a
    compile-time scalar when every operand is one, else the first other operand's stack with its top
    element's letter set and not a constant (the operands are aligned first: their shapes agree).

    >>> str(elementwise("B", [parse_metadata("const R, [1], [1]"), parse_metadata("R, [batch, curr], [1, 1]")]))
    'B, [batch, curr], [1, 1]'
    """
    real = [m for m in operands if not is_scalar_const(m)]
    if not real:
        return Metadata.single(letter, [ONE], [ONE], True)
    m = real[0]
    return Metadata((Element(letter, m.top.shape, m.top.broadcast, False),) + m.rest)


def number_letter(letters: "list[str] | tuple[str, ...]") -> str:
    """The letter of arithmetic on numbers of these letters (the least upper bound: Float over Int
    over Bool, a 0/1 mask).

    >>> number_letter(["I", "R"]), number_letter(["B", "I"]), number_letter(["B", "B"])
    ('R', 'I', 'B')
    """
    return next((x for x in ("R", "I") if x in letters), letters[0])


# ----------------------------------------------------------------------------------------------
# Text form: the one parser (``str`` of Size/Element/Metadata is the printer)
# ----------------------------------------------------------------------------------------------


def parse_size_from(parser: AttrParser) -> Size:
    """Parse a size, ``factor (* factor)*`` where a factor is a positive integer or a symbol name,
    with xDSL's attribute parser (as ``!cftensor.t<...>`` does); errors are the parser's ParseError."""
    size = ONE
    while True:
        n = parser.parse_optional_integer(allow_boolean=False, allow_negative=False)
        if n is not None:
            if n < 1:
                parser.raise_error("sizes are positive integers or symbols")
            size = size * Size(n)
        else:
            size = size * Size.of(parser.parse_identifier(" (a size symbol)"))
        if parser.parse_optional_punctuation("*") is None:
            return size


def _parse_dims(parser: AttrParser) -> tuple[Size, ...]:
    return tuple(parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_size_from(parser)))


def parse_element_from(parser: AttrParser) -> Element:
    """Parse one stack element, ``[const] letter, [shape], [broadcast]``."""
    is_const = parser.parse_optional_keyword("const") is not None
    letter = parser.parse_identifier(" (a type letter)")
    if letter not in TYPE_LETTERS:
        parser.raise_error(f"unknown type letter '{letter}', expected one of {''.join(TYPE_LETTERS)}")
    parser.parse_punctuation(",")
    shape = _parse_dims(parser)
    parser.parse_punctuation(",")
    bcast = _parse_dims(parser)
    if len(shape) != len(bcast):
        parser.raise_error("shape and broadcast factor must have the same rank")
    return Element(letter, shape, bcast, is_const)


def parse_metadata_from(parser: AttrParser) -> Metadata:
    """Parse a metadata stack, elements top first separated by ``::``: the body of
    ``!cftensor.t<...>`` (:meth:`cfmlir.dialects.cftensor.TensorType.parse_parameters`)."""
    elements = [parse_element_from(parser)]
    while parser.parse_optional_punctuation(":") is not None:
        parser.parse_punctuation(":")
        elements.append(parse_element_from(parser))
    return Metadata(tuple(elements))


def _parse_text(text: str, parse, what: str):
    """Run ``parse`` on the whole of ``text``; a ParseError becomes a ValueError."""
    from xdsl.context import Context
    from xdsl.parser import AttrParser, ParserState
    from xdsl.utils.exceptions import ParseError
    from xdsl.utils.lexer import Input
    from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

    parser = AttrParser(ParserState(MLIRLexer(Input(text, "<metadata>"))), Context())
    try:
        out = parse(parser)
        if parser._parse_optional_token(MLIRTokenKind.EOF) is None:
            parser.raise_error(f"unexpected text after the {what}")
    except ParseError as exc:
        raise ValueError(f"malformed {what} '{text}': {exc.msg}") from None
    return out


def parse_metadata(text: str) -> Metadata:
    """Parse the text form (inverse of ``str``).  Raises ValueError.

    >>> m = parse_metadata("N, [poly], [1] :: const P, [1, curr*batch], [2*batch, 1]")
    >>> m.height, m.elements[1].is_const, str(m)
    (2, True, 'N, [poly], [1] :: const P, [1, batch*curr], [2*batch, 1]')
    """
    return _parse_text(text, parse_metadata_from, "metadata")


def parse_size(text: str) -> Size:
    """Parse one size (inverse of ``str``).  Raises ValueError.

    >>> parse_size("curr*2*batch")
    Size(coeff=2, symbols=('batch', 'curr'))
    """
    return _parse_text(text, parse_size_from, "size")
