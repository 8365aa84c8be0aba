"""The store the dream-visibility tests plant (SPEC §6, §11): alice's and bob's private
records, each with an exact duplicate, and one shared record. A dream started by a key
restricted to alice must never see, copy or touch bob's; ``BOB_SECRET`` is a word only
bob's records hold, so any output can be grepped for it."""

from __future__ import annotations

BOB_SECRET = "bob-secret-espresso"


def record(user: str, body: str, scope: str | None = None) -> str:
    """A record file of ``user`` (SPEC §6 header: type, user_id, optional scope)."""
    header = ["---", "type: preference", f"user_id: {user}"]
    if scope is not None:
        header.append(f"scope: {scope}")
    return "\n".join([*header, "---", body])


ALICE_TEA = record("alice", "Alice likes green tea.\n")
BOB_COFFEE = record("bob", f"Bob likes {BOB_SECRET}.\n")
SHARED = record("bob", "The office opens at nine.\n", scope="share")
FILES = {
    "/alice/tea.md": ALICE_TEA,
    "/alice/tea-copy.md": ALICE_TEA,  # alice's planted duplicate
    "/bob/coffee.md": BOB_COFFEE,
    "/bob/coffee-copy.md": BOB_COFFEE,  # bob's planted duplicate
    "/shared/hours.md": SHARED,
}
BOBS = frozenset({"/bob/coffee.md", "/bob/coffee-copy.md"})
