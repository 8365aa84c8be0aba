"""The visibility rule of SPEC §6 as a table (memfs/visibility.py, pure): who sees a
record, who may write one, and which principal a caller may hand a new session."""

from __future__ import annotations

import pytest

from memfs.core.errors import InvalidInput, PermissionDenied
from memfs.core.visibility import (
    RecordScope,
    RecordVisibility,
    UserPrincipal,
    Viewer,
    check_writable,
    handed_principal,
    is_visible,
    make_principal,
)

ALICE = Viewer(user_id="alice")
BOB = Viewer(user_id="bob")
CAROL_SUPPORT = Viewer(user_id="carol", roles=frozenset({"support"}))
NOBODY = Viewer()  # a caller without a principal

PRIVATE_ALICE = RecordVisibility(user_id="alice")
PRIVATE_ALICE_FOR_BOB = RecordVisibility(user_id="alice", allowed_users=("bob",))
PRIVATE_ALICE_FOR_SUPPORT = RecordVisibility(user_id="alice", allowed_roles=("support",))
PRIVATE_OWNERLESS = RecordVisibility()
SHARED_ALICE = RecordVisibility(scope=RecordScope.SHARE, user_id="alice")
PUBLIC_ALICE = RecordVisibility(scope=RecordScope.PUBLIC, user_id="alice")

# (viewer, record, visible): None as viewer is an unrestricted caller (admin, local);
# None as record is a memory that is not a record.
TABLE = [
    (None, PRIVATE_ALICE, True),
    (None, PRIVATE_OWNERLESS, True),
    (ALICE, PRIVATE_ALICE, True),
    (BOB, PRIVATE_ALICE, False),
    (NOBODY, PRIVATE_ALICE, False),
    (CAROL_SUPPORT, PRIVATE_ALICE, False),
    (BOB, PRIVATE_ALICE_FOR_BOB, True),
    (CAROL_SUPPORT, PRIVATE_ALICE_FOR_BOB, False),
    (CAROL_SUPPORT, PRIVATE_ALICE_FOR_SUPPORT, True),
    (BOB, PRIVATE_ALICE_FOR_SUPPORT, False),
    (ALICE, PRIVATE_OWNERLESS, False),
    (NOBODY, PRIVATE_OWNERLESS, False),
    (BOB, SHARED_ALICE, True),
    (NOBODY, SHARED_ALICE, True),
    (BOB, PUBLIC_ALICE, True),
    (NOBODY, PUBLIC_ALICE, True),
    (NOBODY, None, True),
    (BOB, None, True),
]


@pytest.mark.parametrize(("viewer", "record", "visible"), TABLE)
def test_the_visibility_table(
    viewer: Viewer | None, record: RecordVisibility | None, visible: bool
) -> None:
    assert is_visible(viewer, record) is visible


def test_a_role_held_by_a_principal_without_the_user_id_still_counts() -> None:
    viewer = Viewer.of(UserPrincipal(user_id="dave", roles=("auditor", "support")))
    assert is_visible(viewer, PRIVATE_ALICE_FOR_SUPPORT)


def test_a_write_its_writer_could_not_see_is_refused_naming_the_fix() -> None:
    check_writable(ALICE, PRIVATE_ALICE, "/prefs.md")
    check_writable(NOBODY, SHARED_ALICE, "/prefs.md")
    check_writable(None, PRIVATE_OWNERLESS, "/prefs.md")
    with pytest.raises(PermissionDenied) as refused:
        check_writable(BOB, PRIVATE_ALICE, "/prefs.md")
    assert refused.value.code == "record_not_visible"
    assert "/prefs.md" in str(refused.value)
    assert "user_id: bob" in str(refused.value)
    with pytest.raises(PermissionDenied, match="without a principal"):
        check_writable(NOBODY, PRIVATE_OWNERLESS, "/x.md")


def test_principals_are_validated_and_roles_kept_sorted_and_distinct() -> None:
    assert make_principal(None) is None
    principal = make_principal("alice", ["b", "a", "b"])
    assert principal == UserPrincipal(user_id="alice", roles=("a", "b"))
    assert principal is not None
    assert principal.to_wire() == {"user_id": "alice", "roles": ["a", "b"]}
    with pytest.raises(InvalidInput, match="roles need a user_id"):
        make_principal(None, ["support"])
    with pytest.raises(InvalidInput, match="user_id must be a string of 1 to 128"):
        make_principal("")
    with pytest.raises(InvalidInput, match="user_id must be a string of 1 to 128"):
        make_principal("u" * 129)
    with pytest.raises(InvalidInput, match="control characters"):
        make_principal("ali\nce")
    with pytest.raises(InvalidInput, match="a role must not contain control"):
        make_principal("alice", ["ok", "bad\x7f"])
    with pytest.raises(InvalidInput, match="at most 32 roles"):
        make_principal("alice", [f"r{i}" for i in range(33)])


ALICE_P = UserPrincipal(user_id="alice", roles=("a", "b"))


def test_a_caller_hands_a_session_only_the_principal_it_holds() -> None:
    bob = UserPrincipal(user_id="bob")
    # Admin: any principal, or none.
    assert handed_principal(None, admin=True, requested=bob) == bob
    assert handed_principal(ALICE_P, admin=True, requested=None) is None
    # A key with a principal: its own by default, or the same user with fewer roles.
    assert handed_principal(ALICE_P, admin=False, requested=None) == ALICE_P
    fewer = UserPrincipal(user_id="alice", roles=("a",))
    assert handed_principal(ALICE_P, admin=False, requested=fewer) == fewer
    for requested in (bob, UserPrincipal(user_id="alice", roles=("a", "c"))):
        with pytest.raises(PermissionDenied) as refused:
            handed_principal(ALICE_P, admin=False, requested=requested)
        assert refused.value.code == "principal_not_allowed"
    # A key without a principal hands none.
    assert handed_principal(None, admin=False, requested=None) is None
    with pytest.raises(PermissionDenied, match="has no principal"):
        handed_principal(None, admin=False, requested=bob)
