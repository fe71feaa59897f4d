"""The prover's terms: z3 real arithmetic with the true ``exp`` and ``log`` as function symbols.

The rule encoding (:mod:`cfmlir.verify.nonlinear`) names each application ``sigmoid(t)`` by a fresh
real constrained by facts.  The decision procedure (:mod:`cfmlir.verify.delta`) needs the function
itself, so :func:`translate` replaces each such real by a *canonical* term over two uninterpreted
function symbols ``EXP`` and ``LOG`` that stand for the real ``exp`` and ``log``::

    sigmoid(t) -> 1 / (1 + EXP(-t))          tanh(t) -> 1 - 2 / (1 + EXP(2 t))
    exp(t)     -> EXP(t)                     log(t)  -> LOG(t)

One base function makes the identities between them syntactic (``sigmoid(-t) = 1 - sigmoid(t)``,
``sigmoid' = sigmoid (1 - sigmoid)`` are polynomial identities in ``EXP(-t)``), so z3 can decide them
once ``EXP(-t)`` is a variable (:mod:`cfmlir.verify.abstraction`).  Terms are simplified with
``som=True`` so that equal arguments are equal terms (``EXP(-1*x)`` everywhere).

Example: ``translate`` maps ``sigmoid_0 - sigmoid_1`` (applications at ``x_p`` and ``l_p``) to
``1/(1 + EXP(-1*x_p)) - 1/(1 + EXP(-1*l_p))``.
"""

from __future__ import annotations

from fractions import Fraction

import z3

R = z3.RealSort()
EXP = z3.Function("EXP", R, R)
LOG = z3.Function("LOG", R, R)
FUNCTIONS = ("EXP", "LOG")


def simp(t):
    return z3.simplify(t, som=True)


def canonical(name: str, arg):
    """The canonical term of ``name(arg)`` (``name`` one of sigmoid, tanh, exp, log)."""
    if name == "sigmoid":
        return 1 / (1 + EXP(simp(-arg)))
    if name == "tanh":
        return 1 - 2 / (1 + EXP(simp(2 * arg)))
    if name == "exp":
        return EXP(simp(arg))
    if name == "log":
        return LOG(simp(arg))
    raise KeyError(name)


def translation(order) -> list[tuple]:
    """Substitution pairs ``(fresh real, canonical term)`` for the applications ``order`` (a list of
    ``(name, argument, fresh real)`` in order of creation: an argument only uses earlier ones)."""
    pairs: list[tuple] = []
    for name, t, v in order:
        arg = z3.substitute(t, *pairs) if pairs else t
        pairs.append((v, canonical(name, arg)))
    return pairs


def translate(f, pairs):
    return clean(z3.substitute(f, *pairs)) if pairs else f


def clean(t):
    """``t`` with ``EXP(0)`` replaced by 1, ``LOG(1)`` by 0 (exact values z3 cannot see) and every
    ``LOG(1 + EXP(a))`` whose ``a`` leads with a negative coefficient by ``a + LOG(1 + EXP(-a))``
    (``log(1 + e^a) = a + log(1 + e^-a)``): one orientation per softplus, so that the pieces
    ``x + log(1 + e^-x)`` (x >= 0) and ``log(1 + e^x)`` (x < 0) of ``max(x, 0) + log(1 + exp(-|x|))``
    become one term and the split at 0 disappears (:mod:`cfmlir.verify.cases`)."""
    fixed = []
    for s in walk(t):
        if not is_fun(s):
            continue
        q = rational(s.arg(0))
        if q is not None and ((s.decl().name() == "EXP" and q == 0) or (s.decl().name() == "LOG" and q == 1)):
            fixed.append((s, z3.RealVal(1 if q == 0 else 0)))
            continue
        a = _log1p_exp_arg(s)
        if a is not None and _negative_lead(a):
            fixed.append((s, a + LOG(1 + EXP(simp(-a)))))
    return z3.simplify(z3.substitute(t, *fixed), som=True) if fixed else t


def _log1p_exp_arg(s):
    """``a`` when ``s`` is ``LOG(1 + EXP(a))``."""
    if s.decl().name() != "LOG":
        return None
    b = s.arg(0)
    if not z3.is_add(b) or b.num_args() != 2:
        return None
    one, e = b.arg(0), b.arg(1)
    if is_fun(one):
        one, e = e, one
    if rational(one) != 1 or not is_fun(e) or e.decl().name() != "EXP":
        return None
    return e.arg(0)


def _negative_lead(a) -> bool:
    lead = a.arg(0) if z3.is_add(a) else a
    if z3.is_mul(lead) and z3.is_rational_value(lead.arg(0)):
        return lead.arg(0).as_fraction() < 0
    return z3.is_rational_value(lead) and lead.as_fraction() < 0


# -- inspection ----------------------------------------------------------------------------------
def is_var(t) -> bool:
    return z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED


def is_fun(t) -> bool:
    """``EXP(a)`` or ``LOG(a)``."""
    return z3.is_app(t) and t.num_args() == 1 and t.decl().kind() == z3.Z3_OP_UNINTERPRETED \
        and t.decl().name() in FUNCTIONS


def _walk(t):
    seen: set[int] = set()
    out = []
    stack = [(t, False)]
    while stack:
        s, done = stack.pop()
        i = s.get_id()
        if done:
            if i not in seen:
                seen.add(i)
                out.append(s)
            continue
        if i in seen:
            continue
        stack.append((s, True))
        for c in s.children():
            if c.get_id() not in seen:
                stack.append((c, False))
    return out


class _Info:
    """What the prover asks of a term, computed once: its subterms, variables and applications."""

    __slots__ = ("term", "nodes", "vars", "var_ids", "funs")

    def __init__(self, t):
        self.term = t
        self.nodes = _walk(t)
        self.vars = [s for s in self.nodes if is_var(s) and s.sort() == R]
        self.var_ids = {v.get_id() for v in self.vars}
        self.funs = [s for s in self.nodes if is_fun(s)]


_INFO: dict[int, _Info] = {}


def info(t) -> _Info:
    i = t.get_id()
    hit = _INFO.get(i)
    if hit is None or not hit.term.eq(t):
        if len(_INFO) > 50000:
            _INFO.clear()
        hit = _INFO[i] = _Info(t)
    return hit


def walk(t):
    """Every distinct subterm of ``t`` once (children before parents)."""
    return info(t).nodes


def variables(t) -> list:
    return info(t).vars


def functions(t) -> list:
    return info(t).funs


def has_functions(t) -> bool:
    return bool(info(t).funs)


def mentions(t, v) -> bool:
    return v.get_id() in info(t).var_ids


def subst(t, v, w):
    return clean(simp(z3.substitute(t, (v, w))))


def rational(t) -> Fraction | None:
    """The value of a rational numeral, else ``None``."""
    if not z3.is_rational_value(t):
        t = simp(t)
    if z3.is_rational_value(t):
        return Fraction(t.numerator_as_long(), t.denominator_as_long())
    return None


def affine_in(g, v):
    """``(c, rest)`` when ``g = c*v + rest`` with a rational ``c != 0`` and ``rest`` free of ``v``."""
    from cfmlir.verify.calculus import NotDifferentiable, derivative

    if not mentions(g, v):
        return None
    try:
        c = rational(derivative(g, v))
    except NotDifferentiable:
        return None
    if c is None or c == 0:
        return None
    rest = subst(g, v, z3.RealVal(0))
    if mentions(rest, v):
        return None
    return c, rest
