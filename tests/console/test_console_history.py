"""The console's history and dream pages over HTTP (SPEC §10, §11, §12): snapshots,
as-of browsing, store diff, restore with its plan, fork and merge, a dream started,
reviewed and applied; CSRF, read-only 403 and escaping on every new form."""

from __future__ import annotations

from http import HTTPStatus

from _support.console import ConsoleClient, csrf_of
from _support.polling import wait_until
from starlette.testclient import TestClient

from memfs.api.app import create_app
from memfs.console import create_console
from memfs.core.dreams import DreamStatus
from memfs.core.model import Actor, ActorType, Scope
from memfs.store import Engine

HOSTILE_NAME = '<b>x</b>"><script>alert(1)</script>'


def _store(engine: Engine, name: str = "notes") -> tuple[str, str]:
    store = engine.stores.create(name)
    writer = engine.for_caller(actor=Actor.api_key("apikey_seed"))
    memory = writer.memories.create(store.id, "/a.md", "one\ntwo\n")
    writer.memories.create(store.id, "/dir/b.md", "bee\n")
    return store.id, memory.id


def test_snapshot_as_of_diff_and_restore(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    store_id, memory_id = _store(engine)
    console.sign_in(admin_secret)
    base = f"/console/stores/{store_id}"
    taken = console.post_form(base + "/history", base + "/snapshots", name="before",
                              description="before the bad session")
    assert taken.status_code == HTTPStatus.SEE_OTHER
    bad = engine.for_caller(actor=Actor.api_key("apikey_bad"))
    bad.memories.update(store_id, memory_id, content="one\nBROKEN\n")
    bad.memories.create(store_id, "/junk.md", "junk\n")

    history = console.http.get(base + "/history").text
    assert "before the bad session" in history
    as_of = console.http.get(base + "/as-of?at=before")
    assert as_of.status_code == HTTPStatus.OK
    assert "Read only" in as_of.text
    assert "junk.md" not in as_of.text
    assert "a.md" in as_of.text
    then = console.http.get(f"{base}/as-of/memories/{memory_id}?at=before").text
    assert "two" in then
    assert "BROKEN" not in then
    assert "<textarea" not in then

    for layout in ("inline", "side"):
        diff = console.http.get(f"{base}/diff?from=before&to=now&layout={layout}")
        assert diff.status_code == HTTPStatus.OK
        assert "BROKEN" in diff.text
        assert "junk.md" in diff.text
        assert "1 added, 1 modified" in diff.text

    plan = console.http.get(base + "/restore?to=before")
    assert plan.status_code == HTTPStatus.OK
    assert "nothing has changed yet" in plan.text
    assert engine.memories.get(store_id, memory_id).content == "one\nBROKEN\n"  # a dry run
    done = console.post_form(base + "/restore?to=before", base + "/restore", to="before")
    assert done.status_code == HTTPStatus.OK, done.text[:500]
    assert "auto-restore-" in done.text
    assert engine.memories.get(store_id, memory_id).content == "one\ntwo\n"
    assert "/junk.md" not in {m.path for m in engine.memories.all(store_id)}
    head = engine.versions.list(store_id, memory_id=memory_id).items[0]
    assert head.created_by is not None
    assert head.created_by.type is ActorType.API
    assert head.created_by.id != "apikey_bad"  # the signed-in key, not the bad one

    snapshot = engine.snapshots.get_by_name(store_id, "before")
    form = f"{base}/snapshots/{snapshot.id}/delete"
    wrong = console.post_form(form, form, confirm_name="nope")
    assert wrong.status_code == HTTPStatus.BAD_REQUEST
    assert console.post_form(form, form, confirm_name="before").status_code == (
        HTTPStatus.SEE_OTHER
    )
    assert "before the bad session" not in console.http.get(base + "/history").text


def test_fork_change_and_merge_with_its_plan(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    store_id, memory_id = _store(engine)
    console.sign_in(admin_secret)
    base = f"/console/stores/{store_id}"
    forked = console.post_form(base + "/history", base + "/fork", name="trial", at="")
    assert forked.status_code == HTTPStatus.SEE_OTHER
    fork_id = forked.headers["location"].split("/")[3]
    fork = engine.stores.get(fork_id)
    assert fork.forked_from == store_id
    assert "A fork of" in console.http.get(f"/console/stores/{fork_id}").text
    fork_memory = next(m for m in engine.memories.all(fork_id) if m.path == "/a.md")
    engine.memories.update(fork_id, fork_memory.id, content="one\nfork\n")
    plan = console.http.get(f"/console/stores/{fork_id}/merge")
    assert plan.status_code == HTTPStatus.OK
    assert "update" in plan.text
    assert "/a.md" in plan.text
    assert engine.memories.get(store_id, memory_id).content == "one\ntwo\n"
    merged = console.post_form(f"/console/stores/{fork_id}/merge",
                               f"/console/stores/{fork_id}/merge")
    assert merged.status_code == HTTPStatus.OK, merged.text[:500]
    assert "auto-merge-" in merged.text
    assert engine.memories.get(store_id, memory_id).content == "one\nfork\n"


def test_a_consolidating_dream_is_followed_reviewed_and_applied(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    store = engine.stores.create("dreamy")
    for path in ("/notes/coffee.md", "/inbox/copy.md"):
        engine.memories.create(store.id, path, "Alice takes her coffee black.\n")
    console.sign_in(admin_secret)
    base = f"/console/stores/{store.id}"
    started = console.post_form(base + "/dreams", base + "/dreams",
                                model="memfs-consolidate", output_behavior="create_new")
    assert started.status_code == HTTPStatus.SEE_OTHER, started.text[:500]
    dream_url = started.headers["location"]
    dream_id = dream_url.rsplit("/", 1)[1]
    wait_until(lambda: engine.dreams.get(dream_id).status.final, "the dream ends", 30)
    assert engine.dreams.get(dream_id).status is DreamStatus.COMPLETED
    review = console.http.get(dream_url).text
    assert 'http-equiv="refresh"' not in review
    assert "1 memory differs" in review
    assert '<span class="status removed">' in review
    assert dream_id in console.http.get(base + "/dreams").text
    plan = console.http.get(dream_url + "/apply")
    assert plan.status_code == HTTPStatus.OK
    assert "delete" in plan.text
    applied = console.post_form(dream_url + "/apply", dream_url + "/apply")
    assert applied.status_code == HTTPStatus.OK, applied.text[:500]
    assert len(engine.memories.all(store.id)) == 1
    discarded = console.post_form(dream_url, dream_url + "/discard")
    assert discarded.status_code == HTTPStatus.SEE_OTHER
    assert engine.dreams.get(dream_id).archived_at is not None


def test_a_pending_dream_s_page_reloads_itself_until_canceled(
    engine: Engine, admin_secret: str
) -> None:
    store_id, _ = _store(engine)
    app = create_app(engine, mounts={"/console": create_console}, run_dreams=False)
    with TestClient(app) as client:
        console = ConsoleClient(client)
        console.sign_in(admin_secret)
        base = f"/console/stores/{store_id}"
        started = console.post_form(base + "/dreams", base + "/dreams", model="memfs-consolidate",
                                    instructions="<script>x()</script>")
        dream_url = started.headers["location"]
        following = console.http.get(dream_url).text
        assert '<meta http-equiv="refresh" content="2">' in following
        assert "pending" in following
        assert "<script>x()" not in following
        canceled = console.post_form(dream_url, dream_url + "/cancel")
        assert canceled.status_code == HTTPStatus.SEE_OTHER
        ended = console.http.get(dream_url).text
        assert "canceled" in ended
        assert 'http-equiv="refresh"' not in ended
        assert engine.dreams.get(dream_url.rsplit("/", 1)[1]).status is DreamStatus.CANCELED


def test_new_forms_need_the_csrf_token_and_write_scopes(
    engine: Engine, console: ConsoleClient
) -> None:
    store_id, memory_id = _store(engine)
    engine.snapshots.create(store_id, "kept")
    snapshot = engine.snapshots.get_by_name(store_id, "kept")
    fork = engine.history.fork(store_id, name="side")
    _, reader = engine.api_keys.create("reader", [Scope.READ])
    console.sign_in(reader)
    base = f"/console/stores/{store_id}"
    history = console.http.get(base + "/history").text
    assert "Take the snapshot" not in history
    assert "delete…" not in history
    assert "Fork</button>" not in history
    plan = console.http.get(base + "/restore?to=kept").text
    assert "Restore the store to" not in plan  # the plan, no confirm button
    assert "Merge into" not in console.http.get(f"/console/stores/{fork.id}/merge").text
    assert "Start the dream" not in console.http.get(base + "/dreams").text
    token = csrf_of(history)
    posts = (
        (base + "/snapshots", {"name": "forged"}),
        (f"{base}/snapshots/{snapshot.id}/delete", {"confirm_name": "kept"}),
        (base + "/restore", {"to": "kept"}),
        (base + "/fork", {"name": "forged"}),
        (f"/console/stores/{fork.id}/merge", {}),
        (base + "/dreams", {"model": "memfs-consolidate"}),
    )
    for action, fields in posts:
        response = console.http.post(action, data={"csrf_token": token, **fields},
                                     follow_redirects=False)
        assert response.status_code == HTTPStatus.FORBIDDEN, action
        missing = console.http.post(action, data=fields, follow_redirects=False)
        assert missing.status_code == HTTPStatus.FORBIDDEN, action
    assert [s.name for s in engine.snapshots.list(store_id).items] == ["kept"]
    assert len(engine.stores.list().items) == 2
    assert engine.dreams.list().items == []


def test_hostile_store_snapshot_and_path_names_render_inert(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    store = engine.stores.create(HOSTILE_NAME)
    memory = engine.memories.create(store.id, "/x/<script>alert(1)<", '<img src=x onerror=a()>')
    engine.snapshots.create(store.id, "<svg onload=a()>", description='"><script>x()</script>')
    engine.memories.update(store.id, memory.id, content="<script>later()</script>")
    console.sign_in(admin_secret)
    base = f"/console/stores/{store.id}"
    for url in (
        base + "/history",
        base + "/as-of?at=%3Csvg%20onload%3Da()%3E&prefix=/x/",
        f"{base}/as-of/memories/{memory.id}?at=%3Csvg%20onload%3Da()%3E",
        base + "/diff?from=%3Csvg%20onload%3Da()%3E&to=now",
        base + "/diff?from=%3Csvg%20onload%3Da()%3E&to=now&layout=side",
        base + "/restore?to=%3Csvg%20onload%3Da()%3E",
        base + "/dreams",
    ):
        response = console.http.get(url)
        assert response.status_code == HTTPStatus.OK, (url, response.text[:300])
        assert "<script" not in response.text, url
        assert "<img" not in response.text, url
        assert "<svg" not in response.text, url
        assert "<b>x" not in response.text, url
