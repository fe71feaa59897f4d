"""VNN-LIB 1.0 properties (the subset used in VNN-COMP), parsed by our own s-expression reader.

Supported::

    ; comments
    (declare-const X_0 Real) ... (declare-const Y_9 Real)
    (assert (<= X_0 0.5))  (assert (>= X_0 -0.5))        ; variable vs number, either order
    (assert (or (and (>= Y_1 Y_0) ...) (and ...)))      ; Y vs number or Y vs Y; and / or nested
    (assert (or (and (<= X_0 1) (>= X_0 0) (>= Y_0 Y_1)) ...))   ; several input boxes (DNF with X)

``<`` and ``>`` are read as ``<=`` and ``>=`` (their closure).  Numbers may be
written ``-0.5``, ``1e-3`` or ``(- 0.5)``.

The asserts together describe the *counterexample* region (the negated
property).  After conversion to DNF every disjunct is an input box plus a
conjunction of output constraints.  Disjuncts with the same input box are
grouped into one :class:`InputRegion`::

    region.lb, region.ub              float64 [num_inputs]
    region.disjuncts[k] = (A, b)      A float64 [r_k, num_outputs], b [r_k]:
                                      the constraints are  A @ y <= b

Verdicts (VNN-COMP): ``unsat`` -- no input of any box reaches any disjunct
(the property holds); ``sat`` -- a concrete input in a box whose output
satisfies all constraints of some disjunct was found; ``unknown`` otherwise.
Bad files raise :class:`~cfruntime.errors.VnnlibError` as
``error: <file>:<line>: <what>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cfruntime.errors import VnnlibError
from cfruntime.gzio import read_text

_VAR_RE = re.compile(r"^([XY])_(\d+)$")
#: a guard against a formula whose disjunctive normal form explodes (an ``and`` of ``or``s multiplies); a flat
#: ``or`` may be long (nn4sys_2023's ``lindex_60000``: 120,000 disjuncts)
_MAX_DISJUNCTS = 1_000_000
#: The most ``and``/``or`` alternations a formula may nest (a chain of one operator, such as
#: ``(and a (and b (and c ...)))``, is flattened and may be of any length).
MAX_FORMULA_DEPTH = 100


# ---------------------------------------------------------------------------------------------
# data model
# ---------------------------------------------------------------------------------------------
@dataclass
class InputRegion:
    lb: np.ndarray
    ub: np.ndarray
    disjuncts: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def __eq__(self, other) -> bool:
        if not isinstance(other, InputRegion):
            return NotImplemented
        return (
            np.array_equal(self.lb, other.lb) and np.array_equal(self.ub, other.ub)
            and len(self.disjuncts) == len(other.disjuncts)
            and all(np.array_equal(a1, a2) and np.array_equal(b1, b2) for (a1, b1), (a2, b2) in zip(self.disjuncts, other.disjuncts))
        )

    def stacked(self) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """All constraint rows stacked: ``(A [R, m], b [R], groups)``; ``groups[k]`` are the row indices of disjunct ``k``.
        Use ``A`` as a (shared) margin matrix: the property holds on this region if for every
        disjunct some row has ``lower_bound(A @ y) > b``."""
        m = self.disjuncts[0][0].shape[1] if self.disjuncts else 0
        rows, bs, groups, r = [], [], [], 0
        for A, b in self.disjuncts:
            rows.append(A)
            bs.append(b)
            groups.append(np.arange(r, r + A.shape[0]))
            r += A.shape[0]
        A = np.concatenate(rows) if rows else np.zeros((0, m))
        b = np.concatenate(bs) if bs else np.zeros(0)
        return A, b, groups


@dataclass
class VnnlibProperty:
    num_inputs: int
    num_outputs: int
    regions: list[InputRegion]
    source: str = "<vnnlib>"

    def __eq__(self, other) -> bool:
        if not isinstance(other, VnnlibProperty):
            return NotImplemented
        return (self.num_inputs, self.num_outputs) == (other.num_inputs, other.num_outputs) and self.regions == other.regions

    def _single(self) -> InputRegion:
        if len(self.regions) != 1:
            raise VnnlibError(f"property has {len(self.regions)} input boxes; use .regions", file=self.source)
        return self.regions[0]

    @property
    def input_lb(self) -> np.ndarray:
        return self._single().lb

    @property
    def input_ub(self) -> np.ndarray:
        return self._single().ub

    @property
    def disjuncts(self) -> list[tuple[np.ndarray, np.ndarray]]:
        return self._single().disjuncts

    def compares_outputs_only(self) -> bool:
        """Whether every constraint row is ``c (y_i - y_j) <= 0``: true of the outputs of a network
        exactly when of its logits before a Softmax (softmax keeps the order of the outputs)."""
        for region in self.regions:
            for A, b in region.disjuncts:
                for row, rhs in zip(A, b):
                    nz = np.flatnonzero(row)
                    if rhs != 0 or len(nz) != 2 or row[nz[0]] != -row[nz[1]]:
                        return False
        return True


# ---------------------------------------------------------------------------------------------
# s-expression reader
# ---------------------------------------------------------------------------------------------
class _Atom(str):
    line: int


class _List(list):
    line: int


def _line(x) -> int:
    """The line of a token or list (:func:`_read`), 1 where there is none (:func:`_read_fast`, whose errors
    are reported again by :func:`_read`)."""
    return getattr(x, "line", 1)


#: a token: a parenthesis or a run of characters that are neither space, parenthesis nor ``;`` (a comment's start)
_TOKEN_RE = re.compile(r"[()]|[^\s();]+")


def _tokenize(text: str, src: str):
    """``(token, line)`` pairs; ``;`` starts a comment to the end of its line (one regex scan per line:
    nn4sys_2023's ``lindex_60000`` has 120,000 lines)."""
    toks = []
    find = _TOKEN_RE.findall
    for lineno, line in enumerate(text.splitlines(), start=1):
        cut = line.find(";")
        toks.extend([(tok, lineno) for tok in find(line if cut < 0 else line[:cut])])
    return toks


def _read(text: str, src: str) -> list:
    toks = _tokenize(text, src)
    stack: list[_List] = []
    top: list = []
    push, pop = stack.append, stack.pop
    for tok, line in toks:
        if tok == "(":
            lst = _List()
            lst.line = line
            push(lst)
        elif tok == ")":
            if not stack:
                raise VnnlibError("unbalanced parentheses: unexpected ')'", file=src, line=line)
            done = pop()
            (stack[-1] if stack else top).append(done)
        else:
            if not stack:
                raise VnnlibError(f"unexpected '{tok}' outside parentheses", file=src, line=line)
            a = _Atom(tok)
            a.line = line
            stack[-1].append(a)
    if stack:
        raise VnnlibError("unbalanced parentheses: missing ')'", file=src, line=stack[-1].line)
    return top


_COMMENT_RE = re.compile(r";[^\n]*")


def _read_fast(text: str) -> list:
    """:func:`_read` without line numbers (no :class:`_Atom`, no line on a :class:`_List`): about 10x
    faster and leaner on nn4sys_2023's properties (84 MB of text, 28 million tokens: 14 GB through
    :func:`_read`).  Any error raises a bare :class:`VnnlibError`; :func:`parse_vnnlib` then reads the text
    again with :func:`_read` for the message with its line."""
    top: list = []
    stack: list = []
    cur = top
    push, pop = stack.append, stack.pop
    for line in _COMMENT_RE.sub("", text).split("\n"):
        for tok in _TOKEN_RE.findall(line):
            if tok == "(":
                new = _List()
                cur.append(new)
                push(cur)
                cur = new
            elif tok == ")":
                if not stack:
                    raise VnnlibError("unbalanced parentheses")
                cur = pop()
            elif cur is top:
                raise VnnlibError("a token outside parentheses")
            else:
                cur.append(tok)
    if stack:
        raise VnnlibError("unbalanced parentheses")
    return top


# ---------------------------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------------------------
def parse_vnnlib(path: str | Path | None = None, *, text: str | None = None, source: str | None = None) -> VnnlibProperty:
    """Parse a VNN-LIB file (plain or gzip-compressed, e.g. ``prop.vnnlib.gz``), or ``text``, into input
    boxes + linear output constraints."""
    if text is None:
        if path is None:
            raise ValueError("parse_vnnlib needs a path or text")
        p = Path(path)
        if not p.is_file():
            raise VnnlibError("no such VNN-LIB file", file=p)
        try:
            text = read_text(p)  # gzip-compressed (.vnnlib.gz) transparently
        except UnicodeDecodeError:
            raise VnnlibError("cannot read: not a UTF-8 text file (nor gzip-compressed text)", file=p) from None
        except OSError as e:
            raise VnnlibError(f"cannot read ({e.strerror or e})", file=p) from None
        src = source or str(p)
    else:
        src = source or (str(path) if path is not None else "<vnnlib>")
    try:  # the fast reader first; on any error the exact one, for the message with its line
        return _Parser(src).parse(_read_fast(text))
    except VnnlibError:
        pass
    return _Parser(src).parse(_read(text, src))


class _Parser:
    def __init__(self, src):
        self.src = src
        self.decl: dict[str, int] = {}  # name -> line

    def err(self, what, line):
        return VnnlibError(what, file=self.src, line=line)

    def parse(self, exprs) -> VnnlibProperty:
        asserts = []
        for e in exprs:
            if not isinstance(e, _List) or not e or isinstance(e[0], _List):
                raise self.err("expected a command like (declare-const ...) or (assert ...)", _line(e))
            head = e[0]
            if head == "declare-const":
                if len(e) != 3 or isinstance(e[1], _List) or isinstance(e[2], _List):
                    raise self.err("expected (declare-const <name> Real)", _line(e))
                name, typ = e[1], e[2]
                if not _VAR_RE.match(name):
                    raise self.err(f"variable '{name}' must be named X_<i> (input) or Y_<j> (output)", _line(e))
                if typ != "Real":
                    raise self.err(f"variable '{name}' has type '{typ}'; only Real is supported", _line(e))
                if name in self.decl:
                    raise self.err(f"variable '{name}' declared twice", _line(e))
                self.decl[name] = _line(e)
            elif head == "assert":
                if len(e) != 2:
                    raise self.err("expected (assert <formula>)", _line(e))
                asserts.append(e[1])
            else:
                raise self.err(f"unsupported command '{head}'", _line(e))
        self.n_in = self._count("X")
        self.n_out = self._count("Y")
        if self.n_in == 0:
            raise self.err("no input variables X_i declared", 1)
        if self.n_out == 0:
            raise self.err("no output variables Y_j declared", 1)
        # DNF of the conjunction of all asserts; a conjunct is a list of atoms
        dnf = [[]]
        for a in asserts:
            dnf = self._and(dnf, self._dnf(a), _line(a))
        regions: dict[tuple, InputRegion] = {}
        for conj in dnf:
            lb = np.full(self.n_in, -np.inf)
            ub = np.full(self.n_in, np.inf)
            lb_line, ub_line = {}, {}  # input -> the line of the assert that gave its bound
            rows, bs = [], []
            for kind, payload, line in conj:
                if kind == "x":
                    i, lo, hi = payload
                    if lo > lb[i]:
                        lb[i], lb_line[i] = lo, line
                    if hi < ub[i]:
                        ub[i], ub_line[i] = hi, line
                else:
                    rows.append(payload[0])
                    bs.append(payload[1])
            for i in range(self.n_in):
                name = f"X_{i}"
                if not np.isfinite(lb[i]):
                    raise self.err(f"no lower bound for {name}", self.decl[name])
                if not np.isfinite(ub[i]):
                    raise self.err(f"no upper bound for {name}", self.decl[name])
            if np.any(lb > ub):
                i = int(np.flatnonzero(lb > ub)[0])
                lo_at, hi_at = lb_line[i], ub_line[i]
                raise self.err(f"empty input box: X_{i} >= {lb[i]:g} (line {lo_at}) and X_{i} <= {ub[i]:g} (line {hi_at}) "
                               "cannot both hold", max(lo_at, hi_at))
            key = (lb.tobytes(), ub.tobytes())
            reg = regions.setdefault(key, InputRegion(lb, ub, []))
            A = np.array(rows, dtype=np.float64).reshape(len(rows), self.n_out)
            reg.disjuncts.append((A, np.array(bs, dtype=np.float64)))
        return VnnlibProperty(self.n_in, self.n_out, list(regions.values()), self.src)

    def _count(self, prefix) -> int:
        idx = sorted(int(m.group(2)) for m in (_VAR_RE.match(n) for n in self.decl) if m.group(1) == prefix)
        for want, got in enumerate(idx):
            if want != got:
                raise self.err(f"variables {prefix}_0..{prefix}_{idx[-1]} are not all declared ({prefix}_{want} missing)",
                               self.decl[f"{prefix}_{got}"])
        return len(idx)

    def _and(self, d1, d2, line):
        if len(d1) * len(d2) > _MAX_DISJUNCTS:
            raise self.err(f"formula too large: more than {_MAX_DISJUNCTS} disjuncts in disjunctive normal form", line)
        return [a + b for a in d1 for b in d2]

    def _operands(self, f, head: str) -> list:
        """The operands of the ``and``/``or`` ``f`` with nested formulas of the same operator spliced in
        (associativity), iteratively: a chain of any length becomes one level."""
        out, todo = [], list(reversed(f[1:]))
        while todo:
            g = todo.pop()
            if isinstance(g, _List) and g and not isinstance(g[0], _List) and g[0] == head:
                if head == "or" and len(g) < 2:
                    raise self.err("empty (or)", _line(g))
                todo.extend(reversed(g[1:]))
            else:
                out.append(g)
        return out

    def _dnf(self, f, depth: int = 1) -> list[list]:
        line = _line(f)
        if not isinstance(f, _List) or not f:
            raise self.err(f"expected a formula, got '{f}'" if not isinstance(f, _List) else "empty formula '()'", line)
        head = f[0]
        if isinstance(head, _List):
            raise self.err("expected an operator", line)
        if head in ("and", "or") and depth > MAX_FORMULA_DEPTH:
            raise self.err(f"formula nested too deeply: more than {MAX_FORMULA_DEPTH} alternations of 'and' and 'or'", line)
        if head == "and":
            out = [[]]
            for g in self._operands(f, "and"):
                out = self._and(out, self._dnf(g, depth + 1), line)
            return out
        if head == "or":
            if len(f) < 2:
                raise self.err("empty (or)", line)
            out = []
            for g in self._operands(f, "or"):
                out.extend(self._dnf(g, depth + 1))
                if len(out) > _MAX_DISJUNCTS:
                    raise self.err(f"formula too large: more than {_MAX_DISJUNCTS} disjuncts", line)
            return out
        if head in ("<=", ">=", "<", ">"):
            return [[self._atom(f)]]
        raise self.err(f"unsupported operator '{head}'", line)

    def _term(self, t):
        """('var', name) or ('num', value)."""
        if not isinstance(t, _List) and t in self.decl:  # a declared name (X_i, Y_j) is never a number
            return ("var", str(t))
        line = _line(t)
        if isinstance(t, _List):
            if len(t) == 2 and t[0] == "-" and not isinstance(t[1], _List):
                v = self._number(t[1])
                if v is None:
                    raise self.err(f"expected a number after '-', got '{t[1]}'", line)
                return ("num", -v)
            raise self.err("only variables and numbers may be compared (no arithmetic terms)", line)
        v = self._number(t)
        if v is not None:
            return ("num", v)
        if t in self.decl:
            return ("var", str(t))
        if _VAR_RE.match(t):
            raise self.err(f"unknown variable '{t}' (not declared)", line)
        raise self.err(f"unknown variable or malformed number '{t}'", line)

    @staticmethod
    def _number(t):
        try:
            v = float(t)
        except ValueError:
            return None
        if not np.isfinite(v) or t.lower() in ("nan", "inf", "-inf", "infinity", "+inf"):
            return None
        return v

    def _atom(self, f):
        line = _line(f)
        if len(f) != 3:
            raise self.err(f"'{f[0]}' takes exactly two arguments", line)
        op = f[0]
        a, b = self._term(f[1]), self._term(f[2])
        if op in (">=", ">"):  # a >= b  <=>  b <= a
            a, b = b, a
        # now: a <= b
        if a[0] == "num" and b[0] == "num":
            raise self.err("comparison between two numbers", line)
        vars_ = [t[1] for t in (a, b) if t[0] == "var"]
        kinds = {v[0] for v in vars_}
        if "X" in kinds:
            if len(vars_) != 1:
                raise self.err("input variables may only be compared with numbers", line)
            i = int(vars_[0][2:])
            if a[0] == "var":  # X <= num
                return ("x", (i, -np.inf, b[1]), line)
            return ("x", (i, a[1], np.inf), line)  # num <= X
        row = np.zeros(self.n_out)
        rhs = 0.0
        if a[0] == "var":
            row[int(a[1][2:])] += 1.0
        else:
            rhs -= a[1]
        if b[0] == "var":
            row[int(b[1][2:])] -= 1.0
        else:
            rhs += b[1]
        return ("y", (row, rhs), line)


# ---------------------------------------------------------------------------------------------
# writer
# ---------------------------------------------------------------------------------------------
def _num(v: float) -> str:
    return repr(float(v))


def _row_atom(row: np.ndarray, rhs: float) -> str:
    nz = np.flatnonzero(row)
    if len(nz) == 1 and row[nz[0]] == 1.0:
        return f"(<= Y_{nz[0]} {_num(rhs)})"
    if len(nz) == 1 and row[nz[0]] == -1.0:
        return f"(>= Y_{nz[0]} {_num(-rhs)})"
    if len(nz) == 2 and rhs == 0.0 and sorted(row[nz].tolist()) == [-1.0, 1.0]:
        i = nz[0] if row[nz[0]] == 1.0 else nz[1]
        j = nz[1] if i == nz[0] else nz[0]
        return f"(<= Y_{i} Y_{j})"
    raise ValueError(f"constraint row {row.tolist()} <= {rhs} is not expressible in VNN-LIB 1.0 without arithmetic")


def to_vnnlib(prop: VnnlibProperty) -> str:
    """Write ``prop`` as VNN-LIB text such that ``parse_vnnlib(text=to_vnnlib(p)) == p``."""
    out = [f"; written by cfruntime.properties.vnnlib ({prop.num_inputs} inputs, {prop.num_outputs} outputs)"]
    out += [f"(declare-const X_{i} Real)" for i in range(prop.num_inputs)]
    out += [f"(declare-const Y_{j} Real)" for j in range(prop.num_outputs)]

    def conj_y(A, b):
        return [_row_atom(A[r], b[r]) for r in range(A.shape[0])]

    if len(prop.regions) == 1:
        reg = prop.regions[0]
        out.append("; input box")
        for i in range(prop.num_inputs):
            out.append(f"(assert (<= X_{i} {_num(reg.ub[i])}))")
            out.append(f"(assert (>= X_{i} {_num(reg.lb[i])}))")
        out.append("; unsafe outputs (negated property)")
        parts = []
        for A, b in reg.disjuncts:
            parts.append("(and " + " ".join(conj_y(A, b)) + ")" if A.shape[0] else "(and)")
        if len(parts) == 1 and reg.disjuncts[0][0].shape[0] == 0:
            pass  # no output constraint: the whole box is unsafe
        else:
            out.append("(assert (or\n    " + "\n    ".join(parts) + "\n))")
    else:
        parts = []
        for reg in prop.regions:
            xs = [f"(<= X_{i} {_num(reg.ub[i])}) (>= X_{i} {_num(reg.lb[i])})" for i in range(prop.num_inputs)]
            for A, b in reg.disjuncts:
                parts.append("(and " + " ".join(xs + conj_y(A, b)) + ")")
        out.append("(assert (or\n    " + "\n    ".join(parts) + "\n))")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# verdicts
# ---------------------------------------------------------------------------------------------
def region_verified(region: InputRegion, row_lower_bounds: np.ndarray) -> bool:
    """True if every disjunct has a row with ``lower_bound(A @ y) > b`` (``row_lower_bounds``
    in the order of :meth:`InputRegion.stacked`)."""
    A, b, groups = region.stacked()
    lbs = np.asarray(row_lower_bounds, dtype=np.float64).reshape(-1)
    if lbs.shape[0] != A.shape[0]:
        raise ValueError(f"expected {A.shape[0]} row bounds, got {lbs.shape[0]}")
    return bool(boxes_verified(lbs.reshape(1, -1), b, groups)[0])


def boxes_verified(row_lower_bounds: np.ndarray, b: np.ndarray, groups: list) -> np.ndarray:
    """:func:`region_verified` of many boxes of one region at once: ``row_lower_bounds`` ``[P, R]`` (rows in
    the order of :meth:`InputRegion.stacked`, whose ``b`` and ``groups`` these are) -> ``[P]`` bool."""
    above = np.asarray(row_lower_bounds, dtype=np.float64) > np.asarray(b, dtype=np.float64).reshape(1, -1)
    ok = np.ones(above.shape[0], dtype=bool)
    for g in groups:
        ok &= above[:, g].any(1) if len(g) else False  # a disjunct without rows is never refuted
    return ok


def interval_row_lower_bounds(region: InputRegion, y_lb: np.ndarray, y_ub: np.ndarray) -> np.ndarray:
    """Lower bounds of ``A @ y`` over the output box ``[y_lb, y_ub]`` (interval arithmetic)."""
    A, _, _ = region.stacked()
    y_lb, y_ub = np.asarray(y_lb, np.float64).reshape(-1), np.asarray(y_ub, np.float64).reshape(-1)
    return np.clip(A, 0, None) @ y_lb + np.clip(A, None, 0) @ y_ub


def output_in_disjunct(region: InputRegion, y: np.ndarray, tol: float = 0.0) -> int | None:
    """Index of a disjunct whose constraints the concrete output ``y`` satisfies, else None."""
    y = np.asarray(y, np.float64).reshape(-1)
    for k, (A, b) in enumerate(region.disjuncts):
        if np.all(A @ y <= b + tol):
            return k
    return None


def verdict(prop: VnnlibProperty, region_row_lower_bounds: list[np.ndarray] | None = None,
            counterexample_found: bool = False) -> str:
    """VNN-COMP verdict: ``'sat'`` if a counterexample was found, ``'unsat'`` if every region is verified
    from its row lower bounds (one array per region, see :meth:`InputRegion.stacked`), else ``'unknown'``."""
    if counterexample_found:
        return "sat"
    if region_row_lower_bounds is None or len(region_row_lower_bounds) != len(prop.regions):
        return "unknown"
    ok = all(region_verified(r, lbs) for r, lbs in zip(prop.regions, region_row_lower_bounds))
    return "unsat" if ok else "unknown"
