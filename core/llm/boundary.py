"""The boundary every LLM reply crosses: untrusted text in, a valid result or named rejections out.

Real models answer carelessly: prose around the JSON, code fences, JSON cut off mid-string,
`"Question"` or `"lineStart"` for `question` and `line_start`, a bare string where an object
was asked for, `"yes"` for true, one bad item in an otherwise good list. `salvage` reads such a
reply against the role's pydantic schema and keeps every part that validates: a list item that
cannot be read is dropped (and named in the rejections), never the whole reply. Only a reply
with nothing usable in it comes back as None, and the client then asks once for a repair.

`Rejections` counts what was dropped and why, per role, so a build summary can say it.
"""

from __future__ import annotations

import json
import re
import threading
import types
from collections import Counter
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

__all__ = ["Rejections", "extract_json", "salvage", "tidy", "tidy_list"]

# Names careless models use for the fields of our schemas, normalized (lower case, letters and
# digits only). Matched only when the schema has the target field and lacks the alias itself.
_ALIASES = {
    "from": "source",
    "src": "source",
    "head": "source",
    "to": "target",
    "dst": "target",
    "tail": "target",
    "start": "linestart",
    "end": "lineend",
    "startline": "linestart",
    "endline": "lineend",
    "q": "question",
    "text": "question",
    "entityname": "name",
    "label": "name",
    "entitytype": "type",
    "relation": "type",
    "relationtype": "type",
    "desc": "description",
    "summary": "description",
    "issufficient": "sufficient",
    "enough": "sufficient",
    "citations": "cited",
    "sources": "cited",
    "step": "steps",
    "plan": "steps",
    "subquestions": "subquestions",
    "hyde": "hypotheticalanswer",
    "answerfound": "found",
}
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)(?:```|$)", re.S)
_LEADING_INT = re.compile(r"-?\d+")
_LIST_SPLIT = re.compile(r"\s*(?:[,;，；、]|\n)\s*")
_TRUE = {"true", "yes", "y", "1", "是", "对", "充分", "sufficient", "enough"}
_FALSE = {"false", "no", "n", "0", "否", "不", "不充分", "insufficient", "none", "null", ""}


class Rejections:
    """Thread-safe counts of what was rejected from LLM replies: ("role: reason") -> n."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, role: str, reason: str, n: int = 1) -> None:
        if n > 0:
            with self._lock:
                self._counts[f"{role}: {reason}"] += n

    def extend(self, role: str, reasons: list[str]) -> None:
        for reason in reasons:
            self.add(role, reason)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._counts.items()))

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def __bool__(self) -> bool:
        return self.total() > 0


def tidy(text: object, limit: int) -> str:
    """One line of a model's text, whitespace collapsed; "" when empty or longer than `limit`
    (a field that long is the model dumping text, not answering it)."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else ""


def tidy_list(items: object, *, limit: int, max_items: int) -> list[str]:
    """The distinct usable strings of a model's list, in order, at most `max_items`."""
    if isinstance(items, str):
        items = [items]
    out: list[str] = []
    seen: set[str] = set()
    for item in items if isinstance(items, list | tuple) else []:
        text = tidy(item, limit)
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    return out[:max_items]


def _norm(key: object) -> str:
    return re.sub(r"[^0-9a-z]", "", str(key).casefold())


def extract_json(text: str) -> tuple[Any, bool]:
    """The JSON value in a reply: (value or None, whether it had to be completed).

    Accepts a bare value, one inside a code fence, one after prose, and one cut off at the end
    (completed by closing what is open).
    """
    text = text.strip()
    candidates = [text]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if starts:
        candidates.append(text[min(starts) :])
    decoder = json.JSONDecoder()
    for candidate in candidates:
        if not candidate:
            continue
        try:
            value, _ = decoder.raw_decode(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict | list):
            return value, False
    from langchain_core.utils.json import parse_partial_json

    for candidate in candidates[1:] or candidates:
        if not candidate.startswith(("{", "[")):
            continue
        try:
            value = parse_partial_json(candidate)
        except (json.JSONDecodeError, ValueError, TypeError, IndexError):
            continue
        if isinstance(value, dict | list):
            return value, True
    return None, False


def salvage(schema: type[BaseModel], reply: str | Any) -> tuple[BaseModel | None, list[str]]:
    """Read a reply (its text, or JSON already decoded) against `schema`, keeping what
    validates: (result or None, rejections)."""
    if isinstance(reply, str):
        value, truncated = extract_json(reply)
        if value is None:
            return None, ["no JSON in the reply"] if reply.strip() else ["empty reply"]
    else:
        value, truncated = reply, False
    rejected: list[str] = []
    if truncated:
        rejected.append("reply cut off (the unfinished item was dropped)")
        value = _drop_unfinished(value)
    if isinstance(value, list):
        value = _wrap_list(schema, value)
        if value is None:
            return None, [*rejected, "a list where an object was expected"]
    if not isinstance(value, dict):
        return None, [*rejected, "not a JSON object"]
    result = _model(schema, value, "", rejected)
    if result is not None and rejected and _emptied(result):
        # Everything the reply listed was unreadable: that is no answer, not an empty one.
        return None, rejected
    return result, rejected


def _emptied(result: BaseModel) -> bool:
    lists = [getattr(result, n) for n, f in type(result).model_fields.items() if _is_list(f)]
    return bool(lists) and not any(lists)


def _is_list(field: Any) -> bool:
    return get_origin(field.annotation) is list


def _drop_unfinished(value: Any) -> Any:
    """A truncated reply's last item was being written when it was cut: drop it."""
    if isinstance(value, list):
        return value[:-1]
    if isinstance(value, dict) and value:
        last = list(value)[-1]
        inner = value[last]
        if isinstance(inner, list):
            return {**value, last: inner[:-1]}
        return {k: v for k, v in value.items() if k != last}
    return value


def _wrap_list(schema: type[BaseModel], items: list[Any]) -> dict[str, Any] | None:
    """A bare list for a schema with one list field (`[...]` for `{"questions": [...]}`)."""
    lists = [name for name, f in schema.model_fields.items() if _is_list(f)]
    if len(lists) == 1:
        return {lists[0]: items}
    return None


def _match_keys(schema: type[BaseModel], data: Mapping[str, Any]) -> dict[str, Any]:
    """Map the reply's keys onto the schema's fields, forgiving case, separators and aliases."""
    fields = {_norm(name): name for name in schema.model_fields}
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = schema.model_fields.get(key) and key
        if name is None:
            normalized = _norm(key)
            name = fields.get(normalized) or fields.get(_ALIASES.get(normalized, ""))
        if name is not None and name not in out:
            out[name] = value
    return out


def _model(
    schema: type[BaseModel], data: Mapping[str, Any], where: str, rejected: list[str]
) -> BaseModel | None:
    """Validate one object field by field; None when a required field cannot be read."""
    matched = _match_keys(schema, data)
    clean: dict[str, Any] = {}
    for name, field in schema.model_fields.items():
        label = f"{where}{name}"
        if name not in matched or matched[name] is None:
            if field.is_required():
                rejected.append(f"{label}: missing")
                return None
            continue
        ok, value = _coerce(field.annotation, matched[name], label, rejected)
        if ok:
            clean[name] = value
        elif field.is_required():
            return None
    try:
        return schema.model_validate(clean)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        rejected.append(f"{where}{loc}: {first['msg']}")
        return None


def _coerce(annotation: Any, value: Any, label: str, rejected: list[str]) -> tuple[bool, Any]:
    """Turn a careless value into one of the annotation's type: (ok, value)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        for option in get_args(annotation):
            if option is type(None):
                continue
            ok, out = _coerce(option, value, label, [])
            if ok:
                return True, out
        rejected.append(f"{label}: unreadable value")
        return False, None
    if origin is list:
        (inner,) = get_args(annotation) or (Any,)
        return True, _coerce_list(inner, value, label, rejected)
    if origin is dict:
        if not isinstance(value, dict):
            rejected.append(f"{label}: not an object")
            return False, None
        return True, {
            str(k)[:100]: (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))[:300]
            for k, v in list(value.items())[:20]
            if v is not None
        }
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if isinstance(value, str):  # a bare string for an object: its first required text field
            first = next(
                (n for n, f in annotation.model_fields.items() if f.annotation is str), None
            )
            value = {first: value} if first else {}
        if not isinstance(value, dict):
            rejected.append(f"{label}: not an object")
            return False, None
        out = _model(annotation, value, f"{label}.", rejected)
        return out is not None, out
    if annotation is str:
        if isinstance(value, str):
            return True, value
        if isinstance(value, int | float | bool):
            return True, str(value)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return True, " ".join(value)
        rejected.append(f"{label}: not text")
        return False, None
    if annotation is bool:
        if isinstance(value, bool):
            return True, value
        folded = str(value).strip().casefold()
        if folded in _TRUE:
            return True, True
        if folded in _FALSE:
            return True, False
        rejected.append(f"{label}: not true or false")
        return False, None
    if annotation is int:
        if isinstance(value, bool):
            rejected.append(f"{label}: not a number")
            return False, None
        if isinstance(value, int):
            return True, value
        if isinstance(value, float) and value == value and abs(value) < 1e12:
            return True, int(value)
        if isinstance(value, str) and (m := _LEADING_INT.search(value)):
            return True, int(m.group(0))
        rejected.append(f"{label}: not a number")
        return False, None
    return True, value


def _coerce_list(inner: Any, value: Any, label: str, rejected: list[str]) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, dict):
        # {"SQL注入": {...}, ...} for a list of objects: the key is usually the item's name.
        items = []
        for key, item in value.items():
            if isinstance(item, dict) and "name" not in item and _has_name(inner):
                item = {"name": key, **item}
            items.append(item if item is not None else key)
        value = items
    elif isinstance(value, str):
        value = (
            [part for part in _LIST_SPLIT.split(value) if part.strip()] if inner is str else [value]
        )
    elif not isinstance(value, list):
        value = [value]
    out = []
    for n, item in enumerate(value):
        ok, coerced = _coerce(inner, item, f"{label}[{n}]", rejected)
        if ok:
            out.append(coerced)
    return out


def _has_name(annotation: Any) -> bool:
    return (
        isinstance(annotation, type)
        and issubclass(annotation, BaseModel)
        and "name" in annotation.model_fields
    )
