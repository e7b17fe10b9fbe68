"""npm version ranges as node-semver reads them: which workspace member a plain range links."""

from __future__ import annotations

import pytest

from verification.semver import satisfies


@pytest.mark.parametrize(("version", "spec"), [
    ("1.2.3", "^1.2.0"), ("1.9.0", "^1.2.0"), ("0.2.5", "^0.2.3"), ("0.0.3", "^0.0.3"),
    ("1.2.9", "~1.2.3"), ("1.2.0", "1.2.x"), ("1.2.7", "1.2"), ("3.0.0", "*"), ("3.0.0", ""),
    ("2.3.4", "1.2.3 - 2.3.4"), ("2.3.9", "1.2 - 2.3"), ("1.0.0", ">=1.0.0 <2"),
    ("2.5.0", "^1.0.0 || ^2.0.0"), ("1.2.3", "=1.2.3"), ("1.2.3", "v1.2.3"),
    ("2.0.0", "> 1"), ("1.0.0", "<= 1.0"),
    # A prerelease satisfies a range naming a prerelease of the same release.
    ("4.6.0-alpha.3", "^4.6.0-alpha.0"), ("4.6.0-beta.1", "~4.6.0-alpha.3"),
    ("1.0.0-rc.10", ">=1.0.0-rc.2"),
])  # fmt: skip
def test_satisfied(version: str, spec: str) -> None:
    assert satisfies(version, spec)


@pytest.mark.parametrize(("version", "spec"), [
    ("2.0.0", "^1.2.0"), ("0.3.0", "^0.2.3"), ("0.0.4", "^0.0.3"), ("1.3.0", "~1.2.3"),
    ("1.1.9", "^1.2.0"), ("2.4.0", "1.2 - 2.3"), ("1.0.0", "2.x"), ("1.0.1", "1.0.0"),
    ("1.0.0", "latest"), ("1.0.0", "npm:other@^1"), ("1.0.0", "github:acme/utils"),
    ("1.0.0", "https://example.invalid/u.tgz"), ("1.0.0", "<1"),
    # Prereleases only where the range names one of the same release.
    ("1.5.0-beta.1", "^1.2.0"), ("4.7.0-alpha.0", "^4.6.0-alpha.0"),
    ("1.0.0-rc.1", ">=1.0.0-rc.2"), ("not-a-version", "*"),
])  # fmt: skip
def test_not_satisfied(version: str, spec: str) -> None:
    assert not satisfies(version, spec)
