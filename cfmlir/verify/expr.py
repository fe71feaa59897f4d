"""The decision procedure's own expressions: hash-consed polynomials over atoms, and formulas.

Building, substituting and differentiating terms through z3's Python API costs microseconds per
node; the procedure does it millions of times.  Here every value is a canonical *polynomial*
(:class:`Poly`: rational coefficients over monomials of *atoms*) and every atom and formula is
interned, so equal terms are the same object and ``x - x``, ``sigma(l) - sigma(l)`` vanish on
construction.  Atoms:

==============  ================================================================================
``Var(n)``      a real variable of the world (named as in z3)
``Fn(f, p)``    ``exp(p)``, ``log(p)``, ``inv(p) = 1/p`` (``sigmoid(t) = inv(1 + exp(-t))``,
                ``tanh(t) = 1 - 2 inv(1 + exp(2t))``: one base function, see :mod:`cfmlir.verify.terms`),
                ``sin(p)``, ``cos(p)``, ``floor(p)``
``Ite(c, a, b)`` a conditional value (split away by :mod:`cfmlir.verify.cases`)
==============  ================================================================================

Formulas: ``Cmp(p, strict)`` (``p > 0`` / ``p >= 0``), ``Eq(p)`` (``p = 0``), ``And``, ``Or``,
``Not`` (only of an opaque ``BVar``: every other negation is pushed inwards), ``TRUE``, ``FALSE``;
a comparison is scaled so that its first non-constant coefficient is 1 or -1.

The constructors simplify: ``exp(0) = 1``, ``log(1) = 0``, ``inv(c) = 1/c``, ``log(1 + exp(a)) =
a + log(1 + exp(-a))`` when ``a`` leads with a negative coefficient (one orientation per softplus),
``Ite(TRUE, a, b) = a``, ``Ite(c, a, a) = a``, comparisons of constants are decided.

Example: ``sub(sigmoid(x), sigmoid(x))`` is ``ZERO``; ``var("x") * var("x")`` is the monomial
``x^2``.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import count

_ids = count()
_table: dict = {}


def _intern(cls, key, make):
    k = (cls, key)
    n = _table.get(k)
    if n is None:
        n = make()
        n.id = next(_ids)
        _table[k] = n
    return n


class _Node:
    """An interned atom or formula: its id, the variables and functions it mentions, whether it holds an ``Ite``."""

    __slots__ = ("id", "vars", "fns", "has_ite")

    def __repr__(self) -> str:
        return show(self)


# -- atoms ---------------------------------------------------------------------------------------
class Atom(_Node):
    __slots__ = ()


class Var(Atom):
    __slots__ = ("name",)


class Fn(Atom):
    __slots__ = ("f", "arg")


class Ite(Atom):
    __slots__ = ("cond", "a", "b")


def var(name: str) -> "Poly":
    def make():
        v = Var()
        v.name = name
        v.vars = frozenset((name,))
        v.fns = frozenset()
        v.has_ite = False
        return v

    return atom_poly(_intern(Var, name, make))


def _fn_atom(f: str, arg: "Poly") -> Atom:
    def make():
        a = Fn()
        a.f, a.arg = f, arg
        a.vars = arg.vars
        a.fns = arg.fns | ({a} if f != "inv" else frozenset())
        a.has_ite = arg.has_ite
        return a

    a = _intern(Fn, (f, arg.id), make)
    if f != "inv" and a not in a.fns:  # (the set made in make() could not name a itself)
        a.fns = a.fns | {a}
    return a


def fn(f: str, arg: "Poly") -> "Poly":
    """``exp``, ``log``, ``inv``, ``sin``, ``cos`` or ``floor`` of ``arg``, simplified (see the module docstring)."""
    q = arg.constant()
    if f == "sin" and q == 0:
        return ZERO
    if f == "cos" and q == 0:
        return ONE
    if f == "floor" and q is not None:
        return const(q.numerator // q.denominator)
    if f == "exp" and q == 0:
        return ONE
    if f == "log" and q == 1:
        return ZERO
    if f == "inv":
        if q is not None and q != 0:
            return const(1 / q)
        # inv(c * m) for a single monomial: keep as an atom (no rewriting of powers)
    if f == "log":
        a = _log1p_exp(arg)
        if a is not None and a.lead_negative():
            return add(a, fn("log", add(ONE, fn("exp", neg(a)))))
    return atom_poly(_fn_atom(f, arg))


def _log1p_exp(arg: "Poly"):
    """``a`` when ``arg`` is ``1 + exp(a)``."""
    if len(arg.terms) != 2:
        return None
    (m0, c0), (m1, c1) = arg.terms
    for (ma, ca), (mb, cb) in (((m0, c0), (m1, c1)), ((m1, c1), (m0, c0))):
        if ma == () and ca == 1 and cb == 1 and len(mb) == 1 and mb[0][1] == 1:
            at = mb[0][0]
            if isinstance(at, Fn) and at.f == "exp":
                return at.arg
    return None


def ite(c: "Formula", a: "Poly", b: "Poly") -> "Poly":
    if c is TRUE:
        return a
    if c is FALSE:
        return b
    if a is b:
        return a

    def make():
        t = Ite()
        t.cond, t.a, t.b = c, a, b
        t.vars = c.vars | a.vars | b.vars
        t.fns = c.fns | a.fns | b.fns
        t.has_ite = True
        return t

    return atom_poly(_intern(Ite, (c.id, a.id, b.id), make))


# -- polynomials ---------------------------------------------------------------------------------
_MONO_KEYS: dict = {}


def _mono_key(m) -> tuple:
    k = _MONO_KEYS.get(m)
    if k is None:
        if len(_MONO_KEYS) > 500000:
            _MONO_KEYS.clear()
        k = _MONO_KEYS[m] = tuple((a.id, j) for a, j in m)
    return k


class Poly:
    """``sum c * prod a^k`` over ``terms``: a tuple of ``(monomial, Fraction)`` in canonical order,
    a monomial a tuple of ``(atom, power)`` sorted by atom id (``()`` is the constant monomial)."""

    __slots__ = ("id", "terms", "vars", "fns", "has_ite", "atoms")

    def constant(self) -> Fraction | None:
        if not self.terms:
            return Fraction(0)
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    def lead_negative(self) -> bool:
        for m, c in self.terms:
            if m != ():
                return c < 0
        return bool(self.terms) and self.terms[0][1] < 0

    def __repr__(self) -> str:
        return show(self)

    # operators for readable construction in tests
    def __add__(self, o):
        return add(self, lift(o))

    def __radd__(self, o):
        return add(lift(o), self)

    def __sub__(self, o):
        return sub(self, lift(o))

    def __rsub__(self, o):
        return sub(lift(o), self)

    def __mul__(self, o):
        return mul(self, lift(o))

    def __rmul__(self, o):
        return mul(lift(o), self)

    def __truediv__(self, o):
        return div(self, lift(o))

    def __rtruediv__(self, o):
        return div(lift(o), self)

    def __neg__(self):
        return neg(self)


def _poly(acc: dict) -> Poly:
    items = [(m, c) for m, c in acc.items() if c]
    if len(items) > 1:
        items.sort(key=lambda mc: _mono_key(mc[0]))
    terms = tuple(items)

    def make():
        p = Poly()
        p.terms = terms
        atoms = {a for m, _ in terms for a, _k in m}
        p.atoms = frozenset(atoms)
        vs, fs, it = frozenset(), frozenset(), False
        for a in atoms:
            vs |= a.vars
            fs |= a.fns
            it = it or a.has_ite
        p.vars, p.fns, p.has_ite = vs, fs, it
        return p

    return _intern(Poly, tuple((_mono_key(m), c) for m, c in terms), make)


def const(q) -> Poly:
    q = Fraction(q)
    return _poly({(): q} if q != 0 else {})


def atom_poly(a: Atom) -> Poly:
    return _poly({((a, 1),): Fraction(1)})


def lift(x) -> Poly:
    return x if isinstance(x, Poly) else const(x)


ZERO = const(0)
ONE = const(1)


def add(*ps: Poly) -> Poly:
    acc: dict = {}
    for p in ps:
        for m, c in p.terms:
            acc[m] = acc.get(m, 0) + c
    return _poly(acc)


def scale(p: Poly, c) -> Poly:
    if not c:
        return ZERO
    if c == 1:
        return p
    return _poly({m: k * c for m, k in p.terms})


def neg(p: Poly) -> Poly:
    return scale(p, -1)


def sub(p: Poly, q: Poly) -> Poly:
    return add(p, neg(q))


def _mono_mul(m1, m2):
    if not m1:
        return m2
    if not m2:
        return m1
    d = dict(m1)
    for a, k in m2:
        d[a] = d.get(a, 0) + k
    return tuple(sorted(d.items(), key=lambda ak: ak[0].id))


def mul(*ps: Poly) -> Poly:
    out = ONE
    for p in ps:
        q = p.constant()
        if q is not None:
            out = scale(out, q)
            continue
        qo = out.constant()
        if qo is not None:
            out = scale(p, qo)
            continue
        acc: dict = {}
        for m1, c1 in out.terms:
            for m2, c2 in p.terms:
                m = _mono_mul(m1, m2)
                acc[m] = acc.get(m, 0) + c1 * c2
        out = _poly(acc)
    return out


def power(p: Poly, n: int) -> Poly:
    out = ONE
    for _ in range(n):
        out = mul(out, p)
    return out


def inv(p: Poly) -> Poly:
    return fn("inv", p)


def div(p: Poly, q: Poly) -> Poly:
    c = q.constant()
    if c is not None and c != 0:
        return scale(p, 1 / c)
    return mul(p, inv(q))


def exp(p: Poly) -> Poly:
    return fn("exp", p)


def log(p: Poly) -> Poly:
    return fn("log", p)


# -- formulas ------------------------------------------------------------------------------------
class Formula(_Node):
    __slots__ = ()


class BConst(Formula):
    __slots__ = ("value",)


class Cmp(Formula):
    """``p > 0`` (strict) or ``p >= 0``."""

    __slots__ = ("p", "strict")


class Eq(Formula):
    """``p = 0``."""

    __slots__ = ("p",)


class And(Formula):
    __slots__ = ("parts",)


class Or(Formula):
    __slots__ = ("parts",)


class BVar(Formula):
    """A constraint the procedure does not interpret (a Boolean variable, ``IsInt``, ...)."""

    __slots__ = ("name",)


class Not(Formula):
    """The negation of a :class:`BVar` (every other negation is pushed inwards)."""

    __slots__ = ("b",)


def _bconst(v: bool):
    def make():
        b = BConst()
        b.value = v
        b.vars, b.fns, b.has_ite = frozenset(), frozenset(), False
        return b

    return _intern(BConst, v, make)


TRUE = _bconst(True)
FALSE = _bconst(False)


def _leaf(cls, key, fill):
    def make():
        f = cls.__new__(cls)
        fill(f)
        return f

    return _intern(cls, key, make)


def cmp(p: Poly, strict: bool) -> Formula:
    q = p.constant()
    if q is not None:
        return TRUE if (q > 0 if strict else q >= 0) else FALSE
    lead = next(c for m, c in p.terms if m != ())
    if abs(lead) != 1:  # one scaling per comparison: 1/2*u >= 0 is u >= 0
        p = scale(p, 1 / abs(lead))

    def fill(f):
        f.p, f.strict = p, strict
        f.vars, f.fns, f.has_ite = p.vars, p.fns, p.has_ite

    return _leaf(Cmp, (p.id, strict), fill)


def ge(a: Poly, b: Poly) -> Formula:
    return cmp(sub(a, b), False)


def gt(a: Poly, b: Poly) -> Formula:
    return cmp(sub(a, b), True)


def eq(p: Poly) -> Formula:
    q = p.constant()
    if q is not None:
        return TRUE if q == 0 else FALSE
    if p.lead_negative():  # one of p = 0, -p = 0
        p = neg(p)

    def fill(f):
        f.p = p
        f.vars, f.fns, f.has_ite = p.vars, p.fns, p.has_ite

    return _leaf(Eq, p.id, fill)


def bvar(name: str) -> Formula:
    def fill(f):
        f.name = name
        f.vars, f.fns, f.has_ite = frozenset(), frozenset(), False

    return _leaf(BVar, name, fill)


def _nary(cls, parts):
    def fill(f):
        f.parts = parts
        vs, fs, it = frozenset(), frozenset(), False
        for p in parts:
            vs |= p.vars
            fs |= p.fns
            it = it or p.has_ite
        f.vars, f.fns, f.has_ite = vs, fs, it

    return _leaf(cls, tuple(p.id for p in parts), fill)


def _junction(cls, unit: Formula, absorbing: Formula, fs) -> Formula:
    """The flattened ``cls`` (``And`` or ``Or``) of ``fs``: nested ``cls`` parts spliced in, ``unit`` and
    repeated parts dropped, ``absorbing`` if any part is; ``unit`` for no parts, the part itself for one."""
    out, seen = [], set()
    for f in fs:
        for g in (f.parts if isinstance(f, cls) else (f,)):
            if g is absorbing:
                return absorbing
            if g is unit or g.id in seen:
                continue
            seen.add(g.id)
            out.append(g)
    if not out:
        return unit
    if len(out) == 1:
        return out[0]
    return _nary(cls, tuple(out))


def and_(*fs: Formula) -> Formula:
    return _junction(And, TRUE, FALSE, fs)


def or_(*fs: Formula) -> Formula:
    return _junction(Or, FALSE, TRUE, fs)


def not_(f: Formula) -> Formula:
    if f is TRUE:
        return FALSE
    if f is FALSE:
        return TRUE
    if isinstance(f, Cmp):
        return cmp(neg(f.p), not f.strict)
    if isinstance(f, Eq):
        return or_(cmp(f.p, True), cmp(neg(f.p), True))
    if isinstance(f, And):
        return or_(*[not_(g) for g in f.parts])
    if isinstance(f, Or):
        return and_(*[not_(g) for g in f.parts])
    if isinstance(f, Not):
        return f.b

    def fill(g):
        g.b = f
        g.vars, g.fns, g.has_ite = f.vars, f.fns, f.has_ite

    return _leaf(Not, f.id, fill)


def bite(c: Formula, a: Formula, b: Formula) -> Formula:
    """The Boolean ``c ? a : b``."""
    return or_(and_(c, a), and_(not_(c), b))


# -- substitution --------------------------------------------------------------------------------
def substitute(node, mapping: dict, memo: dict | None = None):
    """``node`` with every atom/formula whose id is in ``mapping`` replaced (``Var`` -> ``Poly``,
    a formula -> a formula), rebuilt through the simplifying constructors."""
    if memo is None:
        memo = {}
    return _subst(node, mapping, memo)


def _subst(n, mp, memo):
    r = memo.get(n.id)
    if r is not None:
        return r
    if n.id in mp:
        r = mp[n.id]
    elif isinstance(n, Poly):
        keep: dict = {}
        parts = []
        for m, c in n.terms:
            factors = [(a, k, _subst_atom(a, mp, memo)) for a, k in m]
            if all(pa is None for _a, _k, pa in factors):
                keep[m] = c
                continue
            t = const(c)
            for a, k, pa in factors:
                t = mul(t, power(pa if pa is not None else atom_poly(a), k))
            parts.append(t)
        r = n if not parts else add(_poly(keep), *parts)
    elif isinstance(n, Cmp):
        p = _subst(n.p, mp, memo)
        r = n if p is n.p else cmp(p, n.strict)
    elif isinstance(n, Eq):
        p = _subst(n.p, mp, memo)
        r = n if p is n.p else eq(p)
    elif isinstance(n, And):
        parts = [_subst(g, mp, memo) for g in n.parts]
        r = n if all(a is b for a, b in zip(parts, n.parts)) else and_(*parts)
    elif isinstance(n, Or):
        parts = [_subst(g, mp, memo) for g in n.parts]
        r = n if all(a is b for a, b in zip(parts, n.parts)) else or_(*parts)
    elif isinstance(n, Not):
        b = _subst(n.b, mp, memo)
        r = n if b is n.b else not_(b)
    else:
        r = n
    memo[n.id] = r
    return r


def _subst_atom(a, mp, memo):
    """The polynomial replacing atom ``a``, or ``None`` when it is unchanged."""
    if a.id in mp:
        return mp[a.id]
    key = ("atom", a.id)
    if key in memo:
        return memo[key]
    r = None
    if isinstance(a, Fn):
        arg = _subst(a.arg, mp, memo)
        if arg is not a.arg:
            r = fn(a.f, arg)
    elif isinstance(a, Ite):
        c = _subst(a.cond, mp, memo)
        x = _subst(a.a, mp, memo)
        y = _subst(a.b, mp, memo)
        if c is not a.cond or x is not a.a or y is not a.b:
            r = ite(c, x, y)
    memo[key] = r
    return r


def subst_var(node, name: str, value: Poly):
    """``node`` with the variable ``name`` replaced by ``value``."""
    v = var(name).terms[0][0][0][0]
    return substitute(node, {v.id: value})


# -- inspection ----------------------------------------------------------------------------------
def ites(node) -> list:
    """The ``Ite`` atoms of ``node`` (each once)."""
    out, seen = [], set()

    def go(n):
        if n.id in seen or not n.has_ite:
            return
        seen.add(n.id)
        if isinstance(n, Poly):
            for m, _c in n.terms:
                for a, _k in m:
                    go_atom(a)
        elif isinstance(n, (Cmp, Eq)):
            go(n.p)
        elif isinstance(n, (And, Or)):
            for g in n.parts:
                go(g)
        elif isinstance(n, Not):
            go(n.b)

    def go_atom(a):
        if a.id in seen or not a.has_ite:
            return
        seen.add(a.id)
        if isinstance(a, Fn):
            go(a.arg)
        elif isinstance(a, Ite):
            out.append(a)
            go(a.cond)
            go(a.a)
            go(a.b)

    go(node)
    return out


def show(n) -> str:
    """A readable rendering (for messages and tests)."""
    if isinstance(n, Poly):
        if not n.terms:
            return "0"
        parts = []
        for m, c in n.terms:
            fac = "*".join(show(a) + (f"^{k}" if k != 1 else "") for a, k in m)
            if not fac:
                parts.append(str(c))
            elif c == 1:
                parts.append(fac)
            elif c == -1:
                parts.append("-" + fac)
            else:
                parts.append(f"{c}*{fac}")
        return " + ".join(parts).replace("+ -", "- ")
    if isinstance(n, Var):
        return n.name
    if isinstance(n, Fn):
        return f"{n.f}({show(n.arg)})"
    if isinstance(n, Ite):
        return f"({show(n.cond)} ? {show(n.a)} : {show(n.b)})"
    if isinstance(n, BConst):
        return "true" if n.value else "false"
    if isinstance(n, Cmp):
        return f"{show(n.p)} {'>' if n.strict else '>='} 0"
    if isinstance(n, Eq):
        return f"{show(n.p)} = 0"
    if isinstance(n, And):
        return "(" + " and ".join(show(g) for g in n.parts) + ")"
    if isinstance(n, Or):
        return "(" + " or ".join(show(g) for g in n.parts) + ")"
    if isinstance(n, BVar):
        return n.name
    if isinstance(n, Not):
        return f"not {show(n.b)}"
    return repr(n)
