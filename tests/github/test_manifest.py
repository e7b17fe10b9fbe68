"""``ratchet github-app manifest``: the App GitHub registers, asking for the least it needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from github.manifest import EVENTS, ROUTED_EVENTS
from github.routing import PERMISSION_EVENTS
from github.webhook_payloads import MODELS
from tests.webhook_examples import event_names


def manifest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app.cli", "github-app", "manifest", *args],
                          capture_output=True, text=True, env=env, check=False, timeout=60)


def test_the_manifest_names_the_webhook_the_events_routed_and_the_least_permissions() -> None:
    result = manifest("--url", "https://ratchet.example.com/")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["hook_attributes"] == {
        "url": "https://ratchet.example.com/webhooks/github", "active": True}
    assert printed["default_permissions"] == {
        "contents": "write", "issues": "write", "pull_requests": "write", "checks": "write",
        "metadata": "read", "members": "read"}
    assert printed["public"] is False and printed["name"] == "Ratchet"
    # Exactly the events the router acts on and those that say someone's access changed,
    # each one GitHub documents.
    assert sorted(printed["default_events"]) == sorted(EVENTS)
    assert sorted(ROUTED_EVENTS) == sorted(MODELS)
    assert set(EVENTS) - set(ROUTED_EVENTS) == set(PERMISSION_EVENTS)
    assert set(EVENTS) <= event_names()


def test_without_a_public_url_the_manifest_says_what_to_give() -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    result = manifest(env={**env, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert result.returncode == 2
    assert "--url" in result.stderr and "RATCHET_PUBLIC_URL" in result.stderr
    bad = manifest("--url", "ratchet.example.com",
                   env={**env, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert bad.returncode == 2 and "public URL" in bad.stderr
