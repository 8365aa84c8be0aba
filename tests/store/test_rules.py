"""SPEC §1 validation rules, the slug rule and scratch names (memfs/rules.py), branch by branch."""

from __future__ import annotations

import re

import pytest

from memfs.core import rules
from memfs.core.errors import (
    ContentTooLarge,
    InvalidContent,
    InvalidInput,
    InvalidMetadata,
    InvalidPath,
    InvalidStoreField,
    PathTooLong,
)

# ------------------------------------------------------------------ paths


@pytest.mark.parametrize(
    "path",
    [
        "/a",
        "/projects/foo/notes.md",
        "/" + "/".join(["s"] * 20),  # 20 segments
        "/" + "x" * 255,  # a 255-byte segment (NAME_MAX)
        "/" + "/".join(["x" * 200] * 5) + "/" + "y" * 18,  # exactly 1,024 bytes
        "/caf\u00e9",  # NFC é
        "/a b/c.d",  # inner whitespace
        "/CaseSensitive",
        "/\u4e2d\u6587/\U0001f600",  # non-Latin, astral
        "/.hidden",
        "/...",
    ],
)
def test_valid_paths_come_back_unchanged(path: str) -> None:
    assert len(path.encode()) <= 1024
    assert rules.validate_path(path) is path


def test_the_1024_byte_example_is_exactly_at_the_limit() -> None:
    path = "/" + "/".join(["x" * 200] * 5) + "/" + "y" * 18
    assert len(path.encode()) == 1024


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("a/b", "path 'a/b' must start with '/'"),
        ("", "path '' must start with '/'"),
        ("/a/", "path '/a/' must not end with '/'"),
        ("/", "path '/' must not end with '/'"),
        ("//a", "invalid path: empty segment"),
        ("/a//b", "invalid path: empty segment"),
        ("/a/./b", "invalid path: segment '.' is not allowed"),
        ("/a/..", "invalid path: segment '..' is not allowed"),
        ("/ a", "invalid path: segment ' a' has leading or trailing whitespace"),
        ("/a /b", "invalid path: segment 'a ' has leading or trailing whitespace"),
        ("/a\u00a0", "invalid path: segment 'a\\xa0' has leading or trailing whitespace"),
        ("/\ta", "invalid path: segment '\\ta' has leading or trailing whitespace"),
        ("/a\\b", "invalid path: segment 'a\\\\b' contains a backslash"),
        ("/a\x00b", "invalid path: segment 'a\\x00b' contains the forbidden character U+0000"),
        ("/a\x1fb", "invalid path: segment 'a\\x1fb' contains the forbidden character U+001F"),
        ("/a\x7fb", "invalid path: segment 'a\\x7fb' contains the forbidden character U+007F"),
        ("/a\x85b", "invalid path: segment 'a\\x85b' contains the forbidden character U+0085"),
        ("/a\u200bb", "invalid path: segment 'a\\u200bb' contains the forbidden character U+200B"),
        ("/a\ufeffb", "invalid path: segment 'a\\ufeffb' contains the forbidden character U+FEFF"),
        ("/a\u00adb", "invalid path: segment 'a\\xadb' contains the forbidden character U+00AD"),
        ("/a\u2028b", "invalid path: segment 'a\\u2028b' contains the forbidden character U+2028"),
        ("/a\u2029b", "invalid path: segment 'a\\u2029b' contains the forbidden character U+2029"),
        ("/e\u0301", "invalid path: segment 'e\u0301' is not in Unicode NFC"),
        ("/a\ud800", "path '/a\\ud800' is not valid UTF-8"),
    ],
)
def test_invalid_paths_name_the_broken_rule(path: str, message: str) -> None:
    with pytest.raises(InvalidPath) as info:
        rules.validate_path(path)
    assert type(info.value) is InvalidPath
    assert str(info.value) == message


def test_past_20_segments_a_path_is_too_long_and_past_19_a_directory() -> None:
    """SPEC §1: one rule for a too-long path (ENAMETOOLONG through a mount), and a
    directory only where a file could still go (one more segment, two more bytes)."""
    twenty = "/" + "/".join(["s"] * 20)
    assert rules.validate_path(twenty) is twenty
    with pytest.raises(PathTooLong, match="^path has 21 segments; the limit is 20$"):
        rules.validate_path(twenty + "/s")
    nineteen = "/" + "/".join(["d"] * 19)
    assert rules.validate_directory_path(nineteen) is nineteen
    with pytest.raises(
        PathTooLong,
        match="^directory path has 20 segments; a file in it would have 21 and the limit is 20$",
    ):
        rules.validate_directory_path(nineteen + "/d")
    widest = "/" + "/".join(["x" * 200] * 5) + "/" + "y" * 16  # 1,022 bytes
    assert rules.validate_directory_path(widest) is widest
    with pytest.raises(PathTooLong, match="a file in it would be over the limit of 1024"):
        rules.validate_directory_path(widest + "y")
    with pytest.raises(PathTooLong, match="^path has 21 segments"):
        rules.validate_directory_path(twenty + "/s")


def test_non_string_path_is_refused() -> None:
    with pytest.raises(InvalidPath, match="^path must be a string$"):
        rules.validate_path(b"/a")


def test_path_over_1024_bytes_is_path_too_long() -> None:
    path = "/" + "/".join(["x" * 200] * 5) + "/" + "y" * 19
    assert len(path.encode()) == 1025
    with pytest.raises(PathTooLong, match="^path is 1025 bytes; the limit is 1024$"):
        rules.validate_path(path)


def test_bytes_not_characters_count_for_the_path_limit() -> None:
    # 342 three-byte characters = 1,026 bytes in 4 segments, far under 1,024 characters.
    path = "/" + "/".join(["\u4e2d" * 85] * 4) + "/" + "\u4e2d" * 2
    assert len(path) < 1024 < len(path.encode())
    with pytest.raises(PathTooLong):
        rules.validate_path(path)


def test_segment_over_255_bytes_is_path_too_long() -> None:
    with pytest.raises(PathTooLong, match="^path segment is longer than 255 bytes$"):
        rules.validate_path("/" + "x" * 256)
    # 128 two-byte characters: 128 characters but 256 bytes.
    with pytest.raises(PathTooLong):
        rules.validate_path("/dir/" + "\u00e9" * 128)
    assert rules.validate_path("/dir/" + "\u00e9" * 127) == "/dir/" + "\u00e9" * 127


def test_validate_segment_checks_one_name() -> None:
    assert rules.validate_segment("notes.md") == "notes.md"
    with pytest.raises(InvalidPath, match="contains '/'"):
        rules.validate_segment("a/b")
    with pytest.raises(PathTooLong):
        rules.validate_segment("x" * 256)
    with pytest.raises(InvalidPath, match="empty segment"):
        rules.validate_segment("")
    with pytest.raises(InvalidPath, match="not in Unicode NFC"):
        rules.validate_segment("e\u0301")


def test_validate_segment_refuses_a_lone_surrogate() -> None:
    with pytest.raises(InvalidPath):
        rules.validate_segment("a\udcff")


@pytest.mark.parametrize("prefix", ["/", "/notes/", "/a/b/"])
def test_valid_path_prefixes(prefix: str) -> None:
    assert rules.validate_path_prefix(prefix) == prefix


@pytest.mark.parametrize("prefix", ["", "notes/", "/notes", "//", "/a//", "/./", "/ a/", 3])
def test_invalid_path_prefixes(prefix: object) -> None:
    with pytest.raises(InvalidPath):
        rules.validate_path_prefix(prefix)


# ---------------------------------------------------------------- content


def test_content_at_the_limit_is_accepted() -> None:
    text = "x" * 102_400
    assert rules.validate_content(text) is text
    assert rules.validate_content_bytes(text.encode()) == text


def test_content_over_the_limit_is_too_large() -> None:
    with pytest.raises(
        ContentTooLarge, match="^content is 102401 bytes; the limit is 102400 bytes$"
    ):
        rules.validate_content("x" * 102_401)
    with pytest.raises(ContentTooLarge):
        rules.validate_content_bytes(b"x" * 102_401)
    # Bytes, not characters: 51,201 two-byte characters.
    with pytest.raises(ContentTooLarge, match="102402 bytes"):
        rules.validate_content("\u00e9" * 51_201)


def test_bytes_over_the_limit_are_refused_as_not_text_first() -> None:
    """SPEC §4 order of refusals: not-text (EILSEQ) before too large (EFBIG), judged on
    the first 102,400 bytes only (nothing more is decoded), where a character cut at
    the end is no fault: import reads a file up to the limit and one byte more."""
    with pytest.raises(InvalidContent, match=r"byte offset 3\)$"):
        rules.validate_content_bytes(b"abc\xff" + b"x" * 102_400)
    with pytest.raises(InvalidContent, match="U\\+0001"):
        rules.validate_content_bytes(b"a\x01" + b"x" * 102_400)
    cut = ("\u00e9" * 60_000).encode()[:102_401]  # ends inside a two-byte character
    with pytest.raises(ContentTooLarge, match="^content is 102401 bytes;"):
        rules.validate_content_bytes(cut)
    with pytest.raises(ContentTooLarge):  # a fault past the prefix is not looked for
        rules.validate_content_bytes(b"x" * 102_401 + b"\xff")


@pytest.mark.parametrize("text", ["", "a\tb\nc\r\nd", "caf\u00e9 \U0001f600", "\x85\u200b"])
def test_allowed_content(text: str) -> None:
    assert rules.validate_content(text) == text
    assert rules.validate_content_bytes(text.encode()) == text


@pytest.mark.parametrize(
    ("text", "code_point", "offset"),
    [
        ("a\x00", "U+0000", 1),
        ("\x07", "U+0007", 0),
        ("ab\x7f", "U+007F", 2),
        ("\x1b[0m", "U+001B", 0),
        ("\x0b", "U+000B", 0),
        ("\x0c", "U+000C", 0),
    ],
)
def test_forbidden_control_characters(text: str, code_point: str, offset: int) -> None:
    expected = (
        f"content contains the control character {code_point} at character offset {offset}; "
        "only \\n, \\r and \\t are allowed"
    )
    for check in (rules.validate_content, lambda t: rules.validate_content_bytes(t.encode())):
        with pytest.raises(InvalidContent) as info:
            check(text)
        assert type(info.value) is InvalidContent
        assert str(info.value) == expected


def test_lone_surrogate_is_invalid_content() -> None:
    with pytest.raises(InvalidContent, match=r"^content is not valid Unicode \(lone surrogate\)$"):
        rules.validate_content("a\ud800b")


@pytest.mark.parametrize(
    ("data", "offset"),
    [(b"ab\xff", 2), (b"\xc0\x80", 0), (b"\xed\xa0\x80", 0), (b"ok\xe4\xb8", 2)],
)
def test_bytes_that_are_not_utf8(data: bytes, offset: int) -> None:
    with pytest.raises(InvalidContent) as info:
        rules.validate_content_bytes(data)
    assert type(info.value) is InvalidContent
    assert str(info.value) == f"content is not valid UTF-8 text (byte offset {offset})"


def test_non_string_content() -> None:
    with pytest.raises(InvalidContent, match="^content must be a string$"):
        rules.validate_content(None)


# --------------------------------------------------------------- metadata


def test_metadata_at_the_limits_is_accepted() -> None:
    metadata = {f"{i:02d}" + "k" * 62: "v" * 512 for i in range(16)}
    assert rules.validate_metadata(metadata) == metadata
    assert rules.validate_metadata({}) == {}


@pytest.mark.parametrize(
    ("metadata", "problems"),
    [
        ({f"k{i}": "v" for i in range(17)}, ["17 keys; at most 16 are allowed"]),
        ({"k" * 65: "v"}, [f"key {'k' * 65!r} must be 1 to 64 characters"]),
        ({"": "v"}, ["key '' must be 1 to 64 characters"]),
        ({"k": "v" * 513}, ["value of 'k' is 513 characters; at most 512 are allowed"]),
        ({"k": 1}, ["value of 'k' must be a string"]),
        ({"k": None}, ["value of 'k' must be a string"]),
        ({1: "v"}, ["key 1 must be 1 to 64 characters"]),
    ],
)
def test_each_metadata_problem(metadata: dict, problems: list[str]) -> None:
    with pytest.raises(InvalidMetadata) as info:
        rules.validate_metadata(metadata)
    assert info.value.problems == problems
    assert str(info.value) == "invalid metadata: " + "; ".join(problems)


def test_every_metadata_problem_is_named_at_once() -> None:
    metadata: dict = {f"k{i}": "v" for i in range(15)}
    metadata["x" * 65] = "v"
    metadata["long"] = "v" * 513
    metadata["num"] = 7
    with pytest.raises(InvalidMetadata) as info:
        rules.validate_metadata(metadata)
    assert info.value.problems == [
        "18 keys; at most 16 are allowed",
        f"key {'x' * 65!r} must be 1 to 64 characters",
        "value of 'long' is 513 characters; at most 512 are allowed",
        "value of 'num' must be a string",
    ]


def test_metadata_patch_may_hold_nulls() -> None:
    assert rules.validate_metadata({"a": None, "b": "x"}, allow_null_values=True) == {
        "a": None,
        "b": "x",
    }


@pytest.mark.parametrize("metadata", [None, [], "k=v", [("k", "v")]])
def test_metadata_must_be_a_mapping(metadata: object) -> None:
    with pytest.raises(InvalidMetadata, match="must be an object"):
        rules.validate_metadata(metadata)


def test_metadata_result_is_a_copy() -> None:
    source = {"a": "b"}
    result = rules.validate_metadata(source)
    assert result == source
    assert result is not source


# ------------------------------------------------------------ store fields


@pytest.mark.parametrize("name", ["x", "n" * 255, "User Preferences", "caf\u00e9 \U0001f600", " "])
def test_valid_store_names(name: str) -> None:
    assert rules.validate_store_name(name) == name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "name must be 1 to 255 characters"),
        ("n" * 256, "name must be 1 to 255 characters"),
        ("a\nb", "name must not contain control characters"),
        ("a\x00", "name must not contain control characters"),
        ("a\x7f", "name must not contain control characters"),
        (None, "name must be a string"),
    ],
)
def test_invalid_store_names(name: object, message: str) -> None:
    with pytest.raises(InvalidStoreField) as info:
        rules.validate_store_name(name)
    assert str(info.value) == message


def test_store_description() -> None:
    assert rules.validate_store_description("") == ""
    assert rules.validate_store_description("d" * 1024) == "d" * 1024
    with pytest.raises(
        InvalidStoreField, match="^description is 1025 characters; at most 1024 are allowed$"
    ):
        rules.validate_store_description("d" * 1025)
    with pytest.raises(InvalidStoreField, match="^description must be a string$"):
        rules.validate_store_description(None)


def test_instructions() -> None:
    assert rules.validate_instructions(None) is None
    assert rules.validate_instructions("i" * 4096) == "i" * 4096
    with pytest.raises(InvalidInput, match="^instructions are 4097 characters"):
        rules.validate_instructions("i" * 4097)
    with pytest.raises(InvalidInput, match="^instructions must be a string$"):
        rules.validate_instructions(5)


# ------------------------------------------------------------------ slugs


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("User Preferences", "user-preferences"),
        ("user-preferences", "user-preferences"),
        ("Team  /  Notes!!", "team-notes"),
        ("a...b___c", "a-b-c"),
        ("Project X: 2024/Q3", "project-x-2024-q3"),
        ("Caf\u00e9 M\u00fcnchen", "caf-m-nchen"),
        ("\u65e5\u672c\u8a9e notes", "notes"),
        ("--edge--", "edge"),
        ("ABC123", "abc123"),
        ("\u65e5\u672c\u8a9e", "store"),
        ("!!!", "store"),
    ],
)
def test_slugify(name: str, slug: str) -> None:
    assert rules.slugify(name) == slug
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rules.slugify(name))


def test_unique_slugs_suffix_collisions_in_attachment_order() -> None:
    pairs = [("s1", "Notes"), ("s2", "notes"), ("s3", "Other"), ("s4", "NOTES!")]
    assert rules.unique_slugs(pairs) == {
        "s1": "notes",
        "s2": "notes-2",
        "s3": "other",
        "s4": "notes-3",
    }


def test_unique_slugs_is_stable_and_never_collides() -> None:
    pairs = [("s1", "a-2"), ("s2", "a"), ("s3", "A"), ("s4", "a 2")]
    first = rules.unique_slugs(pairs)
    assert first == rules.unique_slugs(list(pairs))
    assert first["s1"] == "a-2"
    assert first["s2"] == "a"
    assert len(set(first.values())) == len(pairs)


# ---------------------------------------------------------- scratch names


@pytest.mark.parametrize(
    "name",
    [
        "4913",
        "x~",
        "notes.md~",
        ".#x",
        ".#notes.md",
        "#notes.md#",
        ".x.swp",
        ".notes.md.swo",
        ".notes.md.swpx",
        "sed123abc",
        "sedAbC9zQ",
        ".name.AbC123",
        ".notes.md.x1Y2z3",
        "a.tmp",
    ],
)
def test_scratch_names(name: str) -> None:
    assert rules.is_scratch_name(name) is True


@pytest.mark.parametrize(
    "name",
    ["notes.md", "todo", "49130", "sed12345", "tmp", "a.tmpl", "x~y", ".hidden", "swp", "#notes"],
)
def test_real_names_are_not_scratch(name: str) -> None:
    assert rules.is_scratch_name(name) is False
