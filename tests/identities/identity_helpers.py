"""Helpers of the identity tests (imported as ``identity_helpers``: pytest puts this
directory on ``sys.path``): :class:`IdentityServer`, a running ``memfs serve``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx

from memfs.core.model import Scope
from memfs.store import Engine

SDK_TIMEOUT_S = 30.0


@dataclass
class IdentityServer:
    url: str
    database: Path
    engine: Engine
    admin_secret: str

    def http(self, secret: str | None = None) -> httpx.Client:
        """Raw HTTP with ``Authorization: Bearer`` (the routes the SDK has no method for)."""
        headers = {"authorization": f"Bearer {secret or self.admin_secret}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=SDK_TIMEOUT_S)

    def key(self, *scopes: Scope, stores: tuple[str, ...] = ()) -> str:
        _, secret = self.engine.api_keys.create("test", list(scopes), list(stores))
        return secret
