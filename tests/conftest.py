"""Shared fixtures: real services, or a clear skip on a laptop (a failure under CI=true)."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
from urllib.parse import urlparse

import pytest

# The App a developer registered (`ratchet github-app create` wrote
# ~/.config/ratchet/github-app.json) must not configure the tests' settings, nor those of the
# processes they start: they see an empty config folder instead.
os.environ.pop("RATCHET_GITHUB_CREDENTIALS", None)
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="ratchet-tests-config-")
atexit.register(shutil.rmtree, os.environ["XDG_CONFIG_HOME"], ignore_errors=True)

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
POSTGRES_URL = os.environ.get(
    "RATCHET_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("RATCHET_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
RABBITMQ_URL = os.environ.get("RATCHET_TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/")


# Fixtures that reach a server: a test using one (directly or through another fixture) is
# marked ``services`` at collection, so ``make test-fast`` (``-m "not services"``) leaves it out.
SERVICE_FIXTURES = frozenset({"postgres_url", "redis_url", "rabbitmq_url", "browser"})
# Test files that start their own servers (throwaway PostgreSQL and Redis, worker clusters).
SERVICE_FILES = ("tests/distributed/", "tests/test_services.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that needs PostgreSQL, Redis, RabbitMQ or a browser as ``services``."""
    root = config.rootpath
    for item in items:
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        if SERVICE_FIXTURES.intersection(getattr(item, "fixturenames", ())) or where.startswith(
                SERVICE_FILES):
            item.add_marker(pytest.mark.services)


def _reachable(url: str, default_port: int) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname, parsed.port or default_port), timeout=1):
            return True
    except OSError:
        return False


def require_service(name: str, url: str, default_port: int) -> None:
    """Skip when a service is absent on a laptop; fail under CI, where .ci/run starts it."""
    if _reachable(url, default_port):
        return
    message = f"{name} is not reachable at {url}"
    if IN_CI:
        pytest.fail(f"{message}; .ci/run should have started it", pytrace=False)
    pytest.skip(f"{message}; start it to run this test")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    require_service("PostgreSQL", POSTGRES_URL, 5432)
    return POSTGRES_URL


@pytest.fixture(scope="session")
def redis_url() -> str:
    require_service("Redis", REDIS_URL, 6379)
    return REDIS_URL


@pytest.fixture(scope="session")
def rabbitmq_url() -> str:
    require_service("RabbitMQ", RABBITMQ_URL, 5672)
    return RABBITMQ_URL
