"""Page geometry to text: words, lines, borderless tables and page assembly, without a PDF."""

from __future__ import annotations

from zhixing.core.ingest.pdf_layout import (
    Char,
    Line,
    Rule,
    Word,
    assemble_page,
    build_lines,
    build_words,
    reading_order,
)
from zhixing.core.ingest.pdf_tables import find_rule_tables


def chars(text: str, x: float, top: float, *, width: float = 5.0, size: float = 10.0) -> list[Char]:
    """Glyphs for `text` set left to right from x; a space in `text` is a space character."""
    out, space = [], False
    for char in text:
        if char == " ":
            space = True
            x += width
            continue
        out.append(Char(char, x, x + width, top, top + size, space_before=space, size=size))
        space = False
        x += width
    return out


def word(text: str, x0: float, top: float, *, width: float = 5.0, size: float = 10.0) -> Word:
    return Word(text, x0, x0 + width * len(text), top, top + size, size=size)


def line(*words: Word) -> Line:
    return Line(list(words))


def test_words_split_at_spaces_and_at_jumps() -> None:
    glyphs = chars("ab cd", 0, 100) + chars("ef", 300, 100) + chars("gh", 0, 200)
    assert [w.text for w in build_words(glyphs)] == ["ab", "cd", "ef", "gh"]


def test_a_glyph_drawn_twice_in_place_counts_once() -> None:
    glyphs = [Char("A", 0, 5, 0, 10), Char("A", 0.2, 5.2, 0.1, 10.1), Char("B", 5, 10, 0, 10)]
    assert [w.text for w in build_words(glyphs)] == ["AB"]


def test_lines_group_words_by_vertical_overlap_and_read_left_to_right() -> None:
    words = [word("right", 200, 101), word("left", 10, 100), word("below", 10, 130)]
    assert [ln.text for ln in build_lines(words)] == ["left right", "below"]


def test_cjk_next_to_latin_gets_no_space_unless_the_pdf_has_one() -> None:
    # Word leaves a small gap between Latin and CJK text; that is spacing, not a space.
    tight = build_words(chars("NSAPI", 0, 0) + chars("插件", 27.5, 0))
    assert build_lines(tight)[0].text == "NSAPI插件"
    spaced = build_words(chars("V1.10 恶意软件", 0, 0))
    assert build_lines(spaced)[0].text == "V1.10 恶意软件"


# A header rule as Word draws it: one segment per cell, with a tiny square at each joint.
COLUMNS = [72.0, 108.5, 432.8, 453.0, 473.0, 523.0]


def header_rule(y: float) -> list[Rule]:
    rules = []
    for left, right in zip(COLUMNS, COLUMNS[1:], strict=False):
        rules.append(Rule(left, right, y))
        rules.append(Rule(right, right + 0.1, y))
    return rules[:-1]


def requirement_table(top: float) -> list[Line]:
    return [
        line(word("#", 80, top), word("Description", 115, top), word("L1", 438, top),
             word("L2", 458, top), word("CWE", 480, top)),
        line(word("1.1.1", 75, top + 20), word("Verify", 115, top + 20), word("✓", 460, top + 20),
             word("284", 480, top + 20)),
        line(word("the", 115, top + 34), word("rest.", 135, top + 34)),
        line(word("1.1.2", 75, top + 54), word("Check", 115, top + 54), word("✓", 440, top + 54)),
    ]  # fmt: skip


def test_a_header_rule_with_joints_gives_a_table_with_multi_line_cells() -> None:
    lines = requirement_table(100)
    tables, used = find_rule_tables(lines, header_rule(112))
    assert used == {0, 1, 2, 3}
    assert [t.rows for t in tables] == [
        [
            ["#", "Description", "L1", "L2", "CWE"],
            ["1.1.1", "Verify the rest.", "", "✓", "284"],
            ["1.1.2", "Check", "✓", "", ""],
        ]
    ]


def test_a_table_ends_at_a_line_that_crosses_its_columns() -> None:
    lines = requirement_table(100)
    lines.append(line(word("V1.2", 72, 180), word("A heading that runs wide", 100, 180)))
    tables, used = find_rule_tables(lines, header_rule(112))
    assert len(tables[0].rows) == 3 and 4 not in used


def test_the_last_line_of_a_paragraph_above_a_table_is_not_its_header() -> None:
    lines = [line(word("度。", 75, 86))] + requirement_table(100)
    tables, used = find_rule_tables(lines, header_rule(112))
    assert 0 not in used
    assert tables[0].rows[0] == ["#", "Description", "L1", "L2", "CWE"]


def test_a_plain_rule_without_joints_is_not_a_table() -> None:
    lines = requirement_table(100)
    assert find_rule_tables(lines, [Rule(72, 523, 112)]) == ([], set())


def test_a_dashed_rule_is_not_a_table() -> None:
    dashes = [Rule(72 + 6 * i, 75 + 6 * i, 112) for i in range(60)]
    assert find_rule_tables(requirement_table(100), dashes) == ([], set())


def test_assembled_page_marks_paragraphs_tables_and_larger_headings() -> None:
    lines = [
        line(word("Chapter", 72, 40, size=16)),
        line(word("first", 72, 80), word("line", 100, 80)),
        line(word("second", 72, 92)),
        line(word("third", 72, 104)),
        line(word("new", 72, 140), word("paragraph", 95, 140)),
    ] + requirement_table(200)
    tables, used = find_rule_tables(lines, header_rule(212))
    text = assemble_page(lines, tables, used)
    assert text == (
        "# Chapter\n\nfirst line\nsecond\nthird\n\nnew paragraph\n\n"
        "| # | Description | L1 | L2 | CWE |\n|---|---|---|---|---|\n"
        "| 1.1.1 | Verify the rest. |  | ✓ | 284 |\n| 1.1.2 | Check | ✓ |  |  |"
    )


def test_page_numbers_and_contents_leaders_are_not_headings() -> None:
    lines = [
        line(word("12", 300, 20, size=14)),
        line(word("Scope.........3", 72, 40, size=14)),
        line(word("body", 72, 80)),
        line(word("text", 72, 92)),
    ]
    assert not any(ln.startswith("#") for ln in assemble_page(lines, [], set()).split("\n"))


def test_a_two_column_page_is_read_column_by_column() -> None:
    words = [word("Centered Title", 200, 20, size=16)]
    for row in range(12):
        words.append(word(f"left{row}", 72, 60 + 12 * row))
        words.append(word("more", 120, 60 + 12 * row))
        words.append(word(f"right{row}", 320, 60 + 12 * row))
        words.append(word("text", 370, 60 + 12 * row))
    ordered = [ln.text for ln in reading_order(build_lines(words))]
    assert ordered[0] == "Centered Title"
    assert ordered[1:13] == [f"left{row} more" for row in range(12)]
    assert ordered[13:] == [f"right{row} text" for row in range(12)]


def test_a_single_column_page_keeps_its_order() -> None:
    words = []
    for row in range(12):
        x = 72
        for part in ("a", "justified", "line", "of", "body", "text"):
            words.append(word(part, x + (row % 3) * 2, 60 + 12 * row))
            x += 5 * len(part) + 4 + row % 4
    lines = build_lines(words)
    assert reading_order(lines) == lines
