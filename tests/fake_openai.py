"""A fake OpenAI-compatible HTTP server for tests and benchmarks (docs/architecture.md §11).

A real `ThreadingHTTPServer` on 127.0.0.1 (a free port), so `ChatOpenAI` and `OpenAIEmbeddings`
run for real over HTTP. It implements `POST /v1/chat/completions` (honouring `response_format`
json_schema / json_object and `tools` for function calling), `POST /v1/embeddings`
(deterministic hashed bag-of-words vectors) and `GET /v1/models` (its one model). Tests script it:

    with FakeOpenAI(latency_s=0.2) as fake:
        fake.fail("429", "malformed")   # consumed one per request, in order
        ... settings = Settings(openai_base_url=fake.url) ...
        assert fake.chat_count == 3

`responder(request_json) -> dict | str` decides the structured answer (a dict is sent as JSON
in whichever channel the request asked for; a str is sent verbatim as the content; a dict with
`"_tool_calls": [{"name": ..., "arguments": str | dict}]` is sent as exactly those tool calls,
arguments verbatim when a str, and `{"_content": text}` as plain content with no tool call).
A request with `"stream": true` gets the same reply as server-sent events, the content (or a
tool call's arguments) in pieces of `stream_piece` characters, `stream_delay_s` apart; a "cut"
fault then ends the stream half-way. `chaos(request_json) -> fault | None` picks a fault for a request when none is queued. The default
builds a valid `ChunkKnowledge` from the numbered lines of the prompt. `stop()` makes it "down":
connections are refused from then on; `start()` again brings it back on the same port (to test
resuming a build). A "timeout" fault holds the request for `timeout_sleep_s` (or until stop).
Every request waits `latency_s` first; `embedding_latency_s` sets the embeddings' own.

A request may carry images (`image_url` parts of a user message, as a vision model is sent
them): `images_of(request_json)` lists their URLs, so a responder can answer them and a test
can check what was sent; the prompt text a responder reads leaves them out.

Capability switches, for every request: `refuse` names features answered with HTTP 400 as
unsupported ("json_schema", "json_object", "tools", "stream"); `tool_calls_as_text` writes a
tool call as bare JSON text in `content` with no `tool_calls`, as llama-server with a small
model does. Zhixing's capability probes (the `X-Zhixing-Probe` header) meet the same switches
but are kept apart: listed in `probes`, not in `requests`, answered by `default_responder`,
and never delayed, queued behind the slots, or given a scripted fault.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FAULTS", "FakeOpenAI", "default_responder", "hashed_embedding", "images_of"]

Responder = Callable[[dict[str, Any]], "dict[str, Any] | str"]

# malformed: content that is not JSON; invalid: JSON that fails the schema.
# 400 and 401 quote the caller's bearer token back, as careless servers do, so tests can check
# that it never reaches a user-facing message.
# cut: the status line and headers go out, then half the body, then the connection closes.
FAULTS = (
    "400",
    "401",
    "429",
    "500",
    "503",
    "timeout",
    "malformed",
    "invalid",
    "no_tool_call",
    "cut",
)

# The header Zhixing's capability probes carry (core/llm/probe.py PROBE_HEADER).
PROBE_HEADER = "X-Zhixing-Probe"
# What `refuse` may name: the request features a server may not support.
_FEATURES = ("json_schema", "json_object", "tools", "stream")

_NUMBERED = re.compile(r"^(\d+)\| ?(.*)$", re.M)
# Capitalized words in a row ("SQL Injection"), optionally glued to Chinese ("SQL注入"), or a
# run of Chinese characters: crude, but it yields the kind of names a real model returns.
_TERM = re.compile(
    r"[A-Z][A-Za-z0-9_+#\-]*(?:[ ][A-Z][A-Za-z0-9_+#\-]*)*(?:[\u4e00-\u9fff]{1,6})?"
    r"|[\u4e00-\u9fff]{2,6}"
)
_WORD = re.compile(r"[A-Za-z0-9_]+|[\u4e00-\u9fff]")


def _prompt_text(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


def images_of(body: dict[str, Any]) -> list[str]:
    """The URLs of the `image_url` parts of a request's messages, in order."""
    return [
        str((part.get("image_url") or {}).get("url", ""))
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "image_url"
    ]


def _schema_of(body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The (name, JSON schema) the request asks the answer to follow, when it says."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema", {})
        return spec.get("name", ""), spec.get("schema")
    for tool in body.get("tools") or []:
        function = tool.get("function", {})
        return function.get("name", ""), function.get("parameters")
    return "", None


def _chunk_knowledge(prompt: str) -> dict[str, Any]:
    # Only the first user message holds the document; a repair request repeats nothing numbered.
    lines = [(int(n), text.strip()) for n, text in _NUMBERED.findall(prompt) if text.strip()]
    questions = [
        {"question": f"What does the text say about {text[:60]}?", "line_start": n, "line_end": n}
        for n, text in lines[:6]
    ]
    entities: list[dict[str, Any]] = []
    relations: list[dict[str, Any]] = []
    if re.search(r"Build mode:\s*graph", prompt):
        body = "\n".join(text for _, text in lines)
        names: list[str] = []
        for term in _TERM.findall(body):
            if term not in names:
                names.append(term)
        entities = [
            {
                "name": name,
                "type": "concept",
                "description": f"{name} as the text describes it.",
                "attributes": {},
            }
            for name in names[:6]
        ]
        if len(names) >= 2:
            relations = [
                {
                    "source": names[0],
                    "target": names[1],
                    "type": "related_to",
                    "description": f"{names[0]} is mentioned with {names[1]}.",
                }
            ]
    return {"questions": questions, "entities": entities, "relations": relations}


def _minimal(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """The smallest value that validates against a (pydantic-generated) JSON schema."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return _minimal(root.get("$defs", {}).get(name, {}), root)
    if "anyOf" in schema:
        return _minimal(schema["anyOf"][0], root)
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _minimal(props[k], root) for k in schema.get("required", []) if k in props}
    return {"string": "x", "integer": 1, "number": 1.0, "boolean": True, "array": []}.get(
        kind or ""
    )


def default_responder(body: dict[str, Any]) -> dict[str, Any]:
    """Answer a ChunkKnowledge prompt from its numbered lines; any other schema minimally."""
    name, schema = _schema_of(body)
    prompt = _prompt_text(body)
    if name == "ChunkKnowledge" or (schema is None and "Build mode:" in prompt):
        return _chunk_knowledge(prompt)
    return _minimal(schema, schema) if schema else {}


def hashed_embedding(text: str, dimension: int) -> list[float]:
    """A deterministic, L2-normalized bag-of-words vector: equal words give close vectors."""
    vector = [0.0] * dimension
    for word in _WORD.findall(text.lower()) or ["<empty>"]:
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dimension
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


class FakeOpenAI:
    """A scriptable OpenAI-compatible server in a background thread."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency_s: float = 0.0,
        dimension: int = 32,
        timeout_sleep_s: float = 5.0,
        retry_after: str = "0",
        model: str = "fake-model",
        chaos: Callable[[dict[str, Any]], str | None] | None = None,
        stream_piece: int = 8,
        stream_delay_s: float = 0.0,
        embedding_latency_s: float | None = None,
        slots: int | None = None,
        refuse: Collection[str] = (),
        tool_calls_as_text: bool = False,
        probe_latency_s: float = 0.0,
    ) -> None:
        # slots: serve that many chat requests at once and queue the rest, as a one-slot
        # llama-server does, and report it on GET /props as `total_slots` (None: no /props).
        self.slots = slots
        unknown = set(refuse) - set(_FEATURES)
        if unknown:
            raise ValueError(f"Unknown feature(s) {sorted(unknown)}; use {', '.join(_FEATURES)}.")
        self.refuse = frozenset(refuse)
        self.tool_calls_as_text = tool_calls_as_text
        self.probes: list[dict[str, Any]] = []  # capability probes, kept out of `requests`
        self._slot_gate = threading.BoundedSemaphore(slots) if slots else None
        self.generated = 0  # chat replies the server generated (a re-sent request counts twice)
        self.stream_piece = stream_piece
        self.stream_delay_s = stream_delay_s
        self.responder: Responder = responder or default_responder
        self.chaos = chaos
        self.latency_s = latency_s
        self.probe_latency_s = probe_latency_s  # each capability probe's own delay
        # The embeddings' own delay (None: `latency_s`), for a build slow in one stage only.
        self.embedding_latency_s = embedding_latency_s
        self.dimension = dimension
        self.timeout_sleep_s = timeout_sleep_s
        self.retry_after = retry_after
        self.model = model
        self.faults: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []  # every JSON body, with "_path" and "_auth" added
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port = 0

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        handler = _handler_for(self)
        self._stopping.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False  # a sleeping "timeout" handler must not block stop()
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut the server down: from now on connections to `url` are refused."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL to give the client, e.g. http://127.0.0.1:PORT/v1."""
        return f"http://127.0.0.1:{self._port}/v1"

    # --- scripting and inspection -------------------------------------------------------------

    def fail(self, *faults: str) -> None:
        """Queue faults, consumed one per request in order (see FAULTS)."""
        unknown = set(faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"Unknown fault(s) {sorted(unknown)}; use {', '.join(FAULTS)}.")
        with self._lock:
            self.faults.extend(faults)

    def bodies(self, path: str = "/v1/chat/completions") -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r["_path"] == path]

    @property
    def chat_count(self) -> int:
        return len(self.bodies("/v1/chat/completions"))

    @property
    def embedding_count(self) -> int:
        return len(self.bodies("/v1/embeddings"))

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.faults.clear()

    # --- request handling (called from handler threads) ---------------------------------------

    def _next_fault(self, body: dict[str, Any]) -> str | None:
        with self._lock:
            if self.faults:
                return self.faults.popleft()
        return self.chaos(body) if self.chaos is not None else None

    def _record(self, path: str, body: dict[str, Any], auth: str, *, probe: bool = False) -> None:
        with self._lock:
            (self.probes if probe else self.requests).append({**body, "_path": path, "_auth": auth})

    def _refused(self, body: dict[str, Any]) -> str | None:
        """The feature of this request that the server refuses, if any."""
        asked = {
            "json_schema": (body.get("response_format") or {}).get("type") == "json_schema",
            "json_object": (body.get("response_format") or {}).get("type") == "json_object",
            "tools": bool(body.get("tools")),
            "stream": bool(body.get("stream")),
        }
        return next((f for f in _FEATURES if f in self.refuse and asked[f]), None)

    def _chat(
        self, body: dict[str, Any], fault: str | None, *, probe: bool = False
    ) -> dict[str, Any]:
        answer: dict[str, Any] | str
        if fault == "malformed":
            answer = 'Sure! Here is the JSON you asked for: {"questions": [ oops'
        elif fault == "invalid":
            answer = {"questions": "none", "entities": [{"name": 3}]}
        else:
            answer = (default_responder if probe else self.responder)(body)
        scripted = answer.get("_tool_calls") if isinstance(answer, dict) else None
        plain = isinstance(answer, dict) and "_content" in answer
        if plain:
            answer = str(answer["_content"])
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        finish = "stop"
        tools = body.get("tools") or []
        if self.tool_calls_as_text and (scripted is not None or (tools and not plain)):
            # The grammar was built, the model wrote the call as text: content, no tool_calls.
            name = tools[0].get("function", {}).get("name", "answer") if tools else "answer"
            calls = scripted if scripted is not None else [{"name": name, "arguments": answer}]
            text = json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
            message = {"role": "assistant", "content": text}
        elif scripted is not None:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{len(self.requests)}_{n}",
                        "type": "function",
                        "function": {
                            "name": str(call.get("name", "")),
                            "arguments": call.get("arguments")
                            if isinstance(call.get("arguments"), str)
                            else json.dumps(call.get("arguments", {}), ensure_ascii=False),
                        },
                    }
                    for n, call in enumerate(scripted)
                ],
            }
            finish = "tool_calls"
        elif tools and fault != "no_tool_call" and not plain:
            name = tools[0].get("function", {}).get("name", "answer")
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{len(self.requests)}",
                        "type": "function",
                        "function": {"name": name, "arguments": text},
                    }
                ],
            }
            finish = "tool_calls"
        prompt_tokens = len(_prompt_text(body)) // 4 + 1
        completion_tokens = len(text) // 4 + 1
        return {
            "id": f"chatcmpl-fake-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input", [])
        if isinstance(inputs, str):
            inputs = [inputs]
        data = []
        for i, text in enumerate(inputs):
            vector = hashed_embedding(str(text), self.dimension)
            if body.get("encoding_format") == "base64":
                packed = struct.pack(f"<{len(vector)}f", *vector)
                embedding: Any = base64.b64encode(packed).decode("ascii")
            else:
                embedding = vector
            data.append({"object": "embedding", "index": i, "embedding": embedding})
        tokens = sum(len(str(t)) // 4 + 1 for t in inputs)
        return {
            "object": "list",
            "data": data,
            "model": body.get("model", self.model),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, so after stop() no pooled connection lingers.
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass  # keep test output clean

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            path = self.path.split("?", 1)[0]
            if path == "/props" and fake.slots:
                self._send(200, {"total_slots": fake.slots})
            elif path == "/v1/models":
                self._models()
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            if self.headers.get(PROBE_HEADER):
                self._probe()
            elif fake._slot_gate is not None and self.path.startswith("/v1/chat"):
                with fake._slot_gate:  # queued here, as a busy server queues
                    self._post()
                    with fake._lock:
                        fake.generated += 1
            else:
                self._post()

        def _models(self) -> None:
            """GET /v1/models lists the fake's one model; a queued 401, 500, 503 or timeout
            fault answers it instead (`zhixing health` calls it)."""
            fake._record("/v1/models", {}, self.headers.get("Authorization", ""))
            fault = fake._next_fault({})
            if fault in ("401", "500", "503"):
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                self._send(int(fault), {"error": {"message": f"Request rejected for key {token}"}})
            elif fault == "timeout":
                fake._stopping.wait(fake.timeout_sleep_s)
            else:
                models = [{"id": fake.model, "object": "model", "owned_by": "fake"}]
                self._send(200, {"object": "list", "data": models})

        def _read(self, *, probe: bool = False) -> dict[str, Any] | None:
            """The request's JSON body, recorded; None once a refusal has been sent."""
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self._send(400, {"error": {"message": "body is not JSON"}})
                return None
            path = self.path.split("?", 1)[0]
            fake._record(path, body, self.headers.get("Authorization", ""), probe=probe)
            if path not in ("/v1/chat/completions", "/v1/embeddings"):
                self._send(404, {"error": {"message": f"no route {path}"}})
                return None
            refused = fake._refused(body) if path == "/v1/chat/completions" else None
            if refused is not None:
                message = f"{refused} is not supported by this server"
                self._send(400, {"error": {"message": message, "type": "invalid_request_error"}})
                return None
            return body

        def _probe(self) -> None:
            body = self._read(probe=True)
            if body is None:
                return
            time.sleep(fake.probe_latency_s)
            # The base class's own answer: a subclass scripting its calls scripts no probe.
            completion = FakeOpenAI._chat(fake, body, None, probe=True)
            if body.get("stream"):
                self._stream(_stream_chunks(completion, fake.stream_piece), cut=False)
            else:
                self._send(200, completion)

        def _post(self) -> None:
            body = self._read()
            if body is None:
                return
            path = self.path.split("?", 1)[0]
            fault = fake._next_fault(body)
            latency = fake.latency_s
            if path == "/v1/embeddings" and fake.embedding_latency_s is not None:
                latency = fake.embedding_latency_s
            if latency and fake._stopping.wait(latency):
                return
            if fault == "429":
                self._send(
                    429,
                    {"error": {"message": "Rate limit reached", "type": "rate_limit"}},
                    {"Retry-After": fake.retry_after},
                )
            elif fault in ("400", "401"):
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                self._send(int(fault), {"error": {"message": f"Request rejected for key {token}"}})
            elif fault in ("500", "503"):
                self._send(int(fault), {"error": {"message": "The server had an error"}})
            elif fault == "timeout":
                fake._stopping.wait(fake.timeout_sleep_s)  # the client gives up first
            elif path == "/v1/chat/completions" and body.get("stream"):
                completion = fake._chat(body, None if fault == "cut" else fault)
                self._stream(_stream_chunks(completion, fake.stream_piece), cut=fault == "cut")
            elif fault == "cut":
                payload = (
                    fake._embeddings(body) if path == "/v1/embeddings" else fake._chat(body, None)
                )
                self._send(200, payload, cut=True)
            elif path == "/v1/embeddings":
                self._send(200, fake._embeddings(body))
            else:
                self._send(200, fake._chat(body, fault))

        def _stream(self, chunks: list[dict[str, Any]], *, cut: bool) -> None:
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for n, chunk in enumerate(chunks):
                    if cut and n >= len(chunks) // 2:
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    data = json.dumps(chunk, ensure_ascii=False)
                    self.wfile.write(f"data: {data}\n\n".encode())
                    self.wfile.flush()
                    if fake.stream_delay_s and fake._stopping.wait(fake.stream_delay_s):
                        return
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _send(
            self,
            status: int,
            payload: dict[str, Any],
            headers: dict[str, str] | None = None,
            *,
            cut: bool = False,
        ) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data[: len(data) // 2] if cut else data)
                if cut:
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client already gave up (a timeout test)

    return Handler


def _stream_chunks(completion: dict[str, Any], piece: int) -> list[dict[str, Any]]:
    """A chat completion as the `chat.completion.chunk` objects of a stream."""
    choice = completion["choices"][0]
    message = choice["message"]
    head = {k: completion[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    calls = message.get("tool_calls") or []
    for index, call in enumerate(calls):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": "function"}
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        opening | {"function": {"name": function["name"], "arguments": ""}}
                    ]
                }
            )
        )
        arguments = function["arguments"]
        for start in range(0, len(arguments), piece):
            part = {"index": index, "function": {"arguments": arguments[start : start + piece]}}
            chunks.append(chunk({"tool_calls": [part]}))
    content = message.get("content") or ""
    for start in range(0, len(content), piece):
        chunks.append(chunk({"content": content[start : start + piece]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    return chunks
