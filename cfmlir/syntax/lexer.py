"""Tokenizer for ConstraintFlow source text.

Tokens carry their source location.  Keywords are *not* separate token kinds: the parser recognises
them by text, so that names such as ``l``, ``u`` or ``layer`` stay ordinary identifiers where the
grammar wants one.  Comments are ``// ...`` to the end of the line, ``/* ... */`` and ``(* ... *)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from cfmlir.diagnostics import CfError, Loc


class TokenKind(Enum):
    IDENT = "identifier"
    INT = "integer"
    FLOAT = "number"
    PUNCT = "symbol"
    EOF = "end of file"


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str
    loc: Loc

    def describe(self) -> str:
        return "end of file" if self.kind is TokenKind.EOF else f"'{self.text}'"


# Longest first, so that '<=' wins over '<'.
_PUNCTUATION = (
    "->", "<=", ">=", "==", "!=", "&&", "||",
    "(", ")", "{", "}", "[", "]", ",", ";", ".", "?", ":",
    "+", "-", "*", "/", "<", ">", "=", "!",
)


def tokenize(text: str, file: str) -> list[Token]:
    """Split ``text`` into tokens, ending with one EOF token.  Raises :class:`CfError`."""
    tokens: list[Token] = []
    i, line, col = 0, 1, 1
    n = len(text)

    def advance(k: int) -> None:
        nonlocal i, line, col
        for ch in text[i : i + k]:
            if ch == "\n":
                line, col = line + 1, 1
            else:
                col += 1
        i += k

    while i < n:
        ch = text[i]
        if ch in " \t\r\n\f\v":
            advance(1)
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            advance((n if end < 0 else end) - i)
            continue
        for opener, closer in (("/*", "*/"), ("(*", "*)")):
            if text.startswith(opener, i):
                end = text.find(closer, i + 2)
                if end < 0:
                    raise CfError(Loc(file, line, col), f"unterminated comment '{opener}'")
                advance(end + 2 - i)
                break
        else:
            loc = Loc(file, line, col)
            if ch.isalpha() or ch == "_":
                j = i + 1
                while j < n and (text[j].isalnum() or text[j] == "_"):
                    j += 1
                tokens.append(Token(TokenKind.IDENT, text[i:j], loc))
                advance(j - i)
                continue
            if ch.isdigit() or (ch == "." and i + 1 < n and text[i + 1].isdigit()):
                j, is_float = i, False
                while j < n and text[j].isdigit():
                    j += 1
                if j < n and text[j] == "." and j + 1 < n and text[j + 1].isdigit():
                    is_float = True
                    j += 1
                    while j < n and text[j].isdigit():
                        j += 1
                elif j < n and text[j] == "." and not (j + 1 < n and (text[j + 1].isalpha() or text[j + 1] == "_")):
                    # '1.' is a float; '1.map' is not a thing, but keep '.' for postfix calls.
                    is_float = True
                    j += 1
                if j < n and text[j] in "eE":
                    k = j + 1
                    if k < n and text[k] in "+-":
                        k += 1
                    if k < n and text[k].isdigit():
                        is_float = True
                        j = k
                        while j < n and text[j].isdigit():
                            j += 1
                if j < n and (text[j].isalpha() or text[j] == "_"):
                    raise CfError(loc, f"malformed number '{text[i:j + 1]}'")
                tokens.append(Token(TokenKind.FLOAT if is_float else TokenKind.INT, text[i:j], loc))
                advance(j - i)
                continue
            for p in _PUNCTUATION:
                if text.startswith(p, i):
                    tokens.append(Token(TokenKind.PUNCT, p, loc))
                    advance(len(p))
                    break
            else:
                shown = ch if ch.isprintable() else repr(ch)
                raise CfError(loc, f"unexpected character '{shown}'")
    tokens.append(Token(TokenKind.EOF, "", Loc(file, line, col)))
    return tokens
