"""A finding the model records must stand where its subtask's weakness can: in program text, or
in a file the topic's own rules read (a secret in a .properties file). A weak model that records
a deserialization flaw on a setting's name is told so, and nothing is added."""

from __future__ import annotations

from pathlib import Path

import pytest

from zhixing.core.task.configuration import TaskContext
from zhixing.core.task.state import Finding, Subtask
from zhixing.core.task.toolcalling import record
from zhixing.core.task.tools import ToolBox, ToolRefused
from zhixing.core.task.workspace import Workspace


@pytest.fixture
def box(tmp_path: Path) -> ToolBox:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Import.java").write_text(
        "class Import {\n  Object load(java.io.InputStream in) throws Exception {\n"
        "    return new java.io.ObjectInputStream(in).readObject();\n  }\n}\n",
        encoding="utf-8",
    )
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "app.properties").write_text(
        "app.name=demo\ndb.password=hunter2\n", encoding="utf-8"
    )
    context = TaskContext(
        research=lambda *_: None, search=lambda *_: [], workspace=Workspace(tmp_path)
    )  # type: ignore[arg-type,return-value]
    return ToolBox(context, lambda _: None, 1, [])


def _record(box: ToolBox, topic: str, file: str, line: int) -> list[Finding]:
    into: list[Finding] = []
    subtask = Subtask(title=f"{topic or 'free'} check", goal="find it", topic=topic)
    args = {"file": file, "line": line, "title": "a flaw", "severity": "high", "knowledge": []}
    record(args, subtask, box, into)
    return into


def test_a_code_weakness_recorded_on_a_settings_line_is_refused(box: ToolBox) -> None:
    with pytest.raises(ToolRefused, match="holds no code that Unsafe deserialization is about"):
        _record(box, "deserialization", "conf/app.properties", 1)
    [found] = _record(box, "deserialization", "src/Import.java", 3)
    assert (found.file, found.line, found.rule) == ("src/Import.java", 3, "model")


def test_a_file_the_topics_rules_read_and_a_free_subtask_take_any_file(box: ToolBox) -> None:
    [secret] = _record(box, "secrets", "conf/app.properties", 2)  # the topic reads .properties
    assert secret.code == "db.password=hunter2"
    [free] = _record(box, "", "conf/app.properties", 1)  # no known topic: nothing to hold it to
    assert free.line == 1
