"""Closed intervals of extended reals in float64, rounded outward (the prover's enclosures).

An interval ``(lo, hi)`` with ``-inf <= lo <= hi <= inf`` stands for the reals between its ends;
an infinite end means "unbounded" (a real value is never infinite).  Every operation returns an
interval that contains the exact real result for every choice of reals in its arguments:

* ``+ - * /`` are correctly rounded in IEEE float64, so each computed end is moved one ulp outward
  (``math.nextafter``; a product that underflowed to 0 too: ``1e-200 * 1e-200`` is a positive
  real) -- except a sum that is exact (Knuth's TwoSum error term is 0), so that
  ``0 + 0`` stays ``0`` and a strict atom at 0 is seen to fail; ``0 * inf`` is ``0`` (an end at infinity is a limit, the factor 0 is exact);
  a division by an interval containing 0 is the whole line;
* ``exp`` and ``log`` come from the C library, assumed accurate to 1 ulp (glibc documents < 1 ulp);
  their ends are moved four ulp outward.  ``exp`` overflowing at the lower end gives the largest
  float (not ``inf``, which would claim more than is known); ``log`` of an interval ``[0, hi]``
  (``hi > 0``) is unbounded below (``log(0) = -inf``), and the whole line when the interval reaches
  below 0 or is ``[0, 0]`` (the log of a negative number is no real, NaN in float64; the encoding
  says nothing there).

* ``sin`` and ``cos`` (:func:`sin`, :func:`cos`): the end values from the C library (glibc's are within
  one ulp, with an exact range reduction for every float) moved four ulp outward and clipped to
  ``[-1, 1]``; an extremum ``(k + 1/2) pi`` (sin) or ``k pi`` (cos) is included when its enclosure with
  the 50-digit rational bounds of ``pi`` (:data:`PI_LO` < pi < :data:`PI_HI`, never float ``pi``)
  meets the interval, compared in exact rational arithmetic; ``[-1, 1]`` for an unbounded interval
  or one at least 7 wide (more than a period);
* ``floor`` is exact on the ends (float64 numbers of magnitude >= 2**52 are integers).

Example: ``mul((-1.0, 2.0), (3.0, inf))`` is ``(-inf, inf)``; ``exp((0.0, 1.0))`` is
``(0.999..., 2.718...)`` containing ``[1, e]``.
"""

from __future__ import annotations

import math
from fractions import Fraction

INF = math.inf
WHOLE = (-INF, INF)
_MAX = 1.7976931348623157e308


def down(x: float, ulps: int = 1) -> float:
    for _ in range(ulps):
        x = math.nextafter(x, -INF)
    return x


def up(x: float, ulps: int = 1) -> float:
    for _ in range(ulps):
        x = math.nextafter(x, INF)
    return x


def point(x: float) -> tuple[float, float]:
    return (x, x)


def const(lo: float, hi: float) -> tuple[float, float]:
    """The interval of a rational constant given its float64 neighbours."""
    return (lo, hi)


def meet(a, b):
    return (max(a[0], b[0]), min(a[1], b[1]))


def _lo(x: float) -> float:
    return -INF if math.isnan(x) else down(x)


def _hi(x: float) -> float:
    return INF if math.isnan(x) else up(x)


def _exact_sum(x: float, y: float, s: float) -> bool:
    """Is the float sum ``s = x + y`` exact (Knuth's TwoSum error term is 0)?"""
    if math.isinf(s) or math.isnan(s):
        return False
    bb = s - x
    return (x - (s - bb)) + (y - bb) == 0.0


def add(a, b):
    lo, hi = a[0] + b[0], a[1] + b[1]
    if lo != -INF and not (not math.isinf(a[0]) and not math.isinf(b[0]) and _exact_sum(a[0], b[0], lo)):
        lo = _lo(lo)
    if hi != INF and not (not math.isinf(a[1]) and not math.isinf(b[1]) and _exact_sum(a[1], b[1], hi)):
        hi = _hi(hi)
    return (lo, hi)


def neg(a):
    return (-a[1], -a[0])


def sub(a, b):
    return add(a, neg(b))


def _mul1(x: float, y: float) -> tuple[float, float]:
    """The product of two end points as an interval: exact for a factor 0 (``0 * inf = 0``) or an
    infinite factor (a limit); else one ulp either side of the rounded product -- also when that
    product underflowed to 0 (``1e-200 * 1e-200`` is ``0.0`` in float64, but a positive real) or
    overflowed."""
    if x == 0.0 or y == 0.0:
        return (0.0, 0.0)
    p = x * y
    if math.isinf(x) or math.isinf(y):
        return (p, p)
    return (down(p), up(p))


def mul(a, b):
    if a[0] == a[1] == 0.0 or b[0] == b[1] == 0.0:
        return (0.0, 0.0)
    ps = (_mul1(a[0], b[0]), _mul1(a[0], b[1]), _mul1(a[1], b[0]), _mul1(a[1], b[1]))
    return (min(p[0] for p in ps), max(p[1] for p in ps))


def sqr(a):
    """``a * a`` without the dependency loss of ``mul(a, a)`` (never negative)."""
    lo, hi = a
    if lo >= 0:
        m, M = lo * lo, hi * hi
    elif hi <= 0:
        m, M = hi * hi, lo * lo
    else:
        m, M = 0.0, max(lo * lo, hi * hi)
    return (down(m) if m > 0 else 0.0, up(M) if M != INF else INF)


def recip(b):
    lo, hi = b
    if lo <= 0.0 <= hi:
        return WHOLE
    ends = (1.0 / hi if hi != INF else 0.0, 1.0 / lo if lo != -INF else 0.0)
    r0, r1 = min(ends), max(ends)
    return (down(r0) if r0 != 0.0 or lo < 0 else 0.0, up(r1) if r1 != 0.0 or hi > 0 else 0.0)


def div(a, b):
    if b[0] <= 0.0 <= b[1]:
        return WHOLE
    return mul(a, recip(b))


def power(a, n: int):
    """``a ** n`` for an integer ``n >= 0``."""
    if n == 0:
        return (1.0, 1.0)
    if n == 1:
        return a
    if n % 2 == 0:
        return power(sqr(a), n // 2)
    return mul(a, power(a, n - 1))


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return INF


def exp(a):
    lo = _exp(a[0])
    hi = _exp(a[1])
    lo = _MAX if lo == INF else max(0.0, down(lo, 4))
    hi = INF if hi == INF else up(hi, 4)
    return (lo, hi)


def log(a):
    lo, hi = a
    if lo < 0.0 or hi <= 0.0:  # the log of a negative number is no real (NaN in float64): unknown
        return WHOLE
    top = INF if hi == INF else up(math.log(hi), 4)
    if lo == 0.0:  # log(0) = -inf, as the interpreter and torch compute it
        return (-INF, top)
    return (down(math.log(lo), 4), top)


def width(a) -> float:
    return a[1] - a[0]


def mid(a) -> float:
    """A finite point of ``a`` (its midpoint when bounded)."""
    lo, hi = a
    if lo == -INF and hi == INF:
        return 0.0
    if lo == -INF:
        return hi - max(1.0, abs(hi))
    if hi == INF:
        return lo + max(1.0, abs(lo))
    m = 0.5 * lo + 0.5 * hi
    return min(max(m, lo), hi)


#: rational bounds of pi (50 digits): ``PI_LO < pi < PI_HI``
PI_LO = Fraction(314159265358979323846264338327950288419716939937510, 10 ** 50)
PI_HI = PI_LO + Fraction(1, 10 ** 50)


def _trig_end(f, x: float) -> tuple[float, float]:
    v = f(x)
    return (max(-1.0, down(v, 4)), min(1.0, up(v, 4)))


def _hits(lo: float, hi: float, k: int, shift: Fraction) -> bool:
    """Might the real ``(k + shift) pi`` lie in ``[lo, hi]``?  (exact: its rational enclosure meets it)"""
    m = k + shift
    a, b = (m * PI_LO, m * PI_HI) if m >= 0 else (m * PI_HI, m * PI_LO)
    return a <= Fraction(hi) and b >= Fraction(lo)


def _trig(a, f, shift: Fraction):
    """The image of ``[lo, hi]`` under ``f`` (sin: extrema at ``(k + 1/2) pi``, shift 1/2; cos: at ``k pi``,
    shift 0; a maximum for even ``k``)."""
    lo, hi = a
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo >= 7.0:
        return (-1.0, 1.0)
    a0, a1 = _trig_end(f, lo)
    b0, b1 = _trig_end(f, hi)
    rlo, rhi = min(a0, b0), max(a1, b1)
    k0 = math.floor(lo / math.pi - float(shift)) - 1
    k1 = math.ceil(hi / math.pi - float(shift)) + 1
    for k in range(k0, k1 + 1):
        if _hits(lo, hi, k, shift):
            if k % 2 == 0:
                rhi = 1.0
            else:
                rlo = -1.0
    return (rlo, rhi)


def sin(a):
    return _trig(a, math.sin, Fraction(1, 2))


def cos(a):
    return _trig(a, math.cos, Fraction(0))


def floor(a):
    lo, hi = a
    return (float(math.floor(lo)) if math.isfinite(lo) else lo, float(math.floor(hi)) if math.isfinite(hi) else hi)
