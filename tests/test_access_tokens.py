"""Access tokens through the service, as the app's account page makes and lists them: each user
their own, an admin everyone's, through the one access policy (core/service/access.py). Real
SQLite and Milvus Lite in tmp_path."""

from __future__ import annotations

import pytest

from zhixing.core.errors import AccessError, ConfigError, NotFoundError
from zhixing.core.service import LOCAL, KnowledgeService, User

ALICE, BOB, ADA = User("alice", "viewer"), User("bob", "editor"), User("ada", "admin")


@pytest.fixture
def people(service: KnowledgeService) -> KnowledgeService:
    for user in (ALICE, BOB, ADA):
        service.users.add(user.name, user.role, f"{user.name}-password")
    return service


def test_a_user_makes_a_token_that_signs_in_as_themself_and_lists_only_their_own(people):
    alice, bob = people.as_user(ALICE).tokens, people.as_user(BOB).tokens
    made = alice.create("Claude Code", days=30)
    other = bob.create()
    assert made.token.startswith("zx_") and made.stored.user == "alice"
    assert made.stored.label == "Claude Code"
    assert made.stored.expires_at - made.stored.created_at == pytest.approx(30 * 86400, abs=5)
    assert people.users.token_user(made.token) == ALICE
    assert [t.id for t in alice.all()] == [made.stored.id]
    assert [t.id for t in bob.all()] == [other.stored.id]
    assert made.token not in str(alice.all())  # only its digest is kept
    # Used once over MCP, the list says when.
    assert people.users.token_user(made.token) == ALICE
    assert alice.all()[0].last_used_at is not None and bob.all()[0].last_used_at is None


def test_a_viewer_can_neither_see_nor_revoke_another_users_token(people):
    bobs = people.as_user(BOB).tokens.create("laptop")
    alice = people.as_user(ALICE).tokens
    assert alice.all() == []
    with pytest.raises(NotFoundError) as refused:
        alice.revoke(bobs.stored.id)
    # Another's token and one that does not exist read the same.
    with pytest.raises(NotFoundError) as missing:
        alice.revoke(bobs.stored.id + 100)
    assert str(refused.value) == f"There is no token {bobs.stored.id} that alice may see."
    assert str(missing.value) == f"There is no token {bobs.stored.id + 100} that alice may see."
    assert people.users.token_user(bobs.token) == BOB  # still valid
    assert "token.revoke" not in [e.action for e in people.admin.audit_log()]


def test_a_user_revokes_their_own_token_and_it_signs_in_no_more(people):
    alice = people.as_user(ALICE).tokens
    made = alice.create("old laptop")
    revoked = alice.revoke(made.stored.id)
    assert (revoked.id, revoked.user) == (made.stored.id, "alice")
    assert people.users.token_user(made.token) is None and alice.all() == []
    with pytest.raises(NotFoundError, match=f"no token {made.stored.id} that alice"):
        alice.revoke(made.stored.id)
    log = [(e.user, e.action, e.target) for e in people.admin.audit_log()]
    assert ("alice", "token.create", "alice") in log and ("alice", "token.revoke", "alice") in log


def test_an_admin_sees_and_revokes_everyones_tokens(people):
    alices = people.as_user(ALICE).tokens.create("ide")
    bobs = people.as_user(BOB).tokens.create("ci")
    ada = people.as_user(ADA).tokens
    own = ada.create("mine")
    assert [(t.user, t.label) for t in ada.all()] == [
        ("alice", "ide"),
        ("bob", "ci"),
        ("ada", "mine"),
    ]
    assert ada.revoke(alices.stored.id).user == "alice"
    assert people.users.token_user(alices.token) is None
    assert people.users.token_user(bobs.token) == BOB and people.users.token_user(own.token) == ADA
    assert ("ada", "token.revoke", "alice") in [
        (e.user, e.action, e.target) for e in people.admin.audit_log()
    ]


def test_bad_requests_are_one_sentence_and_make_no_token(people):
    alice = people.as_user(ALICE).tokens
    with pytest.raises(ConfigError, match="A token lasts 1 to 3650 days, not 0."):
        alice.create("x", days=0)
    with pytest.raises(ConfigError, match="one line of at most 64 characters"):
        alice.create("x" * 65)
    # The local operator (localhost without logins) is no stored user to sign in as.
    with pytest.raises(AccessError, match="the local operator is none"):
        people.as_user(LOCAL).tokens.create("local")
    assert people.tokens.all() == []  # the local operator is an admin: sees every token
