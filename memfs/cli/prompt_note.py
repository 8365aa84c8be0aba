"""The note that tells an agent where its memory is mounted (SPEC §4, last bullet of Layouts).

A note describes each attached store: its name, mount path, access mode, description
and per-attachment instructions (api-contract §7.1 ``instructions``: "Rendered into the
memory section of the system prompt"). It is appended to the agent's system prompt by
whoever starts the agent; ``memfs prompt`` prints it, and the API can use it for a
session.

Everything here is pure: no I/O, no engine. Callers resolve stores first and pass
:class:`memfs.core.model.SessionResource` values (a session already holds them; for a local
mount, :func:`plan_resources` computes them the way ``memfs mount`` lays stores out).
"""

from __future__ import annotations

from collections.abc import Sequence

from memfs.core.config import DEFAULT_SESSION_MOUNT_ROOT, MAX_CONTENT_BYTES
from memfs.core.model import Access, Layout, MemoryStore, SessionResource
from memfs.core.rules import unique_slugs, validate_instructions

__all__ = [
    "DEFAULT_MOUNT_ROOT",
    "plan_resources",
    "render_prompt",
]

DEFAULT_MOUNT_ROOT = DEFAULT_SESSION_MOUNT_ROOT
"""Where sessions mount stores (api-contract §5.1 mount path rule)."""

_HEAD = (
    "## Memory\n"
    "\n"
    "You have persistent memory, mounted as ordinary files. Use your usual file tools on it "
    "(ls, cat, grep, sed -i, an editor, Python open()). Memory outlives this conversation: "
    "check it before you start a task, and save what a future session should know. "
    "Every saved change is kept as a new version, so nothing you overwrite is lost.\n"
    "\n"
    "Rules of the memory filesystem:\n"
    f"- Files are UTF-8 text of at most {MAX_CONTENT_BYTES:,} bytes each; binary files, "
    "symbolic links and special files are refused.\n"
    "- A change is saved when you close the file; a file renamed over another "
    "(an editor's atomic save) counts as one change.\n"
    "- Files with editor scratch names (*.tmp, *~, .#*, 4913, sedXXXXXX, vim .*.swp) are "
    "not saved to memory; rename them to a real name to keep them.\n"
)
_TAIL = (
    "- A file written by someone else while you were editing it is not overwritten: when "
    "your edits and theirs touch different lines they are merged into one version (two "
    "agents appending to one log keep every line); where they overlap, your version is "
    "saved beside it as NAME.conflict-TIMESTAMP-SESSION.EXT.\n"
)
# SPEC §4 per-store layout: a directory per store; the root itself is read-only.
_PER_STORE_RULES = (
    "- Writing to a read-only store fails with {refusal}; so does creating anything "
    "directly in the mount root.\n"
)
# What a write to something read-only returns (SPEC §4 errors, Sandboxes): memfs answers
# EROFS; under --allow-other the kernel checks the modes first (default_permissions), and
# read-only files show no write bits, so an agent that is not root gets EACCES from the
# kernel before memfs is asked (root passes the mode check and gets EROFS).
_EROFS = '"Read-only file system" (EROFS)'
_EACCES = '"Permission denied" (EACCES; "Read-only file system" (EROFS) when running as root)'

# SPEC §4 flat layout: one merged namespace; new files go to the writable default store.
_FLAT_RULES = (
    "- All stores are merged into one directory tree: a file's path is its memory's path, "
    "and you may create files and directories anywhere in it. New and changed files are "
    "saved in the writable default store.\n"
    "- When several stores hold the same path, you see the default store's file, else the "
    "earliest-attached store's. Changing a file that comes from a read-only store saves "
    "your copy in the default store; deleting or renaming such a file fails with "
    "{refusal}. Deleting your own copy shows the read-only file again.\n"
)
_FLAT_READ_ONLY_RULES = (
    "- All stores are merged into one read-only directory tree: a file's path is its "
    "memory's path; writing anything fails with {refusal}.\n"
)


def _rules(resources: Sequence[SessionResource], flat: bool, modes_checked: bool) -> str:
    """The rules of the filesystem, for the layout the stores are mounted in and what a
    write to something read-only returns there."""
    if not flat:
        rules = _PER_STORE_RULES
    else:
        writable = any(r.access is Access.READ_WRITE for r in resources)
        rules = _FLAT_RULES if writable else _FLAT_READ_ONLY_RULES
    return _HEAD + rules.format(refusal=_EACCES if modes_checked else _EROFS) + _TAIL


def _quote_block(text: str) -> str:
    """Indents a multi-line field under its bullet so it cannot break the list."""
    return "\n".join(("    " + line) if line else "" for line in text.strip().splitlines())


_RECORDS_NOTE = (
    "\n"
    "Some files are long-term memory records: they start with a YAML header between `---` "
    "lines whose `type` is episodic, semantic, procedural, preference or profile, with "
    "optional keys scope (private|share|public), importance and confidence (0 to 1), tags, "
    "source, summary, structured, user_id, agent_id, tenant_id, relations "
    "([{type: related_to|derived_from|contradicts|supersedes, target: /path or mem_ id}]), "
    "allowed_users and allowed_roles.\n"
    "Keep the header valid when you edit a record (a bad value is refused with "
    '"Invalid argument", naming the key); the text below the header is the memory itself. '
    "Records you do not read lose weight over time (decay) and may be forgotten.\n"
)


def render_prompt(
    resources: Sequence[SessionResource],
    *,
    layout: Layout | None = None,
    with_records: bool = False,
    modes_checked: bool = False,
) -> str:
    """Renders the memory section of a system prompt for the given attached stores.

    Args:
        resources: the attached stores in attachment order, each with its name, mount
            path, access mode, description and instructions (the fields of
            api-contract §7.2). Stores sharing one mount path are rendered as one merged
            (flat layout, SPEC §4) directory.
        layout: the layout of the mount (a session's ``layout``), which decides the
            rules stated (SPEC §4: the per-store root refuses new files, a flat one takes
            them). None: flat when every store shares one mount path and there are
            several, else per-store.
        with_records: some store holds long-term memory records: the note explains
            their header in a few lines (SPEC §6).
        modes_checked: the mount lets other uids in (``--allow-other``), so the kernel
            checks modes and an agent that is not root is refused a write to something
            read-only with EACCES, not memfs's EROFS (SPEC §4 Sandboxes).

    Returns:
        Markdown text ending with a newline; empty when ``resources`` is empty.
    """
    if not resources:
        return ""
    if layout is None:
        flat = len(resources) > 1 and len({r.mount_path for r in resources}) == 1
    else:
        flat = Layout(layout) is Layout.FLAT
    lines = [_rules(resources, flat, modes_checked), "Mounted stores:", ""]
    for resource in resources:
        access = "read-write" if resource.access is Access.READ_WRITE else "read-only"
        lines.append(f'- "{resource.name}" at {resource.mount_path}/ ({access})')
        if resource.description.strip():
            lines.append("  Description:")
            lines.append(_quote_block(resource.description))
        if resource.instructions and resource.instructions.strip():
            lines.append("  Instructions:")
            lines.append(_quote_block(resource.instructions))
    lines.extend(_merged_notes(resources))
    if with_records:
        lines.append(_RECORDS_NOTE.rstrip("\n"))
    return "\n".join(lines) + "\n"


def _merged_notes(resources: Sequence[SessionResource]) -> list[str]:
    """Explains the overlay rules for every mount path shared by several stores (flat)."""
    by_path: dict[str, list[SessionResource]] = {}
    for resource in resources:
        by_path.setdefault(resource.mount_path, []).append(resource)
    notes: list[str] = []
    for mount_path, group in by_path.items():
        if len(group) < 2:
            continue
        writable = [r for r in group if r.access is Access.READ_WRITE]
        names = ", ".join(f'"{r.name}"' for r in group)
        notes.append("")
        if writable:
            notes.append(
                f"{mount_path}/ merges {names} into one directory. New and changed files are "
                f'saved in "{writable[0].name}"; changing a file that comes from a read-only '
                "store saves your copy there, and deleting such a file is refused."
            )
        else:
            notes.append(f"{mount_path}/ merges {names} into one read-only directory.")
    return notes


def plan_resources(
    attachments: Sequence[tuple[MemoryStore, Access, str | None]],
    *,
    mount_root: str = DEFAULT_MOUNT_ROOT,
    flat: bool = False,
) -> list[SessionResource]:
    """Computes the mount path of each store the way ``memfs mount`` lays them out.

    Args:
        attachments: ``(store, access, instructions)`` in attachment order.
        mount_root: the mount point, e.g. ``/mnt/memory`` (a trailing ``/`` is dropped).
        flat: True for the flat layout (every store at ``mount_root``); False for the
            per-store layout, ``<mount_root>/<slug>`` with collision suffixes (SPEC §4).

    Returns:
        One :class:`SessionResource` per attachment, in the same order, snapshotting
        the store's name and description. In the flat layout only the first
        read-write store stays read-write (the writable default, SPEC §4); the others
        are read-only. Archived stores are always read-only (SPEC §2 archive).

    Raises:
        InvalidInput: instructions longer than 4,096 characters (SPEC §1 limits).
    """
    root = mount_root.rstrip("/") or "/"
    slugs = unique_slugs([(store.id, store.name) for store, _, _ in attachments])
    resources: list[SessionResource] = []
    default_taken = False
    for store, access, instructions in attachments:
        if instructions is not None:
            validate_instructions(instructions)
        if store.archived:
            access = Access.READ_ONLY  # SPEC §2 archive: mounts of it turn read-only
        if flat:
            mount_path = root
            if access is Access.READ_WRITE and not default_taken:
                default_taken = True
            else:
                access = Access.READ_ONLY
        else:
            mount_path = f"{root.rstrip('/')}/{slugs[store.id]}"
        resources.append(
            SessionResource(
                memory_store_id=store.id,
                access=access,
                instructions=instructions,
                name=store.name,
                description=store.description,
                mount_path=mount_path,
            )
        )
    return resources
