"""The chord lemma for ``sin`` and ``cos``, decided on a whole obligation in linear z3 (no case split).

The Sin/Cos relaxations of the polyhedral and zonotope certifiers are the chord of ``[l, u]`` moved
by a band ``e = (u - l)^2 / 8 * M`` (``M >= max |f|`` on ``[l, u]``).  Their claim holds by the
interpolation error of a line through two points of ``f``, which no case of
:mod:`cfmlir.verify.cases` can see (``f(x)`` against ``f(l)``, ``f(u)`` and a slope), and the rules'
conditionals (``has_phase``, ``min``, ``max``, ``abs``, the band test) make more than 3000 cases
per obligation.  This module states the lemma for every ordered triple of applications
``f(a), f(t), f(b)`` of one ``f`` in ``{sin, cos}`` and gives the *whole* obligation to z3 at once,
where its SAT solver splits the conditionals lazily.

The lemma.  For ``a < b`` and ``a <= t <= b``, with ``chord(t) = f(a) + (f(b) - f(a)) inv(b - a) (t - a)``:

    (C1)  |f(t) - chord(t)| <= (b - a)^2 / 8,
    (C2)  |f(t) - chord(t)| >  |f(e)| (b - a)^2 / 8 where |f(e)| = max(|f(a)|, |f(b)|), e in {a, b}
          ==>  an extremum (k + 1/2) pi (sin) or k pi (cos) of f lies strictly between a and b.

*Proof.*  Linear interpolation: ``f(t) - chord(t) = f''(xi) / 2 * (t - a)(t - b)`` for some ``xi`` in
``(a, b)``, and ``f'' = -f``, so ``|f(t) - chord(t)| <= max_[a, b] |f| * (t - a)(b - t) / 2
<= max_[a, b] |f| * (b - a)^2 / 8``.  ``|f| <= 1`` gives (C1).  Without an extremum of ``f`` strictly
inside ``(a, b)``, ``f`` is monotone on ``[a, b]`` (``f' `` keeps its sign between consecutive zeros
of ``f'``, which are the extrema), so ``max_[a, b] |f| = max(|f(a)|, |f(b)|)``: (C2) is the
contrapositive.  QED.  The extremum witness is :func:`cfmlir.verify.trig_extrema.extremum_between`
with ``floor``'s maximality, as in that module (``k`` a z3 real; ``pi`` through its 50-digit rational
bounds), one ``k`` per pair ``(a, b)`` and kind of extremum, shared by every implication that concludes
it (the true world takes an extremum's integer where one exists).  The query also states that
module's extremum lemma (a value below both ends needs a minimum between them), the range, ``|sin t|
<= |t|`` and 1-Lipschitz facts.

The encoding is *linear*: a monomial of degree two or more (``x sin(u) inv(u - l)``, ``l^2``) is an
opaque real, the same real wherever the same monomial occurs (the expressions are hash-consed, so the
chord the rule wrote and the chord of the lemma are the same monomials); a product with a conditional
is distributed into it (``u^2 Ite(c, a, b)`` is ``If(c, u^2 a, u^2 b)``), so a band's
``M (b - a)^2`` meets the lemma's ``|f(e)| (b - a)^2`` monomial by monomial.  Two monomials that
differ in one variable are equal where the variables are (``x = l  ==>  x cos(l) = l cos(l)``: the
degenerate interval ``l = u``).  Two more true linear facts connect a rule's band to the lemma's:
``g1 >= g2  ==>  (b - a)^2 g1 >= (b - a)^2 g2`` for ``g`` among ``1, +-f(a), +-f(b)`` (a larger factor
makes a larger band), and each top-level premise ``E >= 0`` times each branch ``S`` of a conditional
(``S >= 0  ==>  S E >= 0``: a slope meets the premises about the variable it multiplies, as in
SkipPoly's back-substituted lower bound).  Every fact holds for the real functions and every monomial's real,
so ``unsat`` is a proof; ``sat`` or a timeout prove nothing (the caller goes on to its cases).

Example: DeepPoly's ``curr[L] <= curr`` for Sin (3281 cases) is one query, ``unsat`` in about a second.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import count

import z3

from cfmlir.verify import expr as E
from cfmlir.verify import trig_extrema
from cfmlir.verify.trig_extrema import EXTREMA, extremum_between

#: the functions the lemma is about
FUNCTIONS = tuple(EXTREMA)


class _Linear:
    """Formulas of :mod:`cfmlir.verify.expr` as linear z3 terms over opaque monomials."""

    def __init__(self):
        self._memo: dict = {}
        self.apps: dict[int, E.Fn] = {}  # sin/cos/floor applications met (id -> atom)
        self._app_real: dict[int, object] = {}
        self.monomials: dict[tuple, object] = {}  # nonlinear monomial key -> its real
        self._mono_of: dict[tuple, tuple] = {}  # key -> monomial
        self._fresh = count()

    # -- atoms ----------------------------------------------------------------------------------
    def app(self, a):
        v = self._app_real.get(a.id)
        if v is None:
            v = self._app_real[a.id] = z3.Real(f"__{a.f}{a.id}")
            self.apps[a.id] = a
            self.poly(a.arg)  # (its applications are met too)
        return v

    def _linear_atom(self, a):
        if isinstance(a, E.Var):
            return z3.Real(a.name)
        if isinstance(a, E.Fn) and a.f in FUNCTIONS + ("floor",):
            return self.app(a)
        return None

    def _opaque(self, mono):
        key = tuple((a.id, k) for a, k in mono)
        v = self.monomials.get(key)
        if v is None:
            v = self.monomials[key] = z3.Real(f"__m{next(self._fresh)}")
            self._mono_of[key] = mono
            for a, _k in mono:  # an application inside a product is still an application
                if isinstance(a, E.Fn) and a.f in FUNCTIONS + ("floor",):
                    self.app(a)
        return v

    def _monomial(self, mono, c):
        if any(isinstance(a, E.Ite) for a, _k in mono):  # (distributed by poly)
            return self.poly(E.mul(E.const(c), *(E.power(E.atom_poly(a), k) for a, k in mono)))
        if len(mono) == 1 and mono[0][1] == 1:
            t = self._linear_atom(mono[0][0])
            if t is not None:
                return t if c == 1 else z3.RealVal(c) * t
        v = self._opaque(mono)
        return v if c == 1 else z3.RealVal(c) * v

    # -- nodes ----------------------------------------------------------------------------------
    def poly(self, p):
        r = self._memo.get(p.id)
        if r is None:
            terms, groups = [], {}
            for m, c in p.terms:
                ite = next(((a, k) for a, k in m if isinstance(a, E.Ite)), None)
                if ite is None:
                    terms.append(z3.RealVal(c) if m == () else self._monomial(m, c))
                else:  # the monomials with one conditional share one If: R Ite(c, a, b)^k
                    rest = E.mul(E.const(c), *(E.power(E.atom_poly(b), j) for b, j in m if b is not ite[0]))
                    groups.setdefault(ite, []).append(rest)
            for (t, k), rests in groups.items():
                cof = E.add(*rests)
                terms.append(z3.If(self.formula(t.cond), self.poly(E.mul(cof, E.power(t.a, k))),
                                   self.poly(E.mul(cof, E.power(t.b, k)))))
            r = self._memo[p.id] = z3.Sum(terms) if len(terms) > 1 else terms[0] if terms else z3.RealVal(0)
        return r

    def formula(self, f):
        r = self._memo.get(f.id)
        if r is None:
            r = self._memo[f.id] = _FORMULA.get(type(f), _unconstrained)(self, f)
        return r

    # -- facts ----------------------------------------------------------------------------------
    def congruence(self) -> list:
        """``v = w  ==>  m = m'`` for every two monomials (or a monomial and a variable's multiple)
        that differ by one factor ``v`` against ``w``."""
        names = {}  # the variables of sin/cos arguments (the ends and the point of a chord)
        for app in self.apps.values():
            if app.f in FUNCTIONS:
                for mono, _c in app.arg.terms:
                    for a, _k in mono:
                        if isinstance(a, E.Var):
                            names[a.id] = a
        out = []
        for key, mono in list(self._mono_of.items()):
            for i, (a, k) in enumerate(mono):
                if a.id not in names:
                    continue
                for b in names.values():
                    if b.id == a.id:
                        continue
                    other = E.mul(*(E.power(E.atom_poly(x), j) for x, j in mono[:i] + mono[i + 1:]),
                                  E.power(E.atom_poly(a), k - 1), E.atom_poly(b))
                    if len(other.terms) != 1:
                        continue
                    m2, c2 = other.terms[0]
                    k2 = tuple((x.id, j) for x, j in m2)
                    if k2 == key or (k2 not in self.monomials and not (len(m2) == 1 and m2[0][1] == 1)):
                        continue
                    out.append(z3.Implies(z3.Real(a.name) == z3.Real(b.name),
                                          self.monomials[key] == self._monomial(m2, c2)))
        return out


def _abs(x):
    return z3.If(x >= 0, x, -x)


def _chord(fa, ft, fb, a, t, b):
    """``chord(t)`` of the module docstring, as an expression."""
    return E.add(fa, E.mul(E.sub(fb, fa), E.inv(E.sub(b, a)), E.sub(t, a)))


def _lemmas(lin: _Linear) -> list:
    apps = list(lin.apps.values())
    floors = [(lin.app(a), lin.poly(a.arg)) for a in apps if a.f == "floor"]
    out: list = []
    witnesses: dict = {}

    def extremum(off, a, b):
        """``(2k + off) pi`` strictly inside ``(a, b)``, one ``k`` per pair and kind of extremum: the
        true world takes for ``k`` the integer of such an extremum where one exists (any integer
        else), so every implication that concludes it holds; floor's maximality holds for it."""
        key = (off, a.id, b.id)
        w = witnesses.get(key)
        if w is None:
            k = z3.Real(f"__k{len(witnesses)}")
            out.extend(z3.Implies(k <= t, k <= v) for v, t in floors)
            w = witnesses[key] = extremum_between(k, off, lin.poly(a.arg), lin.poly(b.arg))
        return w

    # the extremum lemma (a value below, above, both ends), with the shared witnesses
    out.extend(trig_extrema.lemmas(apps, lin.app, lambda a: lin.poly(a.arg), None, witness=extremum))
    slopes = {a.arg.id for key in lin.monomials for a, _k in lin._mono_of[key] if isinstance(a, E.Fn) and a.f == "inv"}
    for a in apps:
        if a.f in FUNCTIONS:
            out += [lin.app(a) >= -1, lin.app(a) <= 1]
            if a.f == "sin":  # |sin t| <= |t|
                out += [lin.app(a) <= _abs(lin.poly(a.arg)), -lin.app(a) <= _abs(lin.poly(a.arg))]
        elif a.f == "floor":
            out += [lin.app(a) <= lin.poly(a.arg), lin.app(a) > lin.poly(a.arg) - 1]
    for f in FUNCTIONS:
        fs = [a for a in apps if a.f == f]
        for a in fs:
            for b in fs:
                if a.id == b.id:
                    continue
                za, zb = lin.poly(a.arg), lin.poly(b.arg)
                out.append(lin.app(a) - lin.app(b) <= _abs(za - zb))  # 1-Lipschitz (so f(a) = f(b) at a = b)
                lo_off, hi_off = EXTREMA[f]
                if E.sub(b.arg, a.arg).id not in slopes:  # (no chord of [a, b] in the claim)
                    continue
                fa, fb = E.atom_poly(a), E.atom_poly(b)
                width2 = E.power(E.sub(b.arg, a.arg), 2)
                # (b - a)^2 >= 0: a larger factor makes a larger band (every oriented pair with a chord:
                # which of sin(a), sin(b) was made first must not matter)
                gs = (E.const(1), fa, E.neg(fa), fb, E.neg(fb))
                for g1 in gs:
                    for g2 in gs:
                        if g1 is not g2:
                            d = E.sub(g1, g2)
                            out.append(z3.Implies(lin.poly(d) >= 0, lin.poly(E.mul(width2, d)) >= 0))
                for t in fs:
                    if t.id in (a.id, b.id):
                        continue
                    zt = lin.poly(t.arg)
                    ft = E.atom_poly(t)
                    err = E.sub(ft, _chord(fa, ft, fb, a.arg, t.arg, b.arg))  # f(t) - chord(t)
                    inside = z3.And(za < zb, za <= zt, zt <= zb)
                    c1 = E.scale(width2, Fraction(1, 8))
                    out.append(z3.Implies(inside, z3.And(lin.poly(E.add(err, c1)) >= 0, lin.poly(E.sub(c1, err)) >= 0)))
                    for fe in (fa, fb):  # (C2) with |f(e)| = s f(e)
                        for s in (1, -1):
                            m = E.scale(fe, s)
                            dominant = z3.And(*(lin.poly(E.sub(m, g)) >= 0 for g in (fa, E.neg(fa), fb, E.neg(fb))))
                            c2 = E.scale(E.mul(m, width2), Fraction(1, 8))
                            beyond = z3.Or(lin.poly(E.add(err, c2)) < 0, lin.poly(E.sub(c2, err)) < 0)
                            out.append(z3.Implies(z3.And(inside, dominant, beyond), z3.Or(extremum(lo_off, a, b), extremum(hi_off, a, b))))
    return out


def _multiplied(lin: _Linear, formulas) -> list:
    """Each top-level premise ``E >= 0`` (``= 0``) times each non-constant branch ``S`` of a
    conditional: ``S >= 0 ==> S E >= 0`` (``S E = 0``), expanded into monomials.  (A slope that is
    a conditional meets the premises about the variable it multiplies: ``k x`` against ``k L``.)"""
    premises = [f for f in formulas[:-1] if isinstance(f, (E.Cmp, E.Eq))]
    seen, mults = set(), []
    for f in formulas:
        for t in E.ites(f):
            for br in (t.a, t.b):
                if br.id not in seen and br.constant() is None and not br.has_ite:
                    seen.add(br.id)
                    mults.append(br)
    out = []
    for S in mults:
        zs = lin.poly(S)
        for f in premises:
            prod = lin.poly(E.mul(S, f.p))
            if isinstance(f, E.Eq):
                out.append(prod == 0)
            else:
                out += [z3.Implies(zs >= 0, prod >= 0), z3.Implies(zs <= 0, prod <= 0)]
    return out


#: the z3 formula of each kind of formula (a Boolean variable: unconstrained -- weaker, still a proof)
_FORMULA = {
    E.Cmp: lambda lin, f: lin.poly(f.p) > 0 if f.strict else lin.poly(f.p) >= 0,
    E.Eq: lambda lin, f: lin.poly(f.p) == 0,
    E.And: lambda lin, f: z3.And([lin.formula(g) for g in f.parts]),
    E.Or: lambda lin, f: z3.Or([lin.formula(g) for g in f.parts]),
    E.Not: lambda lin, f: z3.Not(lin.formula(f.b)),
    E.BConst: lambda lin, f: z3.BoolVal(f.value),
}


def _unconstrained(_lin, f):
    return z3.Bool(f"__b{f.id}")


#: the children of each kind of node, for :func:`has_trig`
_CHILDREN = {
    E.Poly: lambda x: x.atoms,
    E.Fn: lambda x: (x.arg,),
    E.Ite: lambda x: (x.cond, x.a, x.b),
    E.Cmp: lambda x: (x.p,),
    E.Eq: lambda x: (x.p,),
    E.And: lambda x: x.parts,
    E.Or: lambda x: x.parts,
    E.Not: lambda x: (x.b,),
}


def has_trig(formulas) -> bool:
    """Do ``formulas`` apply ``sin`` or ``cos`` three times or more (the lemmas are about triples)?"""
    seen, stack, n = set(), list(formulas), 0
    while stack:
        x = stack.pop()
        if x.id in seen:
            continue
        seen.add(x.id)
        n += isinstance(x, E.Fn) and x.f in FUNCTIONS
        stack.extend(_CHILDREN.get(type(x), lambda _x: ())(x))
    return n >= 3


def unsat(formulas, timeout: float = 5.0) -> bool:
    """Is the conjunction ``formulas`` (:mod:`cfmlir.verify.expr` formulas, conditionals and all)
    unsatisfiable with the chord and extremum lemmas (module docstring)?  ``False`` when it applies
    ``sin``/``cos`` fewer than three times or z3 does not answer ``unsat``."""
    if not has_trig(formulas):
        return False
    lin = _Linear()
    fs = [lin.formula(f) for f in formulas]
    s = z3.Solver()  # (z3's default: as fast as QF_LRA's or faster on the shipped rules' queries)
    s.set("timeout", max(1, int(timeout * 1000)))
    s.add(*fs)
    s.add(*_multiplied(lin, formulas))
    s.add(*_lemmas(lin))
    s.add(*lin.congruence())
    return s.check() == z3.unsat
