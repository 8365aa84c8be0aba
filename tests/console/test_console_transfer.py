"""Import and export of a store in the console (SPEC §12): the JSON Lines and archives
``memfs export`` and ``memfs import`` write and read, round-tripped through the browser's
forms; uploads need the CSRF token and ``memory:write``, are size-limited, and every
refusal is named."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from http import HTTPStatus

import pytest
from _support.console import ConsoleClient, csrf_of

from memfs.console import view
from memfs.core.model import ActorType, Scope
from memfs.store import Engine


def _filled(engine: Engine) -> str:
    store = engine.stores.create("source")
    engine.memories.create(store.id, "/notes/a.md", "alpha\n", metadata={"k": "v"})
    engine.memories.create(store.id, "/notes/deep/b.md", "beta ünïcode\n")
    engine.memories.create(store.id, "/top.md", "top\n")
    return store.id


def _upload(console: ConsoleClient, store_id: str, name: str, data: bytes,
            prefix: str = "/") -> object:
    base = f"/console/stores/{store_id}"
    token = csrf_of(console.http.get(base + "/transfer").text)
    return console.http.post(base + "/import", data={"csrf_token": token, "prefix": prefix},
                             files={"file": (name, data)}, follow_redirects=False)


@pytest.mark.parametrize("kind", ["jsonl", "zip", "tar.gz"])
def test_export_then_import_round_trips(
    engine: Engine, console: ConsoleClient, admin_secret: str, kind: str
) -> None:
    source = _filled(engine)
    target = engine.stores.create("target").id
    console.sign_in(admin_secret)
    exported = console.http.get(f"/console/stores/{source}/export?format={kind}")
    assert exported.status_code == HTTPStatus.OK
    assert f'filename="source.{kind}"' in exported.headers["content-disposition"]
    if kind == "jsonl":
        lines = [json.loads(line) for line in exported.text.splitlines()]
        assert [line["path"] for line in lines] == ["/notes/a.md", "/notes/deep/b.md", "/top.md"]
    elif kind == "zip":
        names = zipfile.ZipFile(io.BytesIO(exported.content)).namelist()
        assert names == ["notes/a.md", "notes/deep/b.md", "top.md"]
    else:
        with tarfile.open(fileobj=io.BytesIO(exported.content), mode="r:gz") as tar:
            assert tar.getnames() == ["notes/a.md", "notes/deep/b.md", "top.md"]
    imported = _upload(console, target, f"source.{kind}", exported.content, prefix="/copy/")
    assert imported.status_code == HTTPStatus.OK, imported.text[:500]  # type: ignore[attr-defined]
    assert "3 created" in imported.text  # type: ignore[attr-defined]
    copied = {m.path: engine.memories.get(target, m.id) for m in engine.memories.all(target)}
    assert {p: m.content for p, m in copied.items()} == {
        "/copy/notes/a.md": "alpha\n", "/copy/notes/deep/b.md": "beta ünïcode\n",
        "/copy/top.md": "top\n",
    }
    if kind == "jsonl":
        assert copied["/copy/notes/a.md"].metadata == {"k": "v"}
    version = engine.versions.list(target, memory_id=copied["/copy/top.md"].id).items[0]
    assert version.created_by is not None
    assert version.created_by.type is ActorType.API
    again = _upload(console, target, f"source.{kind}", exported.content, prefix="/copy/")
    assert "3 unchanged" in again.text  # type: ignore[attr-defined]


def test_an_export_of_a_directory_holds_only_it(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    source = _filled(engine)
    console.sign_in(admin_secret)
    exported = console.http.get(f"/console/stores/{source}/export?format=zip&prefix=/notes/")
    names = zipfile.ZipFile(io.BytesIO(exported.content)).namelist()
    assert names == ["a.md", "deep/b.md"]


def test_refused_entries_are_named_and_escaped(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    target = engine.stores.create("target").id
    console.sign_in(admin_secret)
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        archive.writestr("ok.md", "fine\n")
        archive.writestr("binary.bin", b"\x00\xff\xfe")
        archive.writestr(".hidden", "h")
        archive.writestr("big.md", "x" * 200_000)
        archive.writestr("../escape.md", "out")
        archive.writestr("<script>alert(1)</script>.md~", "scratch")
    response = _upload(console, target, "mixed.zip", packed.getvalue())
    html = response.text  # type: ignore[attr-defined]
    assert response.status_code == HTTPStatus.OK  # type: ignore[attr-defined]
    assert "1 created, 5 refused" in html
    for code in ("invalid_content", "hidden", "content_too_large", "invalid_path",
                 "scratch_name"):
        assert f"<code>{code}</code>" in html
    assert "<script>" not in html
    assert [m.path for m in engine.memories.all(target)] == ["/ok.md"]


def test_upload_errors_are_named(
    engine: Engine, console: ConsoleClient, admin_secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = engine.stores.create("target").id
    console.sign_in(admin_secret)
    binary = _upload(console, target, "photo.png", b"\x89PNG\r\n\x1a\n\x00\xff")
    assert binary.status_code == HTTPStatus.BAD_REQUEST  # type: ignore[attr-defined]
    assert "unknown_archive" in binary.text  # type: ignore[attr-defined]
    broken = _upload(console, target, "broken.zip", b"PK\x03\x04broken")
    assert broken.status_code == HTTPStatus.BAD_REQUEST  # type: ignore[attr-defined]
    empty = _upload(console, target, "empty.jsonl", b"")
    assert "no_file" in empty.text  # type: ignore[attr-defined]
    monkeypatch.setattr(view, "MAX_UPLOAD_BYTES", 1000)
    large = _upload(console, target, "large.jsonl", b'{"path": "/a", "content": "x"}\n' * 100)
    assert large.status_code == HTTPStatus.REQUEST_ENTITY_TOO_LARGE  # type: ignore[attr-defined]
    assert "upload_too_large" in large.text  # type: ignore[attr-defined]
    assert engine.memories.all(target) == []


def test_an_upload_needs_the_csrf_token_and_write(
    engine: Engine, console: ConsoleClient
) -> None:
    target = engine.stores.create("target").id
    line = b'{"path": "/forged.md", "content": "forged"}\n'
    _, reader = engine.api_keys.create("reader", [Scope.READ])
    console.sign_in(reader)
    base = f"/console/stores/{target}"
    page = console.http.get(base + "/transfer").text
    assert 'type="file"' not in page
    assert "Download" in page
    no_token = console.http.post(base + "/import", files={"file": ("a.jsonl", line)})
    assert no_token.status_code == HTTPStatus.FORBIDDEN
    read_only = console.http.post(base + "/import", data={"csrf_token": csrf_of(page)},
                                  files={"file": ("a.jsonl", line)})
    assert read_only.status_code == HTTPStatus.FORBIDDEN
    assert engine.memories.all(target) == []
