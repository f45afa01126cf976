"""The one adapter between the audit engine and tree-sitter's Java grammar.

Nothing else in ``core.audit`` imports ``tree_sitter``: the rest of the package works on the
:class:`Node` objects this module hands out (re-exported here as a type) and on the small
helpers below, so a grammar or binding upgrade touches this file only.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import tree_sitter_java
from tree_sitter import Language, Node, Parser, Tree

__all__ = ["Node", "Tree", "parse", "text", "child", "children", "walk", "line_of", "col_of"]


@lru_cache(maxsize=1)
def _language() -> Language:
    return Language(tree_sitter_java.language())


def _parser() -> Parser:
    # A Parser is cheap; one per call keeps this safe across threads and processes.
    return Parser(_language())


def parse(source: bytes) -> Tree:
    """Parse Java source bytes; tree-sitter always returns a tree (errors become ERROR nodes)."""
    return _parser().parse(source)


def text(node: Node | None) -> str:
    """The source text of ``node`` ("" for None)."""
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def child(node: Node, field: str) -> Node | None:
    """The child stored under grammar field ``field`` (e.g. ``name``, ``object``)."""
    return node.child_by_field_name(field)


def children(node: Node) -> list[Node]:
    """Named children, skipping comments (which tree-sitter keeps as ordinary nodes)."""
    return [c for c in node.named_children if c.type not in ("line_comment", "block_comment")]


def walk(node: Node, types: frozenset[str] | None = None) -> Iterator[Node]:
    """Pre-order walk of named descendants (``node`` included), optionally filtered by type."""
    cursor = node.walk()  # a cursor moves through the tree without building child lists
    while True:
        cur = cursor.node
        if cur is not None and cur.is_named and (types is None or cur.type in types):
            yield cur
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent() or cursor.node == node:
                return


def line_of(node: Node) -> int:
    """1-based line of the node's start."""
    return node.start_point[0] + 1


def col_of(node: Node) -> int:
    """1-based column (in bytes) of the node's start."""
    return node.start_point[1] + 1
