"""Recursive-descent parser for ConstraintFlow (binary operators by precedence climbing).

Algorithm: declarations and primary expressions by recursive descent; the binary levels below by
precedence climbing (:meth:`Parser.parse_binary`), so that a parenthesised level costs a few Python
frames, not one per precedence level.  An expression nested deeper than
:data:`~cfmlir.syntax.nesting.MAX_NESTING` levels is refused with a located error (the parser counts
its own nesting, and measures each finished body's tree: ``a + b + ... + z`` is a deep tree too).

Grammar (see also the README's "The language" section)::

    program     ::= decl*
    decl        ::= 'def' 'Shape' 'as' '(' param (',' param)* ')' '{' '[' expr (',' expr)* ']' '}' ';'
                  | ('func'|'Func') NAME '(' [param (',' param)*] ')' '=' expr ';'
                  | 'param' NAME 'for' OP (',' OP)* 'in' '[' expr ',' expr ']' ['init' expr] ['else' NUMBER] ';'
                  | 'transformer' NAME '{' (OP '->' expr ';')* '}' [';']
                  | 'flow' '(' ('forward'|'backward') ',' NAME ',' NAME ',' NAME ')' ';'
    param       ::= type NAME
    type        ::= BASE ('List')*

Expressions, lowest to highest precedence (binary levels are left-associative, ``?:`` is
right-associative, comparisons do not chain)::

    expr        ::= or_expr ['?' expr ':' expr]
    or_expr     ::= and_expr ('or' and_expr)*              ('||' too)
    and_expr    ::= cmp_expr ('and' cmp_expr)*             ('&&' too)
    cmp_expr    ::= add_expr [('<'|'<='|'>'|'>='|'=='|'!='|'In') add_expr]
    add_expr    ::= mul_expr (('+'|'-') mul_expr)*
    mul_expr    ::= unary (('*'|'/') unary)*
    unary       ::= ('-'|'!'|'not') unary | postfix
    postfix     ::= primary ( '(' args ')' | '[' NAME ']' | '.' 'map' '(' expr ')'
                            | '.' 'dot' '(' expr ')' | '.' 'mapList' '(' expr ')'
                            | '.' 'traverse' '(' DIR ',' expr ',' expr ',' expr ')' '{' expr '}' )*
    primary     ::= INT | FLOAT | 'true' | 'false' | 'sym' | 'eps' | NAME | BUILTIN '(' args ')'
                  | 'lp' '(' ('minimize'|'maximize') ',' expr ',' expr ')'
                  | '(' expr ')' | '(' expr (',' expr)+ ')' | '[' [expr (',' expr)*] ']'
                  | 'if' expr 'then' expr 'else' expr 'fi'
"""

from __future__ import annotations

from pathlib import Path

from cfmlir.diagnostics import CfError, Loc
from cfmlir.dialects import cf_typing_rules as rules
from cfmlir.syntax import ast
from cfmlir.syntax.lexer import Token, TokenKind, tokenize
from cfmlir.syntax.nesting import MAX_NESTING, deepest, too_deep

#: Words that cannot be used as names.
RESERVED = frozenset(
    {
        "def", "as", "func", "Func", "transformer", "flow", "true", "false", "sym", "eps", "lp",
        "if", "then", "else", "fi", "and", "or", "not", "In", "List", "param",
    }
)

_OPERATOR_SPELLINGS = {op.lower(): op for op in rules.OPERATORS}
_OPERATOR_SPELLINGS.update({"rev_" + op.lower(): "rev_" + op for op in rules.FORWARD_OPERATORS})
_OPERATOR_SPELLINGS.update({"maxpool2d": "Maxpool", "avgpool2d": "Avgpool", "linear": "Affine"})

_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
#: Precedence of the comparisons (they do not chain).
_CMP_PREC = 3
#: Binary operator spelling -> (precedence, canonical operator); higher binds tighter.
_BINARY = {"or": (1, "or"), "||": (1, "or"), "and": (2, "and"), "&&": (2, "and"),
           **{c: (_CMP_PREC, c) for c in _COMPARISONS}, "In": (_CMP_PREC, "In"),
           "+": (4, "+"), "-": (4, "-"), "*": (5, "*"), "/": (5, "/")}


def canonical_operator(name: str) -> str | None:
    """``ReLU``/``relu``/``Relu`` -> ``Relu``; ``None`` if ``name`` is no network operator."""
    return _OPERATOR_SPELLINGS.get(name.lower())


class Parser:
    def __init__(self, text: str, file: str):
        self.file = file
        self.toks = tokenize(text, file)
        self.pos = 0
        self.nesting = 0  # expressions being parsed inside one another (see cfmlir.syntax.nesting)

    # -- token helpers ---------------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.pos]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def at(self, text: str) -> bool:
        return self.tok.kind in (TokenKind.PUNCT, TokenKind.IDENT) and self.tok.text == text

    def next(self) -> Token:
        t = self.tok
        if t.kind is not TokenKind.EOF:
            self.pos += 1
        return t

    def accept(self, text: str) -> Token | None:
        return self.next() if self.at(text) else None

    def expect(self, text: str, what: str | None = None) -> Token:
        if not self.at(text):
            raise CfError(self.tok.loc, f"expected {what or repr(text)}, found {self.tok.describe()}")
        return self.next()

    def expect_name(self, what: str = "a name") -> Token:
        t = self.tok
        if t.kind is not TokenKind.IDENT or t.text in RESERVED:
            raise CfError(t.loc, f"expected {what}, found {t.describe()}")
        return self.next()

    # -- declarations ----------------------------------------------------------------------------
    def parse_program(self) -> ast.Program:
        decls: list[ast.Decl] = []
        while self.tok.kind is not TokenKind.EOF:
            decls.append(self.parse_decl())
        return ast.Program(self.file, decls)

    def parse_decl(self) -> ast.Decl:
        t = self.tok
        if self.at("def"):
            return self.parse_shape()
        if self.at("func") or self.at("Func"):
            return self.parse_func()
        if self.at("param"):
            return self.parse_param_decl()
        if self.at("transformer"):
            return self.parse_transformer()
        if self.at("flow"):
            return self.parse_flow()
        raise CfError(t.loc, f"expected 'def', 'func', 'param', 'transformer' or 'flow', found {t.describe()}")

    def parse_type(self) -> ast.TypeRef:
        t = self.tok
        if t.kind is not TokenKind.IDENT:
            raise CfError(t.loc, f"expected a type, found {t.describe()}")
        name = ast.TYPE_NAME_ALIASES.get(t.text, t.text)
        if name not in ast.BASE_TYPE_NAMES:
            raise CfError(t.loc, f"unknown type '{t.text}'")
        self.next()
        depth = 0
        while self.accept("List"):
            depth += 1
        return ast.TypeRef(name, depth, t.loc)

    def parse_param(self) -> ast.Param:
        ty = self.parse_type()
        name = self.expect_name("a parameter name")
        return ast.Param(ty, name.text, name.loc)

    def parse_shape(self) -> ast.ShapeDecl:
        start = self.expect("def")
        shape_kw = self.expect_name("'Shape'")
        if shape_kw.text != "Shape":
            raise CfError(shape_kw.loc, f"expected 'Shape', found '{shape_kw.text}'")
        self.expect("as")
        self.expect("(")
        members = [self.parse_param()]
        while self.accept(","):
            members.append(self.parse_param())
        self.expect(")")
        self.expect("{")
        self.expect("[")
        constraints: list[ast.Expr] = []
        if not self.at("]"):
            constraints.append(self.parse_top_expr())
            while self.accept(","):
                constraints.append(self.parse_top_expr())
        self.expect("]")
        self.expect("}")
        self.expect(";")
        return ast.ShapeDecl(members, constraints, start.loc)

    def parse_func(self) -> ast.FuncDecl:
        start = self.next()
        name = self.expect_name("a function name")
        self.expect("(")
        params: list[ast.Param] = []
        if not self.at(")"):
            params.append(self.parse_param())
            while self.accept(","):
                params.append(self.parse_param())
        self.expect(")")
        self.expect("=")
        body = self.parse_top_expr()
        self.expect(";")
        return ast.FuncDecl(name.text, params, body, start.loc)

    def parse_operator(self) -> tuple[str, Token]:
        """A network operator name (any spelling) -> its canonical name and token."""
        op_tok = self.tok
        if op_tok.kind is not TokenKind.IDENT:
            raise CfError(op_tok.loc, f"expected an operator name, found {op_tok.describe()}")
        op = canonical_operator(op_tok.text)
        if op is None:
            raise CfError(op_tok.loc, f"unknown operator '{op_tok.text}'")
        self.next()
        return op, op_tok

    def parse_param_decl(self) -> ast.ParamDecl:
        """``param a for Op, ... in [lo, hi] [init e] [else number];`` (see :class:`ast.ParamDecl`)."""
        start = self.expect("param")
        name = self.expect_name("a parameter name")
        self.expect("for", "'for' and the operators the parameter belongs to")
        ops, locs = [], []
        while True:
            op, tok = self.parse_operator()
            if op in ops:
                raise CfError(tok.loc, f"operator '{op}' is named twice for parameter '{name.text}'")
            ops.append(op)
            locs.append(tok.loc)
            if not self.accept(","):
                break
        self.expect("in", "'in' and the parameter's domain '[lo, hi]'")
        self.expect("[", "'[' of the domain '[lo, hi]'")
        lo = self.parse_expr()
        self.expect(",", "',' between the domain's bounds")
        hi = self.parse_expr()
        self.expect("]", "']' closing the domain")
        init, given = None, True
        if self.accept("init"):
            init = self.parse_expr()
        else:  # the midpoint of the domain
            given = False
            init = ast.Binary(op="*", lhs=ast.FloatLit(value=0.5, loc=start.loc),
                              rhs=ast.Binary(op="+", lhs=lo, rhs=hi, loc=start.loc), loc=start.loc)
        default = None
        if self.accept("else"):
            neg = self.accept("-") is not None
            num = self.tok
            if num.kind not in (TokenKind.INT, TokenKind.FLOAT):
                raise CfError(num.loc, f"expected a number after 'else' (the value on other neurons), found {num.describe()}")
            self.next()
            default = (-1.0 if neg else 1.0) * float(num.text)
        self.expect(";")
        return ast.ParamDecl(name.text, ops, lo, hi, init, default, start.loc, locs, given)

    def parse_transformer(self) -> ast.TransformerDecl:
        start = self.expect("transformer")
        name = self.expect_name("a transformer name")
        self.expect("{")
        rules: list[ast.Rule] = []
        while not self.at("}"):
            op_tok = self.tok
            if op_tok.kind is not TokenKind.IDENT:
                raise CfError(op_tok.loc, f"expected an operator name or '}}', found {op_tok.describe()}")
            op = canonical_operator(op_tok.text)
            if op is None:
                raise CfError(op_tok.loc, f"unknown operator '{op_tok.text}'")
            self.next()
            self.expect("->")
            body = self.parse_top_expr()
            self.expect(";")
            rules.append(ast.Rule(op, body, op_tok.loc))
        self.expect("}")
        self.accept(";")
        return ast.TransformerDecl(name.text, rules, start.loc)

    def parse_flow(self) -> ast.FlowDecl:
        start = self.expect("flow")
        self.expect("(")
        d = self.expect_name("'forward' or 'backward'")
        if d.text not in ("forward", "backward"):
            raise CfError(d.loc, f"expected 'forward' or 'backward', found '{d.text}'")
        self.expect(",")
        prio = self.expect_name("a priority function")
        self.expect(",")
        stop = self.expect_name("a stop function")
        self.expect(",")
        tr = self.expect_name("a transformer name")
        self.expect(")")
        self.expect(";")
        return ast.FlowDecl(d.text, prio.text, stop.text, tr.text, start.loc)

    # -- expressions -----------------------------------------------------------------------------
    def parse_top_expr(self) -> ast.Expr:
        """An expression that is not part of another (a body, a constraint), no deeper than
        :data:`~cfmlir.syntax.nesting.MAX_NESTING` levels."""
        e = self.parse_expr()
        depth, node = deepest(e)
        if depth > MAX_NESTING:
            raise CfError(node.loc, too_deep(MAX_NESTING))
        return e

    def _deeper(self) -> None:
        """Enter one more level of nesting; refused beyond :data:`~cfmlir.syntax.nesting.MAX_NESTING`
        (long before Python's own recursion limit: a level costs the parser at most six frames)."""
        if self.nesting >= MAX_NESTING:
            raise CfError(self.tok.loc, too_deep(MAX_NESTING))
        self.nesting += 1

    def parse_expr(self) -> ast.Expr:
        self._deeper()
        try:
            cond = self.parse_binary(1)
            if self.at("?"):
                self.next()
                then = self.parse_expr()
                self.expect(":", "':' of the conditional expression")
                other = self.parse_expr()
                return ast.Ternary(cond=cond, then=then, otherwise=other, loc=cond.loc)
            return cond
        finally:
            self.nesting -= 1

    def _binary_op(self) -> tuple[int, str] | None:
        """``(precedence, operator)`` of the binary operator at the current token, or None."""
        t = self.tok
        if t.kind in (TokenKind.PUNCT, TokenKind.IDENT):
            return _BINARY.get(t.text)
        return None

    def parse_binary(self, min_prec: int) -> ast.Expr:
        """Binary operators of precedence ``min_prec`` and above, by precedence climbing: operands of
        a level are parsed in a loop (left-associative); only a tighter-binding right operand recurses."""
        lhs = self.parse_unary()
        while True:
            found = self._binary_op()
            if found is None or found[0] < min_prec:
                return lhs
            prec, op = found
            self.next()
            rhs = self.parse_binary(prec + 1)
            if prec == _CMP_PREC:
                after = self._binary_op()
                if after is not None and after[0] == _CMP_PREC:
                    raise CfError(self.tok.loc, "comparisons do not chain; add parentheses")
            lhs = ast.Binary(op=op, lhs=lhs, rhs=rhs, loc=lhs.loc)

    def parse_unary(self) -> ast.Expr:
        t = self.tok
        if self.at("-") or self.at("!") or self.at("not"):
            self.next()
            self._deeper()
            try:
                operand = self.parse_unary()
            finally:
                self.nesting -= 1
            if t.text != "-":
                return ast.Unary(op="!", operand=operand, loc=t.loc)
            if isinstance(operand, ast.IntLit):
                return ast.IntLit(value=-operand.value, loc=t.loc)
            if isinstance(operand, ast.FloatLit):
                return ast.FloatLit(value=-operand.value, loc=t.loc)
            return ast.Unary(op="-", operand=operand, loc=t.loc)
        return self.parse_postfix()

    def parse_args(self) -> list[ast.Expr]:
        self.expect("(")
        args: list[ast.Expr] = []
        if not self.at(")"):
            args.append(self.parse_expr())
            while self.accept(","):
                args.append(self.parse_expr())
        self.expect(")")
        return args

    def parse_postfix(self) -> ast.Expr:
        e = self.parse_primary()
        while True:
            if self.at("("):
                e = ast.Call(callee=e, args=self.parse_args(), loc=e.loc)
            elif self.at("["):
                self.next()
                m = self.tok
                if m.kind is not TokenKind.IDENT:
                    raise CfError(m.loc, f"expected a shape member or metadata name, found {m.describe()}")
                self.next()
                self.expect("]")
                member = rules.METADATA_ALIASES.get(m.text, m.text)
                e = ast.Access(base=e, member=member, member_loc=m.loc, loc=e.loc)
            elif self.at("."):
                self.next()
                m = self.tok
                if m.kind is not TokenKind.IDENT:
                    raise CfError(m.loc, f"expected 'map', 'dot' or 'traverse' after '.', found {m.describe()}")
                self.next()
                if m.text == "map":
                    args = self.parse_args()
                    self._arity(m, args, 1)
                    e = ast.Map(base=e, func=args[0], loc=e.loc)
                elif m.text == "dot":
                    args = self.parse_args()
                    self._arity(m, args, 1)
                    e = ast.Dot(base=e, arg=args[0], loc=e.loc)
                elif m.text in ("mapList", "map_list"):
                    args = self.parse_args()
                    self._arity(m, args, 1)
                    e = ast.Builtin(name="map_list", args=[e, args[0]], loc=e.loc)
                elif m.text == "concat":
                    args = self.parse_args()
                    self._arity(m, args, 1)
                    e = ast.Builtin(name="concat", args=[e, args[0]], loc=e.loc)
                elif m.text == "traverse":
                    e = self.parse_traverse_tail(e)
                else:
                    raise CfError(m.loc, f"unknown method '.{m.text}'; expected map, dot or traverse")
            else:
                return e

    def _arity(self, tok: Token, args: list[ast.Expr], n: int) -> None:
        if len(args) != n:
            raise CfError(tok.loc, f"'{tok.text}' takes {n} argument{'s' if n != 1 else ''}, got {len(args)}")

    def parse_traverse_tail(self, base: ast.Expr) -> ast.Traverse:
        self.expect("(")
        d = self.expect_name("'forward' or 'backward'")
        if d.text not in ("forward", "backward"):
            raise CfError(d.loc, f"expected 'forward' or 'backward', found '{d.text}'")
        self.expect(",")
        prio = self.parse_expr()
        self.expect(",")
        stop = self.parse_expr()
        self.expect(",")
        rep = self.parse_expr()
        self.expect(")")
        self.expect("{", "'{' and the traverse invariant")
        inv = self.parse_expr()
        self.expect("}")
        return ast.Traverse(base=base, direction=d.text, priority=prio, stop=stop, replace=rep, invariant=inv, loc=base.loc)

    def parse_primary(self) -> ast.Expr:
        t = self.tok
        if t.kind is TokenKind.INT:
            self.next()
            return ast.IntLit(value=int(t.text), loc=t.loc)
        if t.kind is TokenKind.FLOAT:
            self.next()
            return ast.FloatLit(value=float(t.text), loc=t.loc)
        if self.at("("):
            self.next()
            first = self.parse_expr()
            if self.accept(","):
                elems = [first, self.parse_expr()]
                while self.accept(","):
                    elems.append(self.parse_expr())
                self.expect(")")
                return ast.TupleExpr(elems=elems, loc=t.loc)
            self.expect(")")
            return first
        if self.at("["):
            self.next()
            elems: list[ast.Expr] = []
            if not self.at("]"):
                elems.append(self.parse_expr())
                while self.accept(","):
                    elems.append(self.parse_expr())
            self.expect("]")
            return ast.ListLit(elems=elems, loc=t.loc)
        if t.kind is not TokenKind.IDENT:
            raise CfError(t.loc, f"expected an expression, found {t.describe()}")
        word = t.text
        if word in ("true", "false"):
            self.next()
            return ast.BoolLit(value=word == "true", loc=t.loc)
        if word in ("sym", "eps"):
            self.next()
            return ast.SymLit(loc=t.loc)
        if word == "if":
            self.next()
            cond = self.parse_expr()
            self.expect("then")
            then = self.parse_expr()
            self.expect("else")
            other = self.parse_expr()
            self.expect("fi")
            return ast.Ternary(cond=cond, then=then, otherwise=other, loc=t.loc)
        if word == "lp":
            self.next()
            self.expect("(")
            sense = self.expect_name("'minimize' or 'maximize'")
            if sense.text not in ("minimize", "maximize"):
                raise CfError(sense.loc, f"expected 'minimize' or 'maximize', found '{sense.text}'")
            self.expect(",")
            obj = self.parse_expr()
            self.expect(",")
            cons = self.parse_expr()
            self.expect(")")
            return ast.Lp(sense=sense.text, objective=obj, constraints=cons, loc=t.loc)
        builtin = ast.BUILTIN_ALIASES.get(word, word)
        if builtin in rules.BUILTIN_ARITIES and self.peek().text == "(":
            self.next()
            args = self.parse_args()
            if len(args) not in rules.BUILTIN_ARITIES[builtin]:
                want = " or ".join(str(a) for a in rules.BUILTIN_ARITIES[builtin])
                raise CfError(t.loc, f"'{word}' takes {want} argument(s), got {len(args)}")
            return ast.Builtin(name=builtin, args=args, loc=t.loc)
        if word in RESERVED:
            raise CfError(t.loc, f"expected an expression, found '{word}'")
        self.next()
        return ast.Var(name=word, loc=t.loc)


def parse(text: str, file: str = "<input>") -> ast.Program:
    """Parse ConstraintFlow source into an (untyped) AST.  Raises :class:`CfError`."""
    return Parser(text, file).parse_program()


def parse_expr(text: str, file: str = "<input>") -> ast.Expr:
    """Parse a single expression (used by tests and tools)."""
    p = Parser(text, file)
    e = p.parse_top_expr()
    if p.tok.kind is not TokenKind.EOF:
        raise CfError(p.tok.loc, f"unexpected {p.tok.describe()} after the expression")
    return e


def parse_file(path: str | Path) -> ast.Program:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CfError(Loc(str(path), 0, 0), f"cannot read file: {exc.strerror or exc}") from None
    return parse(text, str(path))
