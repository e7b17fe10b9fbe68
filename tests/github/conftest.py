"""Fixtures for the GitHub adapter: the fake GitHub of ``tests/fakes`` and clients pointed at it.

The fake's own fixtures (an App key, a bare origin, a running fake with the App installed on
acme/widgets as installation 77 and issue #1) are imported, not copied. Every test that uses
the fake ends by asserting that GitHub would have accepted every request it was sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from github.client import GitHubClient
from github.credentials import AppCredentials, TokenCredentials
from tests.fakes import conftest as fake_fixtures
from tests.fakes.conftest import APP_ID, Origin
from tests.fakes.fakegithub import FakeGitHub
from tests.github.harness import Scene, make_scene

# The fake's fixtures, registered here by name (pytest collects a conftest's attributes).
app_key = fake_fixtures.app_key
origin_template = fake_fixtures.origin_template
origin = fake_fixtures.origin
fake = fake_fixtures.fake

INSTALLATION = 77  # the installation id the fake fixture gives the App on acme/widgets
ACTIONS_TOKEN = "actions-token-for-tests-0123456789"  # a plain token seeded by `token_client`


@pytest.fixture(autouse=True)
def _fake_stays_clean(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test using the fake: no request failed its OpenAPI validation."""
    used = request.getfixturevalue("fake") if "fake" in request.fixturenames else None
    yield
    if used is not None:
        used.assert_clean()


def app_credentials(fake: FakeGitHub, key: bytes) -> AppCredentials:
    return AppCredentials.from_values(
        app_id=str(APP_ID), private_key=key.decode(), api_url=fake.base_url
    )


def make_client(fake: FakeGitHub, key: bytes, **options: Any) -> GitHubClient:
    """An App client on the fake, timing tokens by the fake's clock; no pacing unless asked."""
    settings: dict[str, Any] = {
        "mutation_interval": 0.0,
        "request_timeout": 5.0,
        "clock": fake.clock.now,
    }
    return GitHubClient(app_credentials(fake, key), **(settings | options))


class FakeTime:
    """The client's clocks, moved only by its own sleeps: pacing and rate-limit waits are
    asserted as the waits it asked for, not measured in wall time (a loaded machine stretches
    those). Each sleep moves the fake GitHub's clock by as much, so both sides agree."""

    def __init__(self, fake: FakeGitHub) -> None:
        self._fake = fake
        self.started = fake.clock.now()  # epoch seconds at ``at == 0``
        self.at = 0.0  # seconds slept so far: the client's monotonic clock
        self.slept: list[float] = []

    def now(self) -> float:
        return self.started + self.at

    def monotonic(self) -> float:
        return self.at

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.at += seconds
        self._fake.advance_clock(seconds)
        await asyncio.sleep(0)

    def client_options(self) -> dict[str, Any]:
        return {"clock": self.now, "monotonic": self.monotonic, "sleep": self.sleep}


@pytest.fixture
def client(fake: FakeGitHub, app_key: bytes) -> GitHubClient:
    return make_client(fake, app_key)


@pytest.fixture
def token_client(fake: FakeGitHub) -> GitHubClient:
    """A client in token mode, with a token like an Actions GITHUB_TOKEN."""
    fake.add_token(
        ACTIONS_TOKEN,
        login="github-actions[bot]",
        permissions={"issues": "write", "pull_requests": "write", "metadata": "read"},
        repos=["acme/widgets"],
    )
    credentials = TokenCredentials.from_values(token=ACTIONS_TOKEN, api_url=fake.base_url)
    return GitHubClient(credentials, mutation_interval=0.0, request_timeout=5.0)


@pytest.fixture
def new_scene(
    fake: FakeGitHub, app_key: bytes, origin: Origin, tmp_path: Path
) -> Iterator[Callable[..., Scene]]:
    """Make the test's run scene (one per test), with client options such as a short timeout."""
    made: list[Scene] = []

    def build(**client_options: Any) -> Scene:
        assert not made, "one scene per test: it owns the run's ledger"
        made.append(make_scene(fake, app_key, origin, tmp_path, **client_options))
        return made[0]

    yield build
    for scene in made:
        scene.store.close()


@pytest.fixture
def scene(new_scene: Callable[..., Scene]) -> Scene:
    """Run ``run-1`` on acme/widgets (issue #1), leased, with a GitHub executor on the fake."""
    return new_scene()
