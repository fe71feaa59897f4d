"""How many terms a rule's sums have: whether each stays within the layer's fan-in (for the float32 widening).

    # Affine -> (prev.dot(curr[weight]) + curr[bias]).map(simplify_lower)
    #   %c = cftensor.map_coeff %p   (support: the weight's non-zeros, along dim 2)
    #   %lo, %hi = cftensor.interval_inner %c, %l, %u[2]   (a sum of at most fan-in non-zero terms)
    # -> cftensor.rule ... attributes {exact = {..., "@fan-in" = "1 2"}}   (one inner product, two reads)

The float32 widening pre-charges every stored bound for the rounding of the later sums against it
(section 1 of :mod:`cfruntime.flow.widening`): a sum of ``n`` non-zero products errs by ``gamma(n)``
times the sum of their magnitudes, so the pre-charge must use the longest such sum.  Without more
knowledge that is the layer's whole size (a traverse may concretise a dense expression over it); when
every successor's rule sums only against the layer's weight (IBP's ``prev.dot(W).map(simplify)``) it is
the successor's fan-in -- 16 to 256 terms on a convolution, instead of thousands.

Algorithm: one pass over the rule's ops in order (nested regions included), one transfer function per
op class (:func:`transfer`), tracking a *support* per SSA value -- where its non-zero entries may be:

* ``weight``: the layer's ``weight`` input; along its last physical dimension at most fan-in non-zeros
  per neuron (a convolution's kernel, a dense row, a gather's one entry);
* ``unit``: one non-zero per entry (``neuron_to_poly``: a one-hot coefficient);
* ``none``: no terms at all (the result of a ``layer_traverse`` whose stop is the constant false and
  whose replacements are polyhedra: it substitutes every layer down to the input's box, the one
  concretisation it makes, counted by ``T``; any other traverse fails);

kept by a ``repeat`` along another dimension, a product with anything (0 times x is 0) and a
selection between two values of one support, carried by ``dot`` (neurons . weight: a PolyExp whose
coefficients are the weight), ``extract_poly_coeff``/``combine_poly`` and ``map_coeff`` (each putting
the coefficients on the last dimension).  A sum is fine when one operand of the inner product (or the
``reduce`` by sum) has a support on the summed dimension (a zero product rounds nothing); the rule
*fails* on any other inner product or sum, a ``masked_reduce`` by sum, a ``dot`` of values other than neurons with a
non-weight operand, or a substitution (a traverse, a loop).  Every other way to combine stored values
is element-wise (a list reduces only by max/min: one of its entries), so a linear expression the rule
forms over one predecessor's stored values has at most ``I * fan-in + R`` terms per neuron: ``I`` the
inner products and sums, ``R`` the ``access`` ops (each read is one term), and ``T`` traverses sum
over the input's neurons.  A rule that does not fail gets ``"@fan-in" = "I R"`` (``"I R T"`` when
``T > 0``; :data:`cfruntime.contract.EXACT_FANIN`), added to its ``exact`` tags by
:class:`~cfmlir.passes.exactness_analysis.ExactnessPass`.

Only sums that may have a stored bound among their terms matter: every value is also marked when it
depends on a read (``access``) of a stored value other than a zonotope -- Float bounds, polyhedra,
layer numbers -- through any operand or any op in its regions (:func:`_track_stored`).  A sum none of
whose operands is marked -- a zonotope's product with the weight, its concretisation over the noise
symbols (DeepZ's Affine: ``"0 1"``) -- is neither counted nor failed: its rounding is the widening's
section 3, charged per noise symbol whatever the sum's length.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatch

from xdsl.ir import Operation, SSAValue

from cfmlir.dialects import cftensor as ct
from cfruntime import contract


@dataclass(frozen=True)
class Support:
    """``kind`` (``weight``/``unit``/``none``) non-zeros along physical dimension ``dim`` (None for a
    PolyExp: its coefficients')."""

    kind: str
    dim: int | None


class State:
    """The supports found so far; ``ok`` turns False at the first sum that may exceed the fan-in."""

    def __init__(self) -> None:
        self.support: dict[SSAValue, Support] = {}
        self.neurons: set[SSAValue] = set()
        self.ok = True
        self.inner = 0  # inner products within the fan-in
        self.reads = 0  # access ops
        self.traverses = 0  # traverses to the input's box
        self.stored: set[SSAValue] = set()  # values that may depend on a stored value other than a zonotope

    def reads_stored(self, op: Operation) -> bool:
        """Whether a sum ``op`` may have a stored Float bound (or a value made from one) among its terms:
        one of its operands depends on a read that is not a zonotope's (those sums are section 3's)."""
        return any(o in self.stored for o in op.operands)

    def last_dim(self, v: SSAValue) -> int:
        return len(ct.meta(v).shape) - 1

    def on_last(self, v: SSAValue) -> Support | None:
        """``v``'s support when it lies on its last dimension (a coefficient tensor's)."""
        s = self.support.get(v)
        return s if s is not None and s.dim == self.last_dim(v) else None


@singledispatch
def transfer(op: Operation, st: State) -> None:
    """Ops that form no sum over a dimension (element-wise, access, constants): nothing to track."""


@transfer.register
def _(op: ct.InputOp, st: State) -> None:
    name = op.input_name.data
    if name == "weight":
        st.support[op.result] = Support("weight", st.last_dim(op.result))
    elif name in contract.PREDECESSOR_INPUTS:
        st.neurons.add(op.result)


@transfer.register
def _(op: ct.RepeatOp, st: State) -> None:
    s = st.support.get(op.input)
    if s is not None and s.dim is not None and op.dim.data != s.dim and st.last_dim(op.result) == st.last_dim(op.input):
        st.support[op.result] = s
    if op.input in st.neurons:
        st.neurons.add(op.result)


@transfer.register
def _(op: ct.DotOp, st: State) -> None:
    w = st.on_last(op.rhs)
    if op.lhs in st.neurons:  # a PolyExp with the right operand as coefficients: no sum yet
        if w is not None:
            st.support[op.result] = Support(w.kind, None)
    elif not st.reads_stored(op):  # a zonotope's or the weights' own sum: no stored bound in it
        return
    elif w is None:  # values . anything: a sum over every predecessor
        st.ok = False
    else:  # values . weight: a sum within the fan-in
        st.inner += 1


@transfer.register
def _(op: ct.NeuronToPolyOp, st: State) -> None:
    st.support[op.result] = Support("unit", None)


@transfer.register(ct.ExtractPolyCoeffOp)
@transfer.register(ct.MapCoeffOp)
def _(op: Operation, st: State) -> None:
    s = st.support.get(op.input)
    if s is not None and s.dim is None:
        st.support[op.result] = Support(s.kind, st.last_dim(op.result))


@transfer.register
def _(op: ct.CombineToPolyOp, st: State) -> None:
    c = st.on_last(op.lhs)
    if c is not None:
        st.support[op.result] = Support(c.kind, None)


@transfer.register(ct.InnerOp)
@transfer.register(ct.SplitInnerOp)
@transfer.register(ct.IntervalInnerOp)
def _(op: Operation, st: State) -> None:
    if not st.reads_stored(op):  # a zonotope's or the weights' own sum: no stored bound in it
        return
    dim = op.dim.data
    kinds = {st.support[o].kind for o in op.operands if st.support.get(o) is not None and st.support[o].dim == dim}
    if not kinds:
        st.ok = False
    if kinds != {"none"}:  # a sum over the coefficients a traverse left: none, no terms to sum
        st.inner += 1


@transfer.register
def _(op: ct.AccessOp, st: State) -> None:
    st.reads += 1


@transfer.register
def _(op: ct.MultOp, st: State) -> None:
    # x * y is 0 where either is: the product keeps a support of either operand
    s = st.support.get(op.lhs) or st.support.get(op.rhs)
    if s is not None and s.dim is not None and len(ct.meta(op.result).shape) == len(ct.meta(op.lhs).shape):
        st.support[op.result] = s


@transfer.register
def _(op: ct.TernaryOp, st: State) -> None:
    a, b = st.support.get(op.then), st.support.get(op.otherwise)
    if a is not None and a == b:
        st.support[op.result] = a


@transfer.register
def _(op: ct.ReduceOp, st: State) -> None:
    if op.kind.data == "sum" and st.reads_stored(op):  # within the fan-in where the support lies on it
        s = st.support.get(op.input)
        if s is None or s.dim != op.dim.data:
            st.ok = False
        st.inner += 1


@transfer.register
def _(op: ct.MaskedReduceOp, st: State) -> None:
    if op.kind.data == "sum" and st.reads_stored(op):
        st.ok = False


def _substitutes(op: Operation, st: State) -> None:
    st.ok = False


for _cls in (ct.WhileOp, ct.SubstituteOp, ct.SubstituteScaledOp):
    transfer.register(_cls)(_substitutes)


def _never_stops(op: ct.LayerTraverseOp) -> bool:
    """Whether the traverse's stop flag is the constant false (every layer is substituted)."""
    stop = op.priority.block.last_op.operands[1]
    return isinstance(stop.owner, ct.ConstOp) and stop.owner.value.value.data == 0


@transfer.register
def _(op: ct.LayerTraverseOp, st: State) -> None:
    # stop = false: every layer is substituted, the input's last (its polyhedra are its box: that
    # substitution is the one concretisation, a sum over the input's neurons, counted by T); no terms
    # are left.  Its replacements must be polyhedra, not Float bounds (a Float read there would be a
    # concretisation against any layer).
    reads_bounds = any(isinstance(o, ct.AccessOp) and ct.meta(o.result).top.type == "R" for o in op.body.walk())
    if not _never_stops(op) or reads_bounds:
        st.ok = False
        return
    st.traverses += 1
    st.support[op.res] = Support("none", None)


def _ops(block):
    """The block's ops in order, nested regions included, but not a traverse's (:func:`transfer` of
    ``layer_traverse`` reads them)."""
    for op in block.ops:
        yield op
        if not isinstance(op, ct.LayerTraverseOp):
            for region in op.regions:
                for b in region.blocks:
                    yield from _ops(b)


def fanin_terms(rule: ct.RuleOp) -> tuple[int, int, int] | None:
    """``(I, R, T)``: the rule's linear expressions over a predecessor's stored values have at most
    ``I * fan-in + R`` terms per neuron, and ``T`` traverses sum over the input's neurons; None when
    a sum may be longer (see the module docstring)."""
    st = State()
    for block in rule.body.blocks:
        for op in _ops(block):
            _track_stored(op, st)
            transfer(op, st)
            if not st.ok:
                return None
    return st.inner, st.reads, st.traverses


def _reads_stored(op: Operation) -> bool:
    """A read of a stored value other than a zonotope (Float bounds, polyhedra, layer numbers)."""
    return isinstance(op, ct.AccessOp) and ct.meta(op.result).top.type != "S"


def _track_stored(op: Operation, st: State) -> None:
    """Mark ``op``'s results (and its regions' arguments) as depending on a stored value other than a
    zonotope when it reads one, or when an operand, or anything its regions read or use, does.
    Conservative: an op whose regions touch such a value taints all its results."""
    tainted = _reads_stored(op) or st.reads_stored(op)
    if not tainted and op.regions:
        tainted = any(_reads_stored(o) or st.reads_stored(o) for o in op.walk() if o is not op)
    if tainted:
        st.stored.update(op.results)
        for region in op.regions:
            for block in region.blocks:
                st.stored.update(block.args)
