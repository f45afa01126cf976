"""LangGraph Studio: langgraph.json opens both agent graphs the way `langgraph dev` loads them.

langgraph-api loads each "path:variable" of langgraph.json by executing the file under a fresh
module name (so the file may use only absolute imports) and taking the variable: a compiled
graph, a StateGraph (compiled then) or a factory called with the run's config. Studio then draws
`get_graph()`, builds its forms from the input and context JSON schemas, and runs the graph with
the form's JSON as its context and a run id in its config.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel

from zhixing.core.ask.flow import build_bound_graph

ROOT = Path(__file__).resolve().parents[1]


def _load(spec: str) -> tuple[Any, Pregel]:
    path, _, variable = spec.rpartition(":")
    name = f"studio_{uuid.uuid4().hex}"
    found = importlib.util.spec_from_file_location(name, (ROOT / path).resolve())
    assert found is not None and found.loader is not None, spec
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    found.loader.exec_module(module)
    graph = getattr(module, variable)
    if isinstance(graph, StateGraph):
        graph = graph.compile()
    elif not isinstance(graph, Pregel) and callable(graph):
        graph = graph({"configurable": {}})
    assert isinstance(graph, Pregel), f"{spec} is not a LangGraph graph"
    return module, graph


@pytest.fixture
def studio(tmp_path, monkeypatch, sample_home):  # noqa: ANN201
    """langgraph.json's graphs on a copy of the sample home, offline."""
    home = tmp_path / "home"
    shutil.copytree(sample_home, home)
    monkeypatch.setenv("ZHIXING_HOME", str(home))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ZHIXING_CHAT_MODEL", "ZHIXING_EMBEDDING"):
        monkeypatch.delenv(name, raising=False)
    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    loaded = {name: _load(spec) for name, spec in config["graphs"].items()}
    yield config, {name: graph for name, (_, graph) in loaded.items()}
    for module, _ in loaded.values():
        module.close()
        sys.modules.pop(module.__name__, None)


def test_langgraph_json_opens_the_ask_graph_and_a_run_answers_from_the_knowledge(studio) -> None:
    config, graphs = studio
    assert set(graphs) == {"ask", "task"} and config["dependencies"] == ["."]
    ask = graphs["ask"]
    drawn = set(ask.get_graph().nodes) - {"__start__", "__end__"}
    assert drawn == {"plan", "retrieve", "evaluate", "refine", "merge", "answer"}
    # The form asks for the question alone, and the run returns the answer and its evidence.
    inputs = ask.get_input_jsonschema()
    assert set(inputs["properties"]) == {"question"} and inputs["required"] == ["question"]
    output = ask.get_output_jsonschema()
    assert set(output["properties"]) == {"answer", "merged"}
    assert {"answer", "found", "citations"} <= set(output["$defs"]["Answer"]["properties"])
    # The options form shows each option's bounds and a line of help.
    options = ask.get_context_jsonschema()["properties"]
    assert set(options) == {"knowledge_bases", "max_rounds", "top_k"}
    assert (options["top_k"]["minimum"], options["top_k"]["maximum"]) == (1, 50)
    assert (options["max_rounds"]["minimum"], options["max_rounds"]["maximum"]) == (1, 5)
    assert all(option["description"] for option in options.values())
    steps, final = [], {}
    for mode, chunk in ask.stream(
        {"question": "How long until an idle session expires?"},
        context={"knowledge_bases": ["kb"], "max_rounds": 2},
        config={"run_id": uuid.uuid4()},
        stream_mode=["updates", "values"],
    ):
        if mode == "updates":
            steps += list(chunk)
        else:
            final = chunk
    assert steps[:3] == ["plan", "retrieve", "evaluate"] and steps[-1] == "answer"
    answer = final["answer"].to_json()
    assert answer["found"] and "15" in answer["answer"]
    assert any(".md" in c["document"] for c in answer["citations"])
    assert final["merged"] and all(hit.text for hit in final["merged"])


def test_langgraph_json_opens_the_task_graph_and_a_run_audits_the_named_folder(
    studio, tmp_path
) -> None:
    _, graphs = studio
    task = graphs["task"]
    drawn = set(task.get_graph().nodes) - {"__start__", "__end__"}
    assert drawn == {"research", "plan", "replan", "execute", "report"}
    assert "workspace" in task.get_context_jsonschema()["properties"]
    inputs = task.get_input_jsonschema()
    assert set(inputs["properties"]) == {"task"} and inputs["required"] == ["task"]
    assert set(task.get_output_jsonschema()["properties"]) == {"report", "findings", "warnings"}
    code = tmp_path / "code" / "src"
    code.mkdir(parents=True)
    (code / "Lookup.java").write_text(
        "import java.sql.*;\nimport javax.servlet.http.*;\n"
        "public class Lookup extends HttpServlet {\n"
        "  protected void doGet(HttpServletRequest req, HttpServletResponse resp)\n"
        "      throws java.io.IOException {\n"
        "    try {\n"
        '      String id = req.getParameter("id");\n'
        '      Connection c = DriverManager.getConnection("jdbc:h2:mem:");\n'
        '      c.createStatement().executeQuery("SELECT * FROM users WHERE id = " + id);\n'
        "    } catch (SQLException e) { throw new java.io.IOException(e); }\n"
        "  }\n}\n",
        encoding="utf-8",
    )
    final = task.invoke(
        {"task": "Audit this Java code for SQL injection against the secure coding checklist"},
        context={"knowledge_bases": ["kb"], "workspace": str(code.parent)},
        config={"run_id": uuid.uuid4()},
    )
    assert set(final) <= {"report", "findings", "warnings"} and final["report"].strip()
    sql = [f for f in final["findings"] if f.cwe == 89]
    assert sql and sql[0].file.endswith("Lookup.java")


def test_an_unknown_knowledge_base_reaches_the_client_as_its_sentence(studio) -> None:
    _, graphs = studio
    for name, inputs in (("ask", {"question": "timeout?"}), ("task", {"task": "Audit it"})):
        with pytest.raises(ValueError) as raised:  # a built-in: the host shows its message
            graphs[name].invoke(
                inputs, context={"knowledge_bases": ["nope"]}, config={"run_id": uuid.uuid4()}
            )
        assert str(raised.value).startswith("There is no knowledge base named 'nope'")
        assert "(known: kb)" in str(raised.value)


def test_a_missing_or_blank_question_or_task_is_named_in_one_sentence(studio) -> None:
    _, graphs = studio
    for name, inputs in (("ask", {}), ("ask", {"question": "  "}), ("task", {})):
        key = "question" if name == "ask" else "task"
        with pytest.raises(ValueError, match=f'input needs a "{key}"'):
            graphs[name].invoke(
                inputs, context={"knowledge_bases": ["kb"]}, config={"run_id": uuid.uuid4()}
            )
    # The server checks the input against no schema: a number arrives as it was sent.
    with pytest.raises(ValueError) as raised:
        graphs["ask"].invoke({"question": 42}, config={"run_id": uuid.uuid4()})
    assert (
        str(raised.value) == 'The run\'s "question" must be text, e.g. {"question": "..."}, not 42.'
    )


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        ({"top_k": "ten"}, 'option "top_k" should be a valid integer, unable to parse string'),
        ({"top_k": 0}, 'option "top_k" should be greater than or equal to 1, not 0.'),
        ({"max_rounds": 9}, 'option "max_rounds" should be less than or equal to 5, not 9.'),
        ({"knowledge_bases": [1]}, 'option "knowledge_bases.0" should be a valid string, not 1.'),
    ],
)
def test_an_option_outside_its_bounds_is_named_in_one_sentence(studio, options, sentence) -> None:
    _, graphs = studio
    for name, inputs in (("ask", {"question": "timeout?"}), ("task", {"task": "Audit it"})):
        with pytest.raises(ValueError) as raised:  # a built-in: the host shows its message
            graphs[name].invoke(inputs, context=options, config={"run_id": uuid.uuid4()})
        assert str(raised.value).startswith("The run's " + sentence), str(raised.value)


def test_one_context_serves_a_whole_run_and_each_run_gets_its_own() -> None:
    made: list[Any] = []

    def resolve(options: Any) -> Any:
        from zhixing.core.ask.configuration import AgentContext

        made.append(options)
        return AgentContext(retrieve=lambda qs, _: [[] for _ in qs], answer=_not_found)

    graph = build_bound_graph(resolve, dict)
    for n in (1, 2):
        steps = [
            node
            for update in graph.stream(
                {"question": "anything at all"},
                context={"run": n},
                config={"run_id": uuid.uuid4()},
                stream_mode="updates",
            )
            for node in update
        ]
        assert steps.count("retrieve") >= 2  # several nodes ran, over more than one round
        assert made == [{"run": i} for i in range(1, n + 1)]  # resolved once per run
    # A run's result is the output schema's fields (the streamed values show the whole state).
    final = graph.invoke(
        {"question": "anything"}, context={"run": 3}, config={"run_id": uuid.uuid4()}
    )
    assert set(final) == {"answer", "merged"} and not final["answer"].found


def _not_found(question: str, evidence: Any, aspects: Any) -> Any:
    from zhixing.core.answer import grounded_answer

    return grounded_answer(question, evidence)
