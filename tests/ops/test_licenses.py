"""Every runtime dependency's licence lets memfs stay Apache-2.0 (README "Installing",
its licence paragraph): read from the installed distributions' metadata, the whole
tree of ``agent-memfs``'s requirements (its extras left out: tests and tools are not
distributed with it)."""

from __future__ import annotations

import importlib.metadata
import re

from packaging.requirements import Requirement

# GPL and AGPL of any version, as an SPDX id or a trove classifier; the LGPL (a library
# used unmodified, README) is no match: "LGPL" has no word boundary before its "GPL".
_COPYLEFT = re.compile(r"\bA?GPL|GNU (Affero )?General Public License")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _licence(dist: importlib.metadata.Distribution) -> str:
    """What the metadata says of the licence: the SPDX expression (``License-Expression``),
    else the trove classifiers, else the first line of the free-text ``License`` field."""
    meta = dist.metadata
    if expression := meta.get("License-Expression"):
        return str(expression)
    classifiers = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    if classifiers:
        return "; ".join(classifiers)
    return str(meta.get("License") or "").strip().split("\n")[0]


def runtime_licences() -> dict[str, str]:
    """``{distribution: licence}`` of agent-memfs and everything it needs at run time on
    this machine (requirement markers evaluated here, extras a requirement names
    followed)."""
    found: dict[str, str] = {}
    todo: list[tuple[str, frozenset[str]]] = [("agent-memfs", frozenset())]
    while todo:
        name, extras = todo.pop()
        if _canonical(name) in found:
            continue
        dist = importlib.metadata.distribution(name)  # PackageNotFoundError: not installed
        found[_canonical(name)] = _licence(dist)
        for line in dist.requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is not None and not any(
                marker.evaluate({"extra": extra}) for extra in {"", *extras}
            ):
                continue
            todo.append((requirement.name, frozenset(requirement.extras)))
    return found


def test_no_runtime_dependency_is_gpl_or_agpl() -> None:
    licences = runtime_licences()
    assert "pyfuse3" in licences  # the tree was walked
    assert "sqlalchemy" in licences
    assert "merge3" not in licences  # GPL-2.0-or-later; replaced by a diff3 on difflib
    unknown = sorted(name for name, licence in licences.items() if not licence)
    assert unknown == [], f"no licence in the metadata of {unknown}"
    copyleft = {name: lic for name, lic in licences.items() if _COPYLEFT.search(lic)}
    assert copyleft == {}, f"GPL/AGPL runtime dependencies: {copyleft}"


def test_the_check_recognises_gpl_and_spares_lgpl() -> None:
    for licence in ("GPL-2.0-or-later", "AGPL-3.0-only", "GPLv3",
                    "License :: OSI Approved :: GNU General Public License v2 (GPLv2)",
                    "License :: OSI Approved :: GNU Affero General Public License v3"):
        assert _COPYLEFT.search(licence), licence
    for licence in ("LGPL-2.1-or-later", "LGPL-3.0-only", "MIT", "Apache-2.0",
                    "License :: OSI Approved :: GNU Lesser General Public License v3 (LGPLv3)"):
        assert not _COPYLEFT.search(licence), licence
