"""Findings CSV a spreadsheet opens as data (issue 33): a planted file name or clause heading
that starts a formula (`=`, `+`, `-`, `@`, tab, CR) is written behind a `'`, read back with the
csv module from every CSV the product writes: `zhixing run --findings`, the Agent page's
download (`core.service.findings_text`) and the audit pack's `to_csv`."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

from tests.command import zx
from zhixing.core.audit import audit_tree, to_csv
from zhixing.core.service import findings_text

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "samples" / "springboot-shop"
REPOSITORY = SHOP / "src/main/java/com/example/shop/repository/ProductRepository.java"
TASK = "对这个 Java SpringBoot 项目进行代码审计，参考 @kb 中的规范"
PLANTED = '=HYPERLINK("https-evil.test",1+1).java'  # a file at the workspace's top
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _no_cell_starts_a_formula(rows: list[dict[str, str]]) -> None:
    for row in rows:
        for column, cell in row.items():
            assert not cell.startswith(FORMULA_STARTS), (column, cell)


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "shop"
    shutil.copytree(SHOP, workspace)
    shutil.copy(REPOSITORY, workspace / PLANTED)
    return workspace


def test_run_findings_csv_writes_a_planted_formula_file_name_as_text(tmp_path: Path) -> None:
    home, table = tmp_path / "home", tmp_path / "out.csv"
    zx(home, "kb", "create", "kb")
    zx(home, "add", "kb", str(ROOT / "samples" / "java-secure-coding-guideline.md"))
    workspace = _workspace(tmp_path)
    zx(home, "run", "kb", TASK, "--workspace", str(workspace), "--findings", str(table))
    rows = _rows(table.read_text(encoding="utf-8"))
    planted = [r for r in rows if PLANTED in r["file"]]
    assert planted, [r["file"] for r in rows]  # the planted file was audited and reported
    assert {r["file"] for r in planted} == {"'" + PLANTED}  # shown as the text it is
    _no_cell_starts_a_formula(rows)
    assert any(r["line"].isdigit() for r in rows)  # numbers stay numbers


def test_the_page_download_neutralises_every_formula_start_in_names_and_clause_headings():
    findings = [
        {
            "title": title,
            "file": file,
            "line": 7,
            "cwe": 89,
            "rule": "model",
            "knowledge": [{"section": section, "document": "guide.md", "page": 1}],
        }
        for title, file, section in (
            ("=1+1", "=cmd|' /C calc'!A0.java", '=HYPERLINK("https://evil.test","SQL")'),
            ("+SUM(A1)", "+x.java", "+2+3"),
            ("-2+3", "-x.java", "-IMPORTXML(1)"),
            ("@SUM(A1)", "@x.java", "@clause"),
            ("\t=1", "\tx.java", "\t=tab"),
            ("\r=1", "\rx.java", "\r=cr"),
            ("ok", "ok.java\r=1+1", "a heading\r@SUM(A1)"),  # a bare CR would start a row
        )
    ]
    rows = _rows(findings_text(findings, "csv"))
    assert len(rows) == len(findings)  # one row each: no cell spilled into a row of its own
    _no_cell_starts_a_formula(rows)
    assert rows[0]["file"] == "'=cmd|' /C calc'!A0.java"
    assert rows[0]["clause"] == '\'=HYPERLINK("https://evil.test","SQL") — guide.md p.1'
    assert rows[0]["title"] == "'=1+1" and rows[0]["line"] == "7" and rows[0]["cwe"] == "CWE-89"
    assert [r["file"] for r in rows][1:4] == ["'+x.java", "'-x.java", "'@x.java"]
    assert rows[6]["file"] == "ok.java\n=1+1"  # a line break inside a quoted cell


def test_the_audit_pack_csv_writes_a_planted_formula_file_name_as_text(tmp_path: Path) -> None:
    rows = _rows(to_csv(audit_tree(_workspace(tmp_path))))
    assert "'" + PLANTED in {r["file"] for r in rows}
    _no_cell_starts_a_formula(rows)
