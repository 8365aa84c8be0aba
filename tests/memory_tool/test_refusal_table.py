"""The refusal table of the memory front ends: every domain error class has an entry it
was given on purpose, and an unknown exception is an internal refusal, logged."""

from __future__ import annotations

import logging

import pytest

from memfs.core import errors
from memfs.memory_tool.refusals import REFUSAL_BY_ERROR, RefusalKind, refusal_for

DOMAIN_CLASSES = [
    cls
    for name in errors.__all__
    if isinstance(cls := getattr(errors, name), type) and issubclass(cls, errors.MemfsError)
]


@pytest.mark.parametrize("cls", DOMAIN_CLASSES, ids=lambda cls: cls.__name__)
def test_every_domain_error_has_a_considered_refusal(cls: type[errors.MemfsError]) -> None:
    """The nearest class of the table is the class itself or a parent other than the
    catch-all MemfsError (so a new failure kind is given its words, not "internal")."""
    nearest = next(c for c in cls.__mro__ if c in REFUSAL_BY_ERROR)
    assert nearest is not errors.MemfsError or cls is errors.MemfsError


def test_the_most_specific_class_wins() -> None:
    too_large = refusal_for(errors.ContentTooLarge("content is 9 bytes"), "/memories/a")
    assert too_large.kind is RefusalKind.INVALID
    assert too_large.text.startswith("Cannot write /memories/a: content is 9 bytes.")
    assert refusal_for(errors.CredentialRevoked("revoked"), "/memories/a").kind is (
        RefusalKind.DENIED
    )


def test_an_unexpected_exception_is_an_internal_refusal_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="memfs.memory_tool.refusals"):
        refused = refusal_for(ZeroDivisionError("x"), "/memories/a")
    assert refused.kind is RefusalKind.INTERNAL
    assert refused.text == (
        "memfs failed on /memories/a with an internal error (ZeroDivisionError); it is logged"
    )
    assert "memory command on /memories/a failed unexpectedly" in caplog.text
