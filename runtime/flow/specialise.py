"""A compiled rule specialised to members the caller already has: the emitted function with those
results dropped and the statements only they needed removed.

Algorithm: an emitted rule (:mod:`cfmlir.passes.emit_python`) is straight-line code in SSA form --
``vN = rt.op(...)`` / ``ctx.op(...)`` assignments, nested ``def`` helpers handed to traverses, ``if``
statements over host booleans, and one ``return (v_a, v_b, ...)`` listing the members in the order of
``FLOW['members']``.  :func:`rule_without` replaces the dropped positions of the return tuple by
``None`` and removes dead code backwards: a statement is kept when a name it binds is read later (in
the return or in a kept statement) or when it calls something with an effect (``ctx.fresh_noise``: it
numbers the rule's noise symbols); an ``if`` keeps its test when a branch keeps anything.  Every other
call is pure (the tensor API and the context's reads), so the specialised rule computes the remaining
members exactly as the full rule does.

Example: DeepPoly's ``Affine`` rule without ``l`` and ``u`` (positions 0 and 1) keeps the PolyExp
``prev . weight + bias`` and drops both back-substitutions (its two ``ctx.traverse_layers`` calls and
their concretisations), which is what makes a branch-and-bound child that reuses its parent's bounds
cheap (:mod:`cfruntime.flow.overrides`, ``replace=True``).
"""

from __future__ import annotations

import ast

#: ``ctx`` methods with an effect that a dead-code removal must keep
EFFECTFUL_CALLS = frozenset({"fresh_noise"})


def rule_without(cert, op: str, dropped: tuple[int, ...]):
    """``cert.rules[op]`` with the results at positions ``dropped`` replaced by None and not computed
    (made once per certifier, operator and positions)."""
    cache = cert.__dict__.setdefault("_specialised", {})
    key = (op, tuple(sorted(dropped)))
    if key not in cache:
        cache[key] = _specialise(cert, op, key[1])
    return cache[key]


def _specialise(cert, op: str, dropped: tuple[int, ...]):
    full = cert.rules[op]
    tree = ast.parse(cert.source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == full.__name__), None)
    if fn is None or not isinstance(fn.body[-1], ast.Return) or not isinstance(fn.body[-1].value, ast.Tuple):
        return _dropping(full, dropped)  # not emitted code as this module knows it: compute, then drop
    ret = fn.body[-1]
    elts = list(ret.value.elts)
    for i in dropped:
        elts[i] = ast.Constant(None)
    ret.value.elts = elts
    fn.body = _live(fn.body, set())
    fn.name = f"{fn.name}_without_{'_'.join(map(str, dropped))}"
    module = ast.fix_missing_locations(ast.Module([fn], type_ignores=[]))
    space: dict = {}
    exec(compile(module, f"<specialised {cert.name} {op}>", "exec"), space)  # noqa: S102 - our own emitted code
    return space[fn.name]


def _dropping(full, dropped):
    def rule(rt, ctx):
        values = list(full(rt, ctx))
        for i in dropped:
            values[i] = None
        return tuple(values)

    return rule


def _live(body: list, live: set) -> list:
    """The statements of ``body`` that compute a name in ``live`` (updated to the names read by the
    kept statements) or have an effect, walking backwards."""
    kept = []
    for stmt in reversed(body):
        if isinstance(stmt, ast.If):
            then_live, other_live = set(live), set(live)
            then, other = _live(stmt.body, then_live), _live(stmt.orelse, other_live)
            if not then and not other:
                continue
            stmt.body = then or [ast.Pass()]
            stmt.orelse = other
            live |= then_live | other_live | _names_read(stmt.test)
            kept.append(stmt)
            continue
        if isinstance(stmt, ast.Assign) and _is_tuple_copy(stmt):
            stmt = _tuple_copy_live(stmt, live)
            if stmt is None:
                continue
        elif isinstance(stmt, (ast.Assign, ast.FunctionDef)) and not (_binds(stmt) & live) and not _effectful(stmt):
            continue
        live |= _names_read(stmt)
        kept.append(stmt)
    return kept[::-1]


def _is_tuple_copy(stmt: ast.Assign) -> bool:
    """``a, b, = (x, y,)``: the join of an ``if``'s branches."""
    return (len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Tuple)
            and len(stmt.targets[0].elts) == len(stmt.value.elts)
            and all(isinstance(t, ast.Name) for t in stmt.targets[0].elts))


def _tuple_copy_live(stmt: ast.Assign, live: set):
    pairs = [(t, v) for t, v in zip(stmt.targets[0].elts, stmt.value.elts) if t.id in live or _effectful(v)]
    if not pairs:
        return None
    stmt.targets[0].elts = [t for t, _ in pairs]
    stmt.value.elts = [v for _, v in pairs]
    return stmt


def _binds(stmt) -> set:
    if isinstance(stmt, ast.FunctionDef):
        return {stmt.name}
    return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _names_read(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _effectful(node) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in EFFECTFUL_CALLS
               for n in ast.walk(node))
