"""The Java node kinds the interpreter treats alike, and small reads of the syntax tree.

Names of tree-sitter-java's node types; what the interpreter does with each kind is in
:mod:`.interpreter`.
"""

from __future__ import annotations

from .java import Node, child, children, text
from .project import simple_type

LITERALS = frozenset(
    {
        "string_literal",
        "character_literal",
        "decimal_integer_literal",
        "hex_integer_literal",
        "decimal_floating_point_literal",
        "true",
        "false",
        "octal_integer_literal",
        "binary_integer_literal",
        "null_literal",
        "text_block",
    }
)
BLOCKS = frozenset({"block", "constructor_body", "switch_block_statement_group"})
LOOPS = frozenset({"for_statement", "while_statement", "do_statement", "enhanced_for_statement"})
TRY = frozenset({"try_statement", "try_with_resources_statement"})
# Statements that neither change the environment nor end the path.
INERT_STATEMENTS = frozenset(
    {
        "class_declaration",
        "local_class_declaration",
        "interface_declaration",
        ";",
        "empty_statement",
        "assert_statement",
        "yield_statement",
    }
)
# Expressions whose value the engine does not follow (a lambda's body runs elsewhere).
OPAQUE_EXPRESSIONS = frozenset(
    {
        "lambda_expression",
        "method_reference",
        "class_literal",
        "switch_expression",
        "super",
    }
)
# The statements of a `case X ->` rule that run (an expression rule's value is not followed).
RULE_BODIES = frozenset({"block", "throw_statement", "expression_statement"})


def declared_type(n: Node) -> str:
    """The simple type written in ``n``'s ``type`` field (a declaration, a cast, a ``new``)."""
    return simple_type(text(child(n, "type")))


def arguments(n: Node) -> list[Node]:
    """The argument expressions of a call or ``new``."""
    argn = child(n, "arguments")
    return children(argn) if argn is not None else []


def has_default(group: Node) -> bool:
    """Whether a switch group carries the ``default`` label (a label with no value)."""
    return any(c.type == "switch_label" and not children(c) for c in children(group))


def redirect_view(n: Node | None) -> bool:
    """Whether ``n`` is a Spring view name that redirects: ``"redirect:" + url``."""
    while n is not None and n.type in ("binary_expression", "parenthesized_expression"):
        n = child(n, "left") if n.type == "binary_expression" else next(iter(children(n)), None)
    return n is not None and n.type == "string_literal" and text(n).startswith('"redirect:')
