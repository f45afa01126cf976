"""Conversations: each user's own threads of questions and tasks (the agents' LangGraph
threads); nobody sees another's, and a turn that searched a knowledge base the user may no
longer see is withheld."""

from __future__ import annotations

from ..models import Conversation, Turn
from .access import Access

__all__ = ["Conversations"]


class Conversations:
    def __init__(self, access: Access) -> None:
        self._access, self._home = access, access.home

    def new(self, title: str = "") -> Conversation:
        """A new conversation of the actor's (its id is the agents' LangGraph thread)."""
        return self._home.runs.new_conversation(self._access.actor.name, title)

    def all(self, limit: int = 30) -> list[Conversation]:
        """The actor's own conversations, the latest first; nobody sees another's."""
        return self._home.runs.conversations(self._access.actor.name, limit)

    def turns(self, conversation: str, limit: int = 50) -> tuple[list[Turn], int]:
        """The turns of one of the actor's conversations, oldest first, and how many are
        withheld because they searched a knowledge base the actor may no longer see."""
        runs = self._home.runs
        thread = runs.conversation(conversation, self._access.actor.name).id
        visible = self._access.visible_names()
        shown: list[Turn] = []
        hidden = 0
        for run in runs.turns(thread, limit):
            if not set(run.kbs) <= visible:
                hidden += 1
                continue
            shown.append(
                Turn(run.id, run.kind, run.question, run.kbs, run.answer, run.trace, run.started_at)
            )
        return shown, hidden
