"""Sound encodings of ``sigmoid``, ``tanh``, ``exp``, ``log``, ``sin`` and ``cos`` for z3 (over-approximations).

Each application ``f(t)`` (one per distinct argument term) is a fresh real ``f_t`` constrained only
by facts that hold for the true function, so a formula proved for every function satisfying them
holds for ``f`` (a proof is sound); a model may use values ``f`` does not take (a counterexample
must be replayed with the real function, see :mod:`cfmlir.verify.replay`).  Writing ``d_t`` for the
derivative expressed through the value (sigmoid: ``f(1-f)``, tanh: ``1-f^2``, exp: ``f``):

* range and sign: sigmoid ``0 < f_t < 1``, ``f_t < 1/2`` iff ``t < 0``; tanh ``-1 < f_t < 1``,
  sign of ``t``; exp ``f_t > 0``, ``f_t >= 1 + t``, ``f_t < 1`` iff ``t < 0``;
* for every pair of applications ``a < b``: ``f_a < f_b`` (monotone) and the mean-value facts of an
  S-shaped function (convex for ``t <= 0``, concave for ``t >= 0``, derivative unimodal, at most
  ``dmax`` = 1/4 for sigmoid and 1 for tanh):
  ``b <= 0``: ``d_a (b-a) <= f_b - f_a <= d_b (b-a)``;  ``a >= 0``: ``d_b (b-a) <= f_b - f_a <= d_a (b-a)``;
  always ``min(d_a, d_b) (b-a) <= f_b - f_a <= dmax (b-a)``; exp (convex):
  ``e_a (b-a) <= e_b - e_a <= e_b (b-a)``;  ``a = b`` gives ``f_a = f_b``;
* log (concave, derivative ``1/t``; facts only for positive arguments): ``1 - 1/t <= g_t <= t - 1``,
  the sign of ``t - 1``,
  and for ``0 < a < b``: ``(b-a)/b <= g_b - g_a <= (b-a)/a``.

What is exact and what is not: affine arithmetic, ReLU, max/min, abs, comparisons and conditionals
are exact (non-linear *polynomial* real arithmetic, decided by z3's nlsat); these four functions are
over-approximated by the facts above; ``lp`` and the list builtins ``argmax``/``argmin`` with a
comparison function are outside the fragment.
"""

from __future__ import annotations

import math

import z3

from cfruntime.scalar import exp as fexp, log as flog, sigmoid

_SPEC = {
    # name: (lower, upper, value at 0, derivative from the value, maximal derivative)
    "sigmoid": (0, 1, z3.RealVal("1/2"), lambda f: f * (1 - f), z3.RealVal("1/4")),
    "tanh": (-1, 1, z3.RealVal(0), lambda f: 1 - f * f, z3.RealVal(1)),
}


def true_value(name: str, x: float) -> float:
    """The real function in float64, as the reference interpreter computes it."""
    return {"sigmoid": sigmoid, "tanh": math.tanh, "exp": fexp, "log": flog, "sin": math.sin, "cos": math.cos}[name](x)


class Nonlinear:
    """The applications made so far and their facts (``facts`` are added to the premises)."""

    def __init__(self, prefix: str = ""):
        self.apps: dict[str, list[tuple]] = {"sigmoid": [], "tanh": [], "exp": [], "log": [], "sin": [], "cos": []}
        #: ``(name, argument, fresh real)`` of every application in order of creation
        self.order: list[tuple] = []
        self._by_id: dict[tuple, object] = {}
        self._prefix = prefix
        self.facts: list = []

    @property
    def any(self) -> bool:
        return bool(self._by_id)

    def apply(self, name: str, t):
        t = z3.simplify(t) if not z3.is_rational_value(t) else t
        key = (name, t.get_id())
        v = self._by_id.get(key)
        if v is not None:
            return v
        if z3.is_rational_value(t):  # a constant argument: a constant result (rounded outward)
            x = float(t.as_fraction())
            v = z3.Real(f"{self._prefix}{name}_{len(self._by_id)}")
            fx = true_value(name, x)
            if math.isfinite(fx):  # (log of a number <= 0, exp overflowing: nothing is known)
                pad = 1e-13 * max(1.0, abs(fx))  # covers the few ulp of error of the float64 formula
                self.facts += [v >= z3.RealVal(fx - pad), v <= z3.RealVal(fx + pad)]
        else:
            v = z3.Real(f"{self._prefix}{name}_{len(self._by_id)}")
        self._by_id[key] = v
        self._facts_for(name, t, v)
        self.apps[name].append((t, v))
        self.order.append((name, t, v))
        return v

    def _facts_for(self, name: str, t, f) -> None:
        out = self.facts
        if name in ("sin", "cos"):
            _trig_facts(out, name, t, f, self.apps)
            return
        if name == "log":
            out.append(z3.Implies(t > 0, z3.And(f <= t - 1, f * t >= t - 1, z3.If(t < 1, f < 0, z3.If(t > 1, f > 0, f == 0)))))
            for (a, fa) in self.apps[name]:
                out.append(_pair_log(a, fa, t, f))
                out.append(_pair_log(t, f, a, fa))
            return
        if name == "exp":
            out += [f > 0, f >= 1 + t, z3.If(t < 0, f < 1, z3.If(t > 0, f > 1, f == 1))]
            for (a, fa) in self.apps[name]:
                out.append(_pair_exp(a, fa, t, f))
                out.append(_pair_exp(t, f, a, fa))
            return
        lo, hi, f0, d, dmax = _SPEC[name]
        out += [f > lo, f < hi, z3.If(t < 0, f < f0, z3.If(t > 0, f > f0, f == f0))]
        apps = self.apps[name]
        for (a, fa) in apps:
            out.append(_pair_s(a, fa, t, f, d, dmax))
            out.append(_pair_s(t, f, a, fa, d, dmax))
        # The derivative is unimodal: between two points it is at least the smaller end value, so
        # (mean value theorem) every secant inside [a, b] has at least that slope.
        pts = apps + [(t, f)]
        for i, (a, fa) in enumerate(pts):
            for j, (b, fb) in enumerate(pts):
                if i == j:
                    continue
                lo = _min(d(fa), d(fb))
                for k, (m, fm) in enumerate(pts):
                    if k != i and k != j and (t is a or t is b or t is m):
                        out.append(z3.Implies(z3.And(a <= m, m <= b), z3.And(
                            z3.Or(d(fm) >= d(fa), d(fm) >= d(fb)),
                            fm - fa >= lo * (m - a), fb - fm >= lo * (b - m))))

def _min(a, b):
    return z3.If(a <= b, a, b)


def _pair_s(a, fa, b, fb, d, dmax):
    """The facts for ``a < b`` (and ``a = b``) of an S-shaped function."""
    da, db = d(fa), d(fb)
    w = b - a
    df = fb - fa
    lo_any = z3.If(da <= db, da, db) * w
    return z3.And(
        z3.Implies(a == b, fa == fb),
        z3.Implies(a < b, z3.And(
            fa < fb,
            df >= lo_any, df <= dmax * w,
            z3.Implies(b <= 0, z3.And(df >= da * w, df <= db * w)),
            z3.Implies(a >= 0, z3.And(df >= db * w, df <= da * w)),
        )),
    )


def _pair_exp(a, ea, b, eb):
    w = b - a
    return z3.And(z3.Implies(a == b, ea == eb),
                  z3.Implies(a < b, z3.And(ea < eb, eb - ea >= ea * w, eb - ea <= eb * w)))


def _pair_log(a, ga, b, gb):
    w = b - a
    return z3.And(z3.Implies(a == b, ga == gb),
                  z3.Implies(z3.And(a > 0, a < b), z3.And(ga < gb, (gb - ga) * b >= w, (gb - ga) * a <= w)))


def _trig_facts(out: list, name: str, t, f, apps: dict) -> None:
    """``sin``/``cos``: the range, the Taylor bounds at 0 (``|sin t| <= |t|``, ``1 - t^2/2 <= cos t <=
    1 - t^2/2 + t^4/24``), 1-Lipschitz between two applications of one function, ``sin^2 + cos^2 = 1``
    at one argument."""
    out += [f >= -1, f <= 1]
    if name == "sin":
        out += [f <= _abs(t), -f <= _abs(t)]
    else:
        out += [f >= 1 - t * t / 2, f <= 1 - t * t / 2 + t * t * t * t / 24]
    for (a, fa) in apps[name]:
        out.append(z3.And(z3.Implies(a == t, fa == f), f - fa <= _abs(t - a), fa - f <= _abs(t - a)))
    other = "cos" if name == "sin" else "sin"
    for (a, fa) in apps[other]:
        out.append(z3.Implies(a == t, fa * fa + f * f == 1))


def _abs(x):
    return z3.If(x >= 0, x, -x)
