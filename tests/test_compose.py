"""``compose.yaml`` read and checked against the Dockerfile, the settings and the README, then
run on this host: its ``serve`` and ``worker`` commands with its environment (PostgreSQL and
Redis the test's own, with a schema and queue of their own) and the README's ``.env``.

No container engine runs here (``tests/containers.py`` maps each container path to a folder of
the test); what compose itself does (health-gated start order, restarts) is read, not run.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis
import yaml

from tests.containers import (
    KNOWN_SETTINGS,
    ROOT,
    Host,
    Stage,
    dockerfile_stages,
    effective,
    entry_command,
    image_environment,
    last,
    ratchet_process,
    readme_commands,
    serving,
    stop,
)
from tests.distributed.cluster import with_schema
from tests.e2e.harness import AGENT, make_target_repo, with_agent_channels
from tests.fakes.fakegithub import FakeGitHub

RATCHET_SERVICES = ("serve", "worker")
RUN_SECONDS = 90.0  # the most a detached run may take to reach its spec on a slow machine


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def stages() -> dict[str, Stage]:
    return dockerfile_stages()


def readme_dotenv() -> dict[str, str]:
    """The ``.env`` the README shows beside compose.yaml (its one block of KEY=value lines)."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```dotenv\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 1, "the README shows one .env (```dotenv) for compose.yaml"
    for line in blocks[0].splitlines():
        assert re.fullmatch(r"[A-Z_]+=.*", line), f"not a KEY=value line: {line}"
    return dict(line.split("=", 1) for line in blocks[0].splitlines())


def readme_compose_copy() -> tuple[str, str, str]:
    """The README's ``docker compose run ... --entrypoint sh SERVICE -c SCRIPT < FILE``."""
    found = [w for w in readme_commands("docker compose run") if "--entrypoint" in w]
    assert len(found) == 1, "the README copies the App's credentials into the volume once"
    words = found[0]
    at = words.index("--entrypoint")
    assert words[at + 1] == "sh" and words[at + 3] == "-c" and words[-2] == "<", words
    return words[at + 2], words[at + 4], words[-1]


def test_the_four_services_with_health_checks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"postgres", "redis", *RATCHET_SERVICES}
    for name in ("postgres", "redis", "serve"):
        assert services[name]["healthcheck"]["test"][0] == "CMD", name
    assert services["worker"]["healthcheck"] == {"disable": True}  # it serves no HTTP
    for name in RATCHET_SERVICES:
        assert services[name]["depends_on"] == {
            "postgres": {"condition": "service_healthy"},
            "redis": {"condition": "service_healthy"}}, name


def test_the_ledger_and_broker_urls_name_the_services_and_their_credentials(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    postgres = services["postgres"]["environment"]
    user, password, db = (postgres[k] for k in ("POSTGRES_USER", "POSTGRES_PASSWORD",
                                                "POSTGRES_DB"))
    assert services["postgres"]["healthcheck"]["test"][1:] == ["pg_isready", "-U", user,
                                                               "-d", db]
    for name in RATCHET_SERVICES:
        env = services[name]["environment"]
        assert env["RATCHET_STORE_URL"] == f"postgresql://{user}:{password}@postgres:5432/{db}"
        assert env["RATCHET_BROKER_URL"].startswith("redis://redis:6379/")


def test_the_ratchet_services_are_the_agents_image_with_its_entry_and_volume(
    compose: dict[str, Any], stages: dict[str, Stage],
) -> None:
    home = json.loads(last(effective(stages, "agents"), "VOLUME"))[0]
    for name in RATCHET_SERVICES:
        service = compose["services"][name]
        assert service["build"]["target"] in stages
        assert service["build"]["target"] == "agents"  # the presets' CLIs are needed
        assert service["init"] is True  # tini reaps the orphaned grandchildren
        assert {"seccomp=unconfined", "apparmor=unconfined"} <= set(service["security_opt"])
        volume, target = service["volumes"][0].split(":")
        assert target == home and volume in compose["volumes"]
        for variable in service["environment"]:
            if variable.startswith("RATCHET_"):
                assert variable in KNOWN_SETTINGS, f"{name} sets {variable}, no setting"
    serve = compose["services"]["serve"]
    assert ["ratchet", *serve["command"]] == entry_command(stages, "agents")
    port = serve["command"][serve["command"].index("--port") + 1]
    assert f"{port}:{port}" in serve["ports"]
    assert f"http://127.0.0.1:{port}/healthz" in serve["healthcheck"]["test"][-1]
    assert compose["services"]["worker"]["command"][0] == "worker"


def test_the_readme_dotenv_is_passed_on_whole(compose: dict[str, Any]) -> None:
    for name in RATCHET_SERVICES:
        environment = compose["services"][name]["environment"]
        passed = {variable for variable, value in environment.items() if value is None}
        for variable in readme_dotenv():
            assert variable in passed, f"compose.yaml does not pass {variable} to {name}"
            if variable.startswith("RATCHET_"):
                assert variable in KNOWN_SETTINGS, f"the README's .env sets {variable}"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    with FakeGitHub() as fake:
        yield Host(tmp_path, fake)


@pytest.fixture
def wiring(postgres_url: str, redis_url: str) -> Iterator[dict[str, str]]:
    """compose's ledger and broker, as this host's servers: a schema and a queue of its own."""
    schema, queue = f"compose_{secrets.token_hex(6)}", f"compose-{secrets.token_hex(6)}"
    try:
        yield {"RATCHET_STORE_URL": with_schema(postgres_url, schema),
               "RATCHET_BROKER_URL": redis_url, "RATCHET_QUEUE": queue}
    finally:
        client = redis.Redis.from_url(redis_url)
        keys = list(client.scan_iter(f"{queue}:*"))
        if keys:
            client.delete(*keys)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def compose_environment(host: Host, compose: dict[str, Any], stages: dict[str, Stage],
                        name: str, wiring: dict[str, str]) -> dict[str, str]:
    service = compose["services"][name]
    volume, target = service["volumes"][0].split(":")
    host.volume(target, volume)
    dotenv = readme_dotenv()
    given = {variable: (dotenv.get(variable) if value is None else value)
             for variable, value in service["environment"].items()}
    given = {variable: value for variable, value in given.items()
             if value is not None}  # unset in .env and the shell: left unset
    env = host.environment(image_environment(stages, service["build"]["target"]), given)
    return {**env, **wiring}


def test_serve_and_worker_start_with_the_readme_settings_and_take_a_run(
    host: Host, compose: dict[str, Any], stages: dict[str, Stage], wiring: dict[str, str],
    tmp_path: Path,
) -> None:
    service, script, stdin = readme_compose_copy()
    compose_environment(host, compose, stages, service, wiring)  # its volume
    host.copy_in(script, stdin)
    serve_env = compose_environment(host, compose, stages, "serve", wiring)
    worker_env = compose_environment(host, compose, stages, "worker", wiring)
    assert serve_env["RATCHET_HOME"] == worker_env["RATCHET_HOME"]  # one volume, shared
    serve = entry_command(stages, "agents", compose["services"]["serve"]["command"])
    worker_command = [*entry_command(stages, "agents", compose["services"]["worker"]["command"])]
    worker_command[worker_command.index("--processes") + 1] = "1"  # 2 cores for the suite
    # The scripted agent stands in for the CLI: a run reaches its spec without a model.
    agent = with_agent_channels({"RATCHET_AGENT_COMMAND": f"{sys.executable} {AGENT}",
                                 "RATCHET_SANDBOX_RW": str(tmp_path / "shared"),
                                 "AGENT_LOG": str(tmp_path / "shared" / "agent.log")})
    (tmp_path / "shared").mkdir()
    worker_env.update(agent)
    worker = ratchet_process(worker_command, worker_env, cwd=tmp_path,
                             log=tmp_path / "worker.log")
    try:
        with serving(serve, serve_env, tmp_path) as url:
            ready = httpx.get(f"{url}/readyz", timeout=10).json()
            assert ready["ledger"] == "ok" and ready["broker"] == "ok", ready
            assert ready["checks"]["github-app"] == "ok", ready
            repo = make_target_repo(tmp_path / "repo")
            created = ratchet_process(
                ["ratchet", "run", "--repo", str(repo), "--title", "Add calc", "--body",
                 "Add calc.add(a, b).", "--detach", "--json"],
                {**worker_env}, cwd=tmp_path, log=tmp_path / "run.log")
            assert created.wait(60) == 0, (tmp_path / "run.log").read_text()
            run_id = json.loads((tmp_path / "run.log").read_text().splitlines()[-1])["run_id"]
            state = wait_for_state(worker_env, tmp_path, run_id, "awaiting_approval", worker)
            assert state == "awaiting_approval", (tmp_path / "worker.log").read_text()
            assert worker.poll() is None
    finally:
        stop(worker)


def wait_for_state(env: dict[str, str], root: Path, run_id: str, wanted: str,
                   worker: subprocess.Popen[bytes]) -> str:
    """The run's state once it is ``wanted``, has ended or the worker has; the deadline is
    only reached when the worker never takes the run."""
    deadline = time.monotonic() + RUN_SECONDS
    state = ""
    while time.monotonic() < deadline and worker.poll() is None:
        log = root / "status.log"
        proc = ratchet_process(["ratchet", "status", run_id, "--json"], env, cwd=root, log=log)
        proc.wait(60)
        state = json.loads(log.read_text().splitlines()[-1])["state"]
        if state == wanted or state in {"failed", "needs_human", "done", "cancelled"}:
            return state
        time.sleep(0.5)
    return state


def test_without_the_credentials_serve_exits_naming_what_to_set(
    host: Host, compose: dict[str, Any], stages: dict[str, Stage], tmp_path: Path,
) -> None:
    env = compose_environment(host, compose, stages, "serve", {})  # the copy-in forgotten
    env.pop("RATCHET_STORE_URL")  # the refusal comes before the ledger is opened
    env.pop("RATCHET_BROKER_URL")
    command = entry_command(stages, "agents", compose["services"]["serve"]["command"])
    log = tmp_path / "refused.log"
    proc = ratchet_process(command, env, cwd=tmp_path, log=log)
    try:
        assert proc.wait(60) == 2
    finally:
        stop(proc)
    said = " ".join(log.read_text().split())
    assert "refusing to serve" in said
    assert "RATCHET_GITHUB_CLIENT_ID" in said and "RATCHET_GITHUB_CLIENT_SECRET" in said, said
    assert env["RATCHET_GITHUB_CREDENTIALS"] in said  # where it looked for the file
