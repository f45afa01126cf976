"""Knowledge bases: create, list, delete, who may see them, and their portable archives."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..auth import check_user_name
from ..choices import DocumentState
from ..errors import AccessError, NotFoundError, StoreError
from ..home import tighten
from ..models import (
    BackupSummary,
    ChunkText,
    DocumentText,
    KnowledgeBase,
    KnowledgeBaseSummary,
    StoredDocument,
)
from .access import Access

if TYPE_CHECKING:
    from ..backup import Stores

__all__ = ["KnowledgeBases"]


class KnowledgeBases:
    def __init__(self, access: Access) -> None:
        self._access, self._home = access, access.home

    def create(
        self, name: str, *, mode: str = "index", tags: Sequence[str] = (), description: str = ""
    ) -> KnowledgeBase:
        access = self._access
        access.require("build", "create knowledge bases")
        access.check_name_free(name)
        kb = self._home.catalog.create_kb(
            name,
            mode=mode,
            tags=tags,
            description=description,
            embedding=self._home.embedder.name,
            dimension=self._home.embedder.dimension,
            created_by=access.actor.name,
        )
        access.audit("kb.create", kb.name, mode=kb.mode)
        return kb

    def all(self) -> list[KnowledgeBase]:
        """The knowledge bases the actor may see."""
        return self._access.list_kbs()

    def overview(self) -> list[KnowledgeBaseSummary]:
        """The visible knowledge bases with their document and chunk counts."""
        catalog = self._home.catalog
        return [KnowledgeBaseSummary(kb, *catalog.kb_counts(kb.id)) for kb in self.all()]

    def get(self, name: str) -> KnowledgeBase:
        """The knowledge base `name` if the actor may see it (NotFoundError otherwise, the same
        for a missing one and one restricted to others)."""
        return self._access.kb(name)

    def check_name_free(self, name: str) -> None:
        """Raise unless a new knowledge base may take `name`."""
        self._access.check_name_free(name)

    def documents(self, name: str) -> list[StoredDocument]:
        return self._home.catalog.list_documents(self._access.kb(name).id)

    def chunk(self, chunk_id: int) -> ChunkText:
        """The indexed chunk `chunk_id`, if the actor may see its knowledge base. A chunk of a
        knowledge base restricted to others reads exactly as a missing one."""
        found = self._chunks([chunk_id])
        if not found:
            raise NotFoundError(
                f"There is no chunk {chunk_id} that {self._access.actor.name} may see."
            )
        return found[0]

    def document(self, document_id: int) -> DocumentText:
        """The indexed document `document_id` with its chunks in order, if the actor may see
        its knowledge base (a restricted one reads as missing, as `chunk` does)."""
        for kb in self._access.list_kbs():
            for doc in self._home.catalog.list_documents(kb.id):
                if doc.id == document_id and doc.status == DocumentState.INDEXED:
                    ids = self._home.catalog.chunk_ids(kb.id, [doc.id])
                    return DocumentText(kb.name, doc, tuple(self._chunks(ids)))
        raise NotFoundError(
            f"There is no document {document_id} that {self._access.actor.name} may see."
        )

    def _chunks(self, chunk_ids: Sequence[int]) -> list[ChunkText]:
        """The indexed chunks among `chunk_ids` whose knowledge base the actor may see, in
        their documents' order."""
        visible = self._access.visible_names()
        rows = self._home.catalog.chunks_by_id(list(chunk_ids)).values()
        shown = [r for r in rows if r["kb"] in visible and r["status"] == DocumentState.INDEXED]
        return [
            ChunkText(
                id=int(r["id"]),
                knowledge_base=r["kb"],
                document_id=int(r["document_id"]),
                document=r["source"],
                title=r["title"],
                ordinal=int(r["ordinal"]),
                page_start=int(r["page_start"]),
                page_end=int(r["page_end"]),
                line_start=int(r["line_start"]),
                line_end=int(r["line_end"]),
                heading_path=tuple(r["heading_path"]),
                ocr=bool(r["ocr"]),
                text=r["text"],
            )
            for r in sorted(shown, key=lambda r: (r["document_id"], r["ordinal"]))
        ]

    def delete(self, name: str) -> None:
        """Delete a knowledge base everywhere: its vectors first, then every catalog row.

        Deleting is an admin's. An editor may only undo their own create: a knowledge base
        they made that never held a document (removing every document does not empty it of
        that history: it stays the admin's to delete)."""
        access, actor = self._access, self._access.actor
        if not actor.can("build"):  # the role before the name: a viewer learns nothing
            actor.require("admin", "delete knowledge bases")
        kb = access.kb(name)
        if not actor.can("admin"):
            creator, filled = self._home.catalog.kb_origin(kb.id)
            if filled or creator != actor.name:
                raise AccessError(
                    f"{actor.name} ({actor.role}) may not delete {kb.name!r}: an"
                    " editor may delete only a knowledge base they created that never held a"
                    " document, anything more needs the admin role; ask an admin."
                )
        self._home.vectors.delete(kb.dimension, kb=kb.id)
        self._home.vectors.flush(kb.dimension)
        self._home.catalog.delete_kb(kb.id)
        access.audit("kb.delete", kb.name)

    # --- who may see it ---------------------------------------------------------------------

    def members(self, name: str) -> list[str]:
        """The users a knowledge base is restricted to; empty means every user sees it."""
        return self._home.users.members(self._access.kb(name).id)

    def restrict(self, name: str, users: Sequence[str]) -> list[str]:
        """Restrict a knowledge base to the named users (an empty list opens it to all)."""
        access, store = self._access, self._home.users
        access.require("admin", "change who may see a knowledge base")
        kb = access.kb(name)
        names = [check_user_name(u) for u in users if u.strip()]
        unknown = [u for u in names if store.get(u) is None]
        if unknown:
            raise NotFoundError(
                f"There is no user named {', '.join(map(repr, unknown))}; add one with "
                "`zhixing user add NAME --role viewer`."
            )
        store.set_members(kb.id, names)
        access.audit("kb.restrict", kb.name, members=names)
        return store.members(kb.id)

    # --- archives ---------------------------------------------------------------------------

    def export_archive(self, name: str, path: Path) -> BackupSummary:
        """Write a knowledge base to a portable archive (core/backup); return its counts.

        Exporting is an editor's right (docs/architecture.md §10): an archive carries every row
        out of the server's access control. The role is checked before the name, so a viewer
        learns nothing of restricted knowledge bases; `kb` keeps those invisible to non-members.
        """
        from ..backup import export_kb

        self._access.require("build", "export knowledge bases")
        summary = export_kb(self._stores(), self._access.kb(name), path)
        if Path(path).resolve().is_relative_to(self._home.settings.home.resolve()):
            tighten(Path(path))  # an archive in the home is as private as the home
        self._access.audit("kb.export", name, file=str(path))
        return summary

    def import_archive(self, path: Path, *, as_name: str | None = None) -> BackupSummary:
        """Restore an archive as a new knowledge base (re-embedded if the model differs)."""
        from ..backup import import_kb, read_archive

        self._access.require("build", "build or change knowledge bases")
        path = Path(path)
        archive = read_archive(path)
        name = (as_name if as_name is not None else archive.manifest["kb"]["name"]).strip()
        try:
            # A name taken by a knowledge base the user may not see is refused without saying so.
            self._access.check_name_free(name)
        except StoreError as exc:
            raise StoreError(f"{exc} Import under another name with --as NAME.") from exc
        summary = import_kb(self._stores(), archive, name, path)
        self._access.audit("kb.import", summary.name, file=str(path), source=summary.source)
        return summary

    def _stores(self) -> Stores:
        from ..backup import Stores

        home = self._home
        return Stores(
            home.catalog, home.vectors, home.graph, home.embedder, home.settings.embed_batch
        )
