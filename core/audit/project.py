"""The project index: every class of the audited tree, its fields, methods and supertypes.

The interprocedural pass resolves calls through this index: by enclosing class, by a
receiver's static type (including implementations of an interface) or by a static class name;
names through :meth:`ClassInfo.field_owner` and :func:`named_class`.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterator
from dataclasses import dataclass, field

from .java import Node, Tree, child, children, text
from .values import Val

_GENERIC = re.compile(r"<.*>", re.S)
_QUALIFIED = re.compile(r"^[a-z_$][\w$]*(\.[a-z_$][\w$]*)*\.([A-Z][\w$]*)$")


def simple_type(type_text: str) -> str:
    """``java.util.List<String>`` -> ``List``; ``java.lang.String[]`` -> ``String[]``."""
    t = _GENERIC.sub("", type_text).strip()
    dims = t.count("[]") + (1 if t.endswith("...") else 0)
    t = t.replace("[]", "").replace("...", "").strip()
    return t.rsplit(".", 1)[-1] + "[]" * dims


@dataclass
class MethodInfo:
    """One method or constructor declaration."""

    cls: ClassInfo
    name: str  # "<init>" for constructors
    node: Node
    params: list[tuple[str, str, list[str]]]  # (name, simple type, annotation names)
    ret: str | None
    varargs: bool
    static: bool
    annotations: tuple[str, ...] = ()  # the method's own annotation names

    @property
    def key(self) -> tuple[int, int]:
        return (self.cls.file_idx, self.node.start_byte)


@dataclass
class ClassInfo:
    """One class, interface or enum (nested ones included)."""

    name: str
    file_idx: int
    node: Node
    outer: ClassInfo | None
    supers: list[str]
    fields: dict[str, str] = field(default_factory=dict)  # name -> simple type
    field_inits: dict[str, Node] = field(default_factory=dict)
    methods: dict[str, list[MethodInfo]] = field(default_factory=dict)
    components: list[str] = field(default_factory=list)  # a record's, in order

    def field_owner(self, name: str) -> ClassInfo | None:
        """The class whose field ``name`` is: this one or the nearest enclosing one."""
        c: ClassInfo | None = self
        while c is not None:
            if name in c.fields:
                return c
            c = c.outer
        return None


@dataclass
class SourceFile:
    path: str  # relative, forward slashes
    source: bytes
    tree: Tree
    lines: list[bytes]


class Project:
    """All classes of the audited tree, looked up by simple name."""

    def __init__(self) -> None:
        self.files: list[SourceFile] = []
        self.by_name: dict[str, list[ClassInfo]] = {}
        self.subtypes: dict[str, set[str]] = {}

    def add_file(self, sf: SourceFile) -> None:
        idx = len(self.files)
        self.files.append(sf)
        for top in children(sf.tree.root_node):
            self._add_class(top, idx, None)

    def _add_class(self, node: Node, idx: int, outer: ClassInfo | None) -> None:
        kinds = (
            "class_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
        )
        if node.type not in kinds:
            return
        supers: list[str] = []
        for f in ("superclass", "interfaces"):
            sup = child(node, f)
            if sup is not None:
                supers.extend(simple_type(text(t)) for t in _type_nodes(sup))
        for c in children(node):
            if c.type == "extends_interfaces":
                supers.extend(simple_type(text(t)) for t in _type_nodes(c))
        info = ClassInfo(text(child(node, "name")), idx, node, outer, supers)
        self.by_name.setdefault(info.name, []).append(info)
        for s in supers:
            self.subtypes.setdefault(s, set()).add(info.name)
        comps = child(node, "parameters") if node.type == "record_declaration" else None
        for p in children(comps) if comps is not None else []:
            if p.type == "formal_parameter":  # a record component: a field and its accessor
                info.fields[text(child(p, "name"))] = simple_type(text(child(p, "type")))
                info.components.append(text(child(p, "name")))
        body = child(node, "body")
        for member in children(body) if body is not None else []:
            if member.type == "field_declaration":
                ftype = simple_type(text(child(member, "type")))
                for d in member.children_by_field_name("declarator"):
                    fname = text(child(d, "name"))
                    info.fields[fname] = ftype
                    init = child(d, "value")
                    if init is not None:
                        info.field_inits[fname] = init
            elif member.type in ("method_declaration", "constructor_declaration"):
                self._add_method(info, member)
            elif member.type == "enum_body_declarations":
                for m in children(member):
                    if m.type in ("method_declaration", "constructor_declaration"):
                        self._add_method(info, m)
            else:
                self._add_class(member, idx, info)

    def _add_method(self, cls: ClassInfo, node: Node) -> None:
        ctor = node.type == "constructor_declaration"
        name = "<init>" if ctor else text(child(node, "name"))
        params: list[tuple[str, str, list[str]]] = []
        varargs = False
        plist = child(node, "parameters")
        for p in children(plist) if plist is not None else []:
            if p.type not in ("formal_parameter", "spread_parameter"):
                continue
            annos = [_simple(text(child(a, "name"))) for a in _annotations(p)]
            if p.type == "spread_parameter":
                varargs = True
                tnode = next((c for c in children(p) if c.type.endswith("type")), None)
                decl = next((c for c in children(p) if c.type == "variable_declarator"), None)
                pname = text(child(decl, "name")) if decl is not None else ""
                params.append((pname, simple_type(text(tnode)) + "[]", annos))
            else:
                params.append((text(child(p, "name")), simple_type(text(child(p, "type"))), annos))
        mods = next((c for c in children(node) if c.type == "modifiers"), None)
        static = mods is not None and "static" in text(mods).split()
        marks = tuple(
            _simple(text(child(a, "name")))
            for a in (children(mods) if mods is not None else [])
            if a.type in ("annotation", "marker_annotation")
        )
        ret = None if ctor else simple_type(text(child(node, "type")))
        info = MethodInfo(cls, name, node, params, ret, varargs, static, marks)
        cls.methods.setdefault(name, []).append(info)
        body = child(node, "body")
        for local in _local_classes(body) if body is not None else []:
            self._add_class(local, cls.file_idx, cls)

    def classes(self, name: str, near: ClassInfo | None) -> list[ClassInfo]:
        """Classes called ``name``: the nearest (same file) first, else all of that name."""
        found = self.by_name.get(name, [])
        if near is not None and len(found) > 1:
            local = [c for c in found if c.file_idx == near.file_idx]
            if local:
                return local
        return found

    def classes_all(self) -> Iterator[ClassInfo]:
        """Every class, interface and enum of the tree."""
        for classes in self.by_name.values():
            yield from classes

    def methods(self) -> Iterator[MethodInfo]:
        """Every method and constructor, class by class in the order they were indexed."""
        for classes in self.by_name.values():
            for c in classes:
                for ms in c.methods.values():
                    yield from ms

    def enclosing_methods(self, cls: ClassInfo, name: str, arity: int) -> list[MethodInfo]:
        """What an unqualified call ``name(...)`` inside ``cls`` may run: the methods of ``cls``
        (its own first, then its subtypes') or, failing that, of the nearest enclosing class."""
        c: ClassInfo | None = cls
        while c is not None:
            found = find_methods(self.with_subtypes(c.name, c), name, arity)
            found = [f for f in found if f.cls is c] or found
            if found:
                return found
            c = c.outer
        return []

    def methods_of(
        self, typ: str | None, near: ClassInfo, name: str, arity: int
    ) -> list[MethodInfo]:
        """What ``x.name(...)`` may run when ``x`` has type ``typ``: the methods of that
        project type and of its subtypes; none for a type the project does not declare."""
        if not typ or typ not in self.by_name:
            return []
        return find_methods(self.with_subtypes(typ, near), name, arity)

    def with_subtypes(self, name: str, near: ClassInfo | None) -> list[ClassInfo]:
        out: list[ClassInfo] = []
        seen: set[str] = set()
        todo = [name]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            out.extend(self.classes(n, near))
            todo.extend(self.subtypes.get(n, ()))
        return out


def named_class(n: Node, cls: ClassInfo, local_names: Container[str]) -> str | None:
    """The simple class name when ``n``, inside ``cls``, names a class (``Math``,
    ``java.net.URLDecoder``) rather than a local variable (one of ``local_names``) or a field."""
    if n.type == "identifier":
        name = text(n)
        if name in local_names or cls.field_owner(name) is not None:
            return None
        return name if name[:1].isupper() else None
    if n.type in ("field_access", "scoped_identifier"):
        m = _QUALIFIED.match("".join(text(n).split()))
        if m and m.group(0).split(".")[0] not in local_names:
            return m.group(2)
    return None


def best_overloads(cands: list[MethodInfo], args: list[Val]) -> list[MethodInfo]:
    """Among overloads of one arity, keep those whose parameter types match the most known
    argument types (the engine has no classpath, so this is a ranking, not Java's rules)."""
    if len(cands) < 2:
        return cands

    def score(m: MethodInfo) -> int:
        return sum(
            1
            for (_, ptype, _), a in zip(m.params, args, strict=False)
            if a.typ is not None and a.typ == ptype
        )

    best = max(score(m) for m in cands)
    return [m for m in cands if score(m) == best]


def find_methods(classes: list[ClassInfo], name: str, arity: int) -> list[MethodInfo]:
    out: list[MethodInfo] = []
    for c in classes:
        for m in c.methods.get(name, []):
            n = len(m.params)
            if n == arity or (m.varargs and arity >= n - 1):
                out.append(m)
    return out


def _type_nodes(node: Node) -> list[Node]:
    out: list[Node] = []
    for c in children(node):
        if c.type in ("type_identifier", "scoped_type_identifier", "generic_type"):
            out.append(c)
        elif c.type == "type_list":
            out.extend(_type_nodes(c))
    return out


def _annotations(param: Node) -> list[Node]:
    mods = next((c for c in children(param) if c.type == "modifiers"), None)
    if mods is None:
        return []
    return [a for a in children(mods) if a.type in ("annotation", "marker_annotation")]


def _local_classes(n: Node) -> Iterator[Node]:
    """Classes declared inside a method body (not inside another class or a lambda there).
    Walked with a stack of its own: a body may nest deeper than Python's call stack."""
    todo = list(reversed(children(n)))
    while todo:
        c = todo.pop()
        if c.type in ("class_declaration", "local_class_declaration", "record_declaration"):
            yield c
        elif c.type not in ("class_body", "lambda_expression"):
            todo.extend(reversed(children(c)))


def _simple(name: str) -> str:
    """``org.springframework...RequestParam`` -> ``RequestParam``."""
    return name.rsplit(".", 1)[-1]
