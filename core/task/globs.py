"""Globs over workspace paths, matched in time linear in the path: no pattern can backtrack.

A glob may come from a model (or a document steering it), so it is never turned into a
backtracking regular expression: `*a*a*a…a!` over a long name took a Python `re` minutes with
the interpreter lock held. The glob is compiled into the states of a small automaton, kept as the
bits of one integer, and a path is read once, character by character (the shift-and method of
Baeza-Yates and Gonnet, with the empty moves of `*` and `**`): the cost is the path's length
times a step bounded by the glob's length, whatever the glob.

Semantics: `**/` matches zero or more whole folders, `**` elsewhere any characters, `*` any
characters but `/`, `?` one character but `/`; a glob without `/` matches in any folder.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import AccessError, ZhixingError

__all__ = ["MAX_GLOB_CHARS", "glob_matcher"]

MAX_GLOB_CHARS = 256  # a glob names files; longer ones are not globs a person or model needs

# Token kinds: a literal character, one non-slash character, a run of non-slash characters,
# a run of any characters (`**`), and the start of an optional `…/` group (`**/`).
_LIT, _ONE, _STAR, _ANY, _OPT = range(5)


def glob_matcher(glob: str) -> Callable[[str], bool]:
    """Compile a glob: `**` crosses folders, `*` and `?` do not; no `/` means "any folder"."""
    unified = glob.replace("\\", "/").strip() or "**/*"
    if len(unified) > MAX_GLOB_CHARS:
        raise ZhixingError(
            f"The glob is longer than {MAX_GLOB_CHARS} characters; use a shorter one."
        )
    if unified.startswith("/") or ".." in unified.split("/"):
        raise AccessError(f"The glob {glob[:60]!r} must stay inside the workspace.")
    if "/" not in unified:
        unified = "**/" + unified
    return _Automaton(_tokens(unified)).matches


def _tokens(glob: str) -> list[tuple[int, str]]:
    tokens: list[tuple[int, str]] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            kind, i = _OPT, i + 3
        elif glob.startswith("**", i):
            kind, i = _ANY, i + 2
        elif glob[i] in "*?":
            kind, i = (_STAR if glob[i] == "*" else _ONE), i + 1
        else:
            tokens.append((_LIT, glob[i]))
            i += 1
            continue
        last = tokens[-1][0] if tokens else None
        # Runs of wildcards mean what their widest member means; merging them keeps the chains
        # of empty moves short (each link costs a step per character).
        if kind in (_STAR, _ANY) and last in (_STAR, _ANY):
            tokens[-1] = (max(kind, last), "")
        elif kind == _OPT and last == _OPT:
            continue
        elif kind == _OPT and last == _ANY:
            continue  # `.*` followed by `(?:.*/)?` is `.*`
        else:
            tokens.append((kind, ""))
    return tokens


class _Automaton:
    """Bit k set: the tokens before state k are matched. `**/` takes three states."""

    def __init__(self, tokens: list[tuple[int, str]]) -> None:
        self.literal: dict[str, int] = {}
        self.one = self.star = self.any = self.skip1 = self.skip3 = 0
        state = 0
        for kind, char in tokens:
            bit = 1 << state
            if kind == _LIT:
                self.literal[char] = self.literal.get(char, 0) | bit
            elif kind == _ONE:
                self.one |= bit
            elif kind == _STAR:
                self.star |= bit
                self.skip1 |= bit
            elif kind == _ANY:
                self.any |= bit
                self.skip1 |= bit
            else:  # `**/`: an entry that moves past the group or into it, `**`, then `/`
                self.skip1 |= bit
                self.skip3 |= bit
                self.any |= bit << 1
                self.skip1 |= bit << 1
                self.literal["/"] = self.literal.get("/", 0) | (bit << 2)
                state += 2
            state += 1
        self.accept = 1 << state
        # A glob's fixed start and end reject most paths before the automaton runs.
        self.prefix = "".join(c for _, c in _leading_literals(tokens))
        self.suffix = "".join(c for _, c in reversed(_leading_literals(tokens[::-1])))

    def _closure(self, states: int) -> int:
        while True:
            grown = states | ((states & self.skip1) << 1) | ((states & self.skip3) << 3)
            if grown == states:
                return states
            states = grown

    def matches(self, path: str) -> bool:
        """Return whether the whole of `path` matches the glob."""
        if not (path.startswith(self.prefix) and path.endswith(self.suffix)):
            return False
        states = self._closure(1)
        for char in path:
            if char == "/":
                advance, stay = self.literal.get(char, 0), self.any
            else:
                advance, stay = self.literal.get(char, 0) | self.one, self.any | self.star
            states = self._closure(((states & advance) << 1) | (states & stay))
            if not states:
                return False
        return bool(states & self.accept)


def _leading_literals(tokens: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out = []
    for token in tokens:
        if token[0] != _LIT:
            break
        out.append(token)
    return out
