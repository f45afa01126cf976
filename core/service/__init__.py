"""The knowledge service: the one object the CLI and the app talk to, and their only door
into the knowledge.

`KnowledgeService` opens the stores of one Zhixing home (home.py) and offers them through small
services, one per concept: `kbs` (knowledge bases, who may see them, archives), `builds` (adding
and removing documents, background jobs, estimates), `search` (strategies, answers, the
agentic loop), `conversations`, `notebooks`, `graph`, `tasks` (the task agent), `users`,
`tokens` (access tokens for MCP over HTTP) and `admin`. Each speaks in knowledge-base names — everything below speaks in ids — and goes
through one access policy (access.py) for the acting user (`as_user`): every public method
checks what that user may do and see. Pages and app/ import nothing from core but this package,
core.models, core.errors, core.config and core.trace (tests/test_layers.py), so whatever a page
shows has passed those checks. The types a page needs from elsewhere in core are re-exported
here.
"""

from __future__ import annotations

from typing import Unpack

from ..auth import LOCAL, MAX_TOKEN_DAYS, MCP_PATH, MCP_PORT, ROLES, User, is_loopback
from ..build import BuildReport, ProgressEvent
from ..build.background import BuildJobs
from ..build.estimate import BuildEstimate
from ..build.job import JobView, LogLine
from ..choices import CellMode, GraphFormat
from ..config import Settings
from ..embed import Embedder, make_embedder
from ..errors import BuildBusyError
from ..home import owner_only_umask
from ..llm.check import Found
from ..llm.protocol import LLM
from ..logs import debug_log
from ..search import STRATEGIES
from ..task.workspace import ARCHIVE_SUFFIXES
from .access import Access
from .builds import Builds
from .conversations import Conversations
from .graph import Graph
from .home import Home, HomeOptions
from .kbs import KnowledgeBases
from .notebooks import MAX_TOP_K, Notebooks
from .search import Search
from .tasks import Tasks, findings_text
from .tokens import DEFAULT_TOKEN_DAYS, IssuedToken, Tokens
from .users import Admin, Users

__all__ = [
    "ARCHIVE_SUFFIXES",
    "DEFAULT_TOKEN_DAYS",
    "LOCAL",
    "MAX_TOKEN_DAYS",
    "MAX_TOP_K",
    "MCP_PATH",
    "MCP_PORT",
    "ROLES",
    "STRATEGIES",
    "BuildBusyError",
    "BuildEstimate",
    "BuildJobs",
    "BuildReport",
    "CellMode",
    "Embedder",
    "Found",
    "GraphFormat",
    "IssuedToken",
    "JobView",
    "KnowledgeService",
    "LogLine",
    "ProgressEvent",
    "User",
    "debug_log",
    "findings_text",
    "is_loopback",
    "make_embedder",
    "owner_only_umask",
]


class KnowledgeService:
    """The services of one home for one acting user: the local operator, or `as_user(user)`.
    The options (`HomeOptions`: an LLM or embedder to use, the client's tuning, the process's
    registry of background builds) are the home's (home.py)."""

    kbs: KnowledgeBases
    builds: Builds
    search: Search
    conversations: Conversations
    notebooks: Notebooks
    graph: Graph
    tasks: Tasks
    users: Users
    tokens: Tokens
    admin: Admin

    def __init__(self, settings: Settings, **options: Unpack[HomeOptions]) -> None:
        self._serve(Home(settings, **options), LOCAL)

    def _serve(self, home: Home, actor: User) -> None:
        self._home, self.actor = home, actor
        access = Access(home, actor)
        self._access = access
        self.kbs = KnowledgeBases(access)
        self.builds = Builds(access)
        self.search = Search(access)
        self.conversations = Conversations(access)
        self.notebooks = Notebooks(access, self.search)
        self.graph = Graph(access)
        self.tasks = Tasks(access, self.search)
        self.users = Users(access)
        self.tokens = Tokens(access)
        self.admin = Admin(access)

    @property
    def settings(self) -> Settings:
        return self._home.settings

    @property
    def llm(self) -> LLM | None:
        return self._home.llm

    @property
    def embedder(self) -> Embedder:
        return self._home.embedder

    def as_user(self, user: User) -> KnowledgeService:
        """This service acting for `user`: the same stores, that user's rights (a cheap view;
        close only the original)."""
        view = object.__new__(KnowledgeService)
        view._serve(self._home, user)
        return view

    def authorize(self, action: str, name: str | None = None) -> None:
        """Raise AccessError unless the actor may do `action` (read, build, admin) — on the
        knowledge base `name` when one is given. For callers that check before long work."""
        what = {"read": "read", "build": "build or change", "admin": "administer"}[action]
        self.actor.require(action, f"{what} knowledge bases")
        if name is not None:
            self._access.kb(name)

    def close(self) -> None:
        self._home.close()

    def __enter__(self) -> KnowledgeService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
