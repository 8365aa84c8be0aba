"""The record header (SPEC §6): what makes a memory a record, and every rule of the
table, through the one parser (memfs/records.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memfs.core.errors import InvalidInput, InvalidRecord
from memfs.core.records import (
    RecordFilter,
    RecordScope,
    RecordSource,
    RecordType,
    Relation,
    RelationType,
    decay_score,
    half_life_days,
    parse_record,
    split_front_matter,
)

SEED_HEADER = """\
---
type: preference
scope: private
user_id: user_id_xxx
agent_id: worker_agent
tenant_id: app
importance: 0.92
confidence: 0.96
tags: [preference, tone, style]
source: explicit_user_input
summary: User prefers concise and humorous tone in conversations
structured:
  tone: [concise, humorous]
  communication_style: casual
  priority: high
relations:
  - {type: related_to, target: /users/user_id_xxx/user_id_xxx_mem_001.md}
allowed_users: [user_id_xxx]
allowed_roles: [admin, editor]
memory_id: user_id_xxx_mem_002
---
簡潔かつユーモラスな口調で話してください。
"""


def test_the_seed_record_parses_with_every_field() -> None:
    header = parse_record(SEED_HEADER)
    assert header is not None
    assert header.type is RecordType.PREFERENCE
    assert header.scope is RecordScope.PRIVATE
    assert (header.importance, header.confidence) == (0.92, 0.96)
    assert header.tags == ("preference", "tone", "style")
    assert header.source is RecordSource.EXPLICIT_USER_INPUT
    assert header.summary == "User prefers concise and humorous tone in conversations"
    assert header.structured == {
        "tone": ["concise", "humorous"],
        "communication_style": "casual",
        "priority": "high",
    }
    assert (header.user_id, header.agent_id, header.tenant_id) == (
        "user_id_xxx",
        "worker_agent",
        "app",
    )
    assert header.relations == (
        Relation(RelationType.RELATED_TO, "/users/user_id_xxx/user_id_xxx_mem_001.md"),
    )
    assert header.allowed_users == ("user_id_xxx",)
    assert header.allowed_roles == ("admin", "editor")
    assert header.extra == {"memory_id": "user_id_xxx_mem_002"}
    assert SEED_HEADER[header.body_offset :] == "簡潔かつユーモラスな口調で話してください。\n"


@pytest.mark.parametrize(
    "content",
    [
        "no front matter at all\n",
        "---\ntitle: a blog post\ntype: post\n---\nbody\n",
        "---\ntitle: no type\n---\nbody\n",
        "---\ntype: preference\nno closing fence\n",
        "---\n- a\n- list\n---\n",
        "---\ntype: [preference]\n---\n",
        "---\ntype: post\nimportance: 7\ntags: not a list\n---\n",  # not a record: no rules
        " ---\ntype: preference\n---\n",
        "---\n: [ broken yaml of an ordinary post\n---\n",
        "",
    ],
)
def test_ordinary_content_is_no_record_and_never_refused(content: str) -> None:
    assert parse_record(content) is None


def test_a_minimal_record_has_the_defaults() -> None:
    header = parse_record("---\ntype: episodic\n---\n")
    assert header is not None
    assert header.scope is RecordScope.PRIVATE
    assert (header.importance, header.tags, header.relations, header.extra) == (None, (), (), {})


def test_null_values_count_as_absent() -> None:
    header = parse_record("---\ntype: semantic\nscope:\nimportance: ~\ntags: null\n---\n")
    assert header is not None
    assert (header.scope, header.importance, header.tags) == (RecordScope.PRIVATE, None, ())


def test_crlf_front_matter() -> None:
    header = parse_record("---\r\ntype: profile\r\nimportance: 1\r\n---\r\nbody\r\n")
    assert header is not None
    assert header.importance == 1.0


TOO_LONG = "x" * 129


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("scope: secret", "scope: must be one of private, share, public"),
        ("importance: 1.5", "importance: must be a number from 0 to 1"),
        ("importance: -0.1", "importance: must be a number from 0 to 1"),
        ("importance: high", "importance: must be a number from 0 to 1"),
        ("importance: true", "importance: must be a number from 0 to 1"),
        ("confidence: 2", "confidence: must be a number from 0 to 1"),
        ("tags: tone", "tags: must be a list of at most 32 strings of 1–64 characters"),
        ("tags: ['']", "tags: must be a list of at most 32 strings of 1–64 characters"),
        (f"tags: [{'t' * 65}]", "tags: must be a list of at most 32 strings of 1–64 characters"),
        (
            "tags: [" + ", ".join(f"t{i}" for i in range(33)) + "]",
            "tags: must be a list of at most 32 strings of 1–64 characters",
        ),
        ("tags: [1, 2]", "tags: must be a list of at most 32 strings of 1–64 characters"),
        (
            "source: rumour",
            "source: must be one of explicit_user_input, implicit_inference, "
            "system_generated, external_data, corrected_memory",
        ),
        (f"summary: {'s' * 1025}", "summary: must be a string of at most 1024 characters"),
        ("summary: [a]", "summary: must be a string of at most 1024 characters"),
        ("structured: [a, b]", "structured: must be a mapping"),
        (
            "structured: {a: !!binary aGk=}",
            "structured: must hold only scalars, lists and mappings (a value of YAML type bytes)",
        ),
        (
            "structured: {1: a}",
            "structured: must hold only scalars, lists and mappings (a mapping key that is "
            "not a string)",
        ),
        (
            f"structured: {{a: {'x' * 8200}}}",
            "structured: must be at most 8192 bytes as JSON",
        ),
        (
            "user_id: 42",
            "user_id: must be a string of 1–128 characters without control characters "
            "(quote a number)",
        ),
        (
            f"agent_id: {TOO_LONG}",
            "agent_id: must be a string of 1–128 characters without control characters "
            "(quote a number)",
        ),
        (
            'tenant_id: "a\\u0007b"',
            "tenant_id: must be a string of 1–128 characters without control characters "
            "(quote a number)",
        ),
        ("relations: /a.md", "relations: must be a list of {type, target} mappings"),
        ("relations: [/a.md]", "relations[0]: must be a mapping with type and target"),
        (
            "relations: [{type: likes, target: /a.md}]",
            "relations[0].type: must be one of related_to, derived_from, contradicts, supersedes",
        ),
        (
            "relations: [{type: related_to, target: user_id_xxx_mem_001}]",
            "relations[0].target: must be a memory path (/…) or a mem_… id",
        ),
        (
            "relations: [{type: related_to}]",
            "relations[0].target: must be a memory path (/…) or a mem_… id",
        ),
        (
            "relations: [{type: related_to, target: /a/../b}]",
            "relations[0].target: must be a memory path (/…) or a mem_… id: ",
        ),
        (
            "allowed_users: user_id_xxx",
            "allowed_users: must be a list of strings of 1–128 characters without control "
            "characters",
        ),
        (
            "allowed_roles: [admin, 7]",
            "allowed_roles: must be a list of strings of 1–128 characters without control "
            "characters",
        ),
    ],
)
def test_each_rule_is_refused_naming_key_and_rule(line: str, message: str) -> None:
    with pytest.raises(InvalidRecord) as caught:
        parse_record(f"---\ntype: preference\n{line}\n---\nbody\n")
    assert caught.value.code == "invalid_record"
    assert caught.value.message.startswith("invalid record header: " + message)
    assert caught.value.key == message.split(":", 1)[0]
    assert isinstance(caught.value, InvalidInput)


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(InvalidRecord) as caught:
        parse_record("---\ntype: profile\nimportance: 9\nscope: x\n---\n")
    assert caught.value.problems == [
        "scope: must be one of private, share, public",
        "importance: must be a number from 0 to 1",
    ]
    assert caught.value.key == "scope"


def test_broken_yaml_of_a_record_is_refused() -> None:
    with pytest.raises(InvalidRecord, match="the front matter is not valid YAML"):
        parse_record("---\ntype: preference\ntags: [unclosed\n---\n")


def test_targets_by_id_and_by_path() -> None:
    header = parse_record(
        "---\ntype: semantic\nrelations:\n"
        "  - {type: supersedes, target: mem_01abc}\n"
        "  - {type: derived_from, target: /notes/a.md}\n---\n"
    )
    assert header is not None
    assert [(r.target, r.target_is_id) for r in header.relations] == [
        ("mem_01abc", True),
        ("/notes/a.md", False),
    ]


def test_structured_dates_become_text() -> None:
    header = parse_record("---\ntype: episodic\nstructured: {when: 2026-04-20}\n---\n")
    assert header is not None
    assert header.structured == {"when": "2026-04-20"}


def test_split_front_matter() -> None:
    assert split_front_matter("---\na: 1\n---\nrest") == ("a: 1\n", 13)
    assert split_front_matter("---\na: 1\n---") == ("a: 1\n", 12)
    assert split_front_matter("---\na: 1\n") is None
    assert split_front_matter("text\n---\n") is None


def test_decay_halves_per_half_life() -> None:
    then = datetime(2026, 1, 1, tzinfo=UTC)
    assert decay_score(0.8, then, then, 30) == 0.8
    assert decay_score(0.8, then, then + timedelta(days=30), 30) == 0.4
    assert decay_score(0.8, then, then + timedelta(days=90), 30) == 0.1
    assert decay_score(None, then, then + timedelta(days=30), 30) == 0.25
    assert decay_score(0.8, then, then - timedelta(days=3), 30) == 0.8  # future: now


def test_half_life_from_store_metadata() -> None:
    assert half_life_days({}) == 30.0
    assert half_life_days({"record_half_life_days": "7"}) == 7.0
    assert half_life_days({"record_half_life_days": "soon"}) == 30.0
    assert half_life_days({"record_half_life_days": "-1"}) == 30.0


def test_filters_from_untyped_input() -> None:
    record_filter = RecordFilter.of(record_type="preference", min_importance=0.5, tag="tone")
    assert record_filter.record_type is RecordType.PREFERENCE
    assert not record_filter.empty
    assert RecordFilter.of().empty
    with pytest.raises(InvalidInput, match="record_type must be one of episodic"):
        RecordFilter.of(record_type="post")
    with pytest.raises(InvalidInput, match="min_importance must be a number from 0 to 1"):
        RecordFilter.of(min_importance=3)


def test_filter_strings_follow_the_header_rules() -> None:
    with pytest.raises(InvalidInput, match="tag must be 1–64 characters"):
        RecordFilter.of(tag="a\x00b")
    with pytest.raises(InvalidInput, match="user_id must be 1–128 characters"):
        RecordFilter.of(user_id="")
    with pytest.raises(InvalidInput, match="min_importance"):
        RecordFilter.of(min_importance=float("nan"))
