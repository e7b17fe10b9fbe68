"""Which tools an ini config change concerns, by the sections it changed against the base.

Pure. `setup.cfg` holds both a package's metadata and tools' settings: a change to its
`[tool:pytest]` section alone changes what pytest does, not how the package builds, so it
plans the pytest checks, as a `[tool.pytest]` table of a pyproject.toml would. `tox.ini` and
`pytest.ini` are read the same way. A change to a section no tool owns here (`[metadata]`,
`[options]`, a command's options), to `[DEFAULT]`, or a file that does not parse, is unknown:
the caller keeps its wider reading.
"""

from __future__ import annotations

# Sections owned by one tool, and that tool; `prefix*` names every section so starting.
# coverage's settings are read by pytest-cov, under pytest.
_SECTION_TOOLS = {
    "tool:pytest": "pytest", "pytest": "pytest", "coverage:*": "pytest",
    "flake8": "flake8", "pycodestyle": "pycodestyle", "pydocstyle": "pydocstyle",
    "mypy": "mypy", "mypy-*": "mypy", "isort": "isort", "tool:isort": "isort",
    "codespell": "codespell", "bandit": "bandit", "pylint.*": "pylint",
    "tox:tox": "tox", "tox": "tox", "testenv": "tox", "testenv:*": "tox",
    "gh-actions": "tox", "gh-actions:env": "tox",
}  # fmt: skip
# Per file, the sections anyone reads: pytest reads only `[pytest]` of a pytest.ini.
_READ = {"pytest.ini": {"pytest": "pytest"}}


def ini_tools_changed(name: str, old: str | None, new: str | None) -> frozenset[str] | None:
    """The tools owning every section the change of the ini file `name` touched (empty: no
    value changed, only comments or layout); None when it touched another section, or either
    side is missing or does not parse."""
    if old is None or new is None:
        return None
    before, after = _sections(old), _sections(new)
    if before is None or after is None:
        return None
    changed = {section for section in before.keys() | after.keys()
               if before.get(section) != after.get(section)}
    owners = _READ.get(name)
    if owners is not None:  # nothing but the reader reads this file
        return frozenset(owners[s] for s in changed if s in owners)
    tools = [_tool(section) for section in changed]
    if None in tools:
        return None
    return frozenset(tool for tool in tools if tool is not None)


def _tool(section: str) -> str | None:
    if section in _SECTION_TOOLS:
        return _SECTION_TOOLS[section]
    return next((tool for pattern, tool in _SECTION_TOOLS.items()
                 if pattern.endswith("*") and section.startswith(pattern[:-1])), None)


def _sections(text: str) -> dict[str, dict[str, str]] | None:
    """Each section's options as the tools read them (`[DEFAULT]` as its own section), or None
    for a file configparser rejects."""
    import configparser  # only here: most changes touch no ini file

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    sections = {name: dict(parser.items(name, raw=True)) for name in parser.sections()}
    sections["DEFAULT"] = dict(parser.defaults())
    return sections
