"""The Dockerfile and the README's ``docker`` commands, read and checked against each other.

No Docker engine runs here or in CI, so the image is never built by the suite: these tests
parse the Dockerfile's stages and catch a regression in what matters at run time (non-root
user, signals reaching ``ratchet``, a health check on /healthz, git and bubblewrap present, the
agent CLIs at the versions ``tests/agents/clis.py`` pins); check that the README's commands
name targets, ports, volumes and settings the image has; and run what the README runs in the
image on this host (``tests/containers.py``): the service starts with the README's settings
and answers /healthz with GitHub accepting the App, and without sign-in it refuses, naming
what to set.
"""

from __future__ import annotations

import json
import re
import shlex
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.agents.clis import CLIS
from tests.containers import (
    DEFAULT_TARGET,
    KNOWN_SETTINGS,
    ROOT,
    DockerRun,
    Host,
    Stage,
    dockerfile_stages,
    effective,
    entry_command,
    image_environment,
    last,
    lineage,
    ratchet_process,
    readme_built_tags,
    readme_docker_runs,
    serving,
    stop,
)
from tests.fakes.fakegithub import FakeGitHub

# The distribution's top-level packages.
PACKAGES = ["app", "runner", "verification", "github", "plumbing"]
SIGN_IN = ("RATCHET_GITHUB_CLIENT_ID", "RATCHET_GITHUB_CLIENT_SECRET")


@pytest.fixture(scope="module")
def stages() -> dict[str, Stage]:
    return dockerfile_stages()


def runs(instructions: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> list[str]:
    return [arguments for name, arguments in instructions if name == "RUN"]


def test_the_default_target_is_the_service_on_the_runtime(stages: dict[str, Stage]) -> None:
    # `docker build .` builds the last stage: the lean service image, not the agents' one.
    assert list(stages)[-1] == DEFAULT_TARGET
    assert [s.name for s in lineage(stages, DEFAULT_TARGET)] == ["runtime", DEFAULT_TARGET]
    assert [s.name for s in lineage(stages, "agents")] == ["runtime", "agents"]


def test_build_and_runtime_share_one_slim_python_311(stages: dict[str, Stage]) -> None:
    # The virtual environment is copied from build to runtime: its python links must resolve.
    assert stages["build"].base.startswith("python:3.11-slim")
    assert stages["runtime"].base == stages["build"].base
    copies = [a for k, a in stages["runtime"].instructions if k == "COPY"]
    assert "--from=build /opt/ratchet /opt/ratchet" in copies
    envs = " ".join(a for k, a in stages["runtime"].instructions if k == "ENV")
    assert "PATH=/opt/ratchet/bin:$PATH" in envs


def test_git_and_bubblewrap_are_installed_without_recommends_and_lists_cleaned(
    stages: dict[str, Stage],
) -> None:
    apt = [run for run in runs(stages["runtime"].instructions) if "apt-get install" in run]
    assert len(apt) == 1
    assert re.search(r"--no-install-recommends\b.*\bgit\b", apt[0])
    assert re.search(r"--no-install-recommends\b.*\bbubblewrap\b", apt[0])  # the sandbox
    assert "rm -rf /var/lib/apt/lists/*" in apt[0]  # in the same layer, or it saves nothing


@pytest.mark.parametrize("target", [DEFAULT_TARGET, "agents"])
def test_runs_as_non_root_before_the_entrypoint(stages: dict[str, Stage], target: str) -> None:
    instructions = effective(stages, target)
    users = [i for i, (name, _) in enumerate(instructions) if name == "USER"]
    assert instructions[users[-1]][1].split(":")[0] not in {"root", "0"}
    assert not runs(instructions[users[-1]:]), "something runs as root after the last USER"
    entrypoint = max(i for i, (name, _) in enumerate(instructions) if name == "ENTRYPOINT")
    assert users[0] < entrypoint


@pytest.mark.parametrize("target", [DEFAULT_TARGET, "agents"])
def test_entrypoint_is_exec_form_so_signals_reach_ratchet(
    stages: dict[str, Stage], target: str,
) -> None:
    # Shell form would run `/bin/sh -c ratchet`: docker stop's SIGTERM would stop at the shell.
    assert entry_command(stages, target) == ["ratchet", "serve", "--host", "0.0.0.0",
                                             "--port", "8000"]
    instructions = effective(stages, target)
    assert json.loads(last(instructions, "ENTRYPOINT")) == ["ratchet"]


def test_healthcheck_asks_healthz_without_curl(stages: dict[str, Stage]) -> None:
    instructions = effective(stages, DEFAULT_TARGET)
    healthcheck = last(instructions, "HEALTHCHECK")
    command = json.loads(healthcheck[healthcheck.index("CMD ") + 4:])
    assert command[0] == "python"
    assert "urllib.request" in command[-1]
    assert "http://127.0.0.1:8000/healthz" in command[-1]
    assert last(instructions, "EXPOSE") == "8000"


def test_ratchet_home_is_a_volume(stages: dict[str, Stage]) -> None:
    instructions = effective(stages, DEFAULT_TARGET)
    assert image_environment(stages, DEFAULT_TARGET)["RATCHET_HOME"] == "/var/lib/ratchet"
    assert json.loads(last(instructions, "VOLUME")) == ["/var/lib/ratchet"]


def test_installs_the_project_from_exactly_its_sources(stages: dict[str, Stage]) -> None:
    build = stages["build"].instructions
    sources = " ".join(arguments for name, arguments in build if name == "COPY")
    for needed in ["pyproject.toml", "README.md", *(f"{p}/" for p in PACKAGES)]:
        assert needed in sources.split(), f"the Dockerfile does not COPY {needed}"
    assert any("/opt/ratchet/bin/pip install --no-cache-dir ." in run for run in runs(build))
    # The sources stay in the build stage; the runtime copies only the environment.
    assert not [a for k, a in stages["runtime"].instructions
                if k == "COPY" and not a.startswith("--from=")]


def test_dockerignore_lets_the_copied_sources_through() -> None:
    rules = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert rules[0] == "*", "start from an allow-list so secrets and .venv never reach the build"
    for needed in ["pyproject.toml", "README.md", *(f"{p}/" for p in PACKAGES)]:
        assert f"!{needed}" in rules


# --- the agents target: node and the pinned CLIs -------------------------------------------


def _pins(stage: Stage) -> tuple[dict[str, str], dict[str, str]]:
    """The npm and PyPI packages the stage installs, by name: version."""
    npm: dict[str, str] = {}
    pypi: dict[str, str] = {}
    for run in runs(stage.instructions):
        for command in re.split(r"&&|;", run):
            words = shlex.split(command)
            if words[:2] == ["npm", "install"]:
                for word in words[2:]:
                    if not word.startswith("-"):
                        name, at, version = word.rpartition("@")
                        assert at and name, f"npm installs {word} without a version"
                        npm[name] = version
            elif len(words) > 1 and words[0].endswith("/pip") and words[1] == "install":
                for word in words[2:]:
                    if not word.startswith("-"):
                        name, equals, version = word.partition("==")
                        assert equals, f"pip installs {word} without a pinned version"
                        pypi[name] = version
    return npm, pypi


def test_the_agents_target_installs_exactly_the_pinned_clis(stages: dict[str, Stage]) -> None:
    npm, pypi = _pins(stages["agents"])
    assert npm == {c.package: c.version for c in CLIS.values() if c.registry == "npm"}, (
        "the agents target's npm CLIs must be tests/agents/clis.py's pins")
    assert pypi == {c.package: c.version for c in CLIS.values() if c.registry == "pypi"}, (
        "the agents target's PyPI CLIs must be tests/agents/clis.py's pins")


def test_the_agents_target_has_node_and_every_program_on_path(stages: dict[str, Stage]) -> None:
    agents = stages["agents"]
    assert stages["node"].base.startswith("node:"), "node comes from its official image"
    copies = [a for k, a in agents.instructions if k == "COPY"]
    assert "--from=node /usr/local/bin/node /usr/local/bin/node" in copies
    text = " ".join(runs(agents.instructions))
    assert "npm install --global" in text  # their programs land in /usr/local/bin
    for cli in CLIS.values():
        if cli.registry == "pypi":  # an environment of its own, its program linked onto PATH
            assert (f"ln -s /opt/{cli.program}/bin/{cli.program} /usr/local/bin/{cli.program}"
                    in text)


# --- the README's docker commands -----------------------------------------------------------


def serving_runs() -> list[DockerRun]:
    return [run for run in readme_docker_runs() if run.entrypoint is None
            and (not run.command or run.command[0] == "serve")]


def test_every_readme_docker_run_uses_an_image_the_readme_builds(
    stages: dict[str, Stage],
) -> None:
    tags = readme_built_tags()
    assert set(tags.values()) <= set(stages), "the README builds a target the Dockerfile lacks"
    for run in readme_docker_runs():
        assert run.image in tags, f"`docker run ... {run.image}`: no `docker build -t` makes it"


def test_readme_docker_runs_name_the_image_s_port_volume_and_settings(
    stages: dict[str, Stage],
) -> None:
    instructions = effective(stages, DEFAULT_TARGET)
    home = json.loads(last(instructions, "VOLUME"))[0]
    port = last(instructions, "EXPOSE")
    assert serving_runs(), "the README never runs the service"
    for run in readme_docker_runs():
        assert any(target == home for _, target in run.volumes), "the ledger must persist"
        for name in run.environment:
            if name.startswith("RATCHET_"):
                assert name in KNOWN_SETTINGS, f"the README's docker run sets {name}, no setting"
    for run in serving_runs():
        assert "--init" in run.options  # tini reaps the orphaned grandchildren
        assert any(p.split(":")[-1] == port for p in run.ports), f"port {port} not published"
        # Agents and checks run in bubblewrap: Docker's default profiles refuse its unshare.
        assert {"seccomp=unconfined", "apparmor=unconfined"} <= set(run.security)


def docker_environment(host: Host, run: DockerRun, stages: dict[str, Stage]) -> dict[str, str]:
    """What ``ratchet`` in the container of ``run`` sees, on this host."""
    for source, target in run.volumes:
        host.volume(target, source)
    return host.environment(image_environment(stages, readme_built_tags()[run.image]),
                            run.environment)


def copy_in(host: Host, run: DockerRun) -> None:
    """A ``docker run --entrypoint sh IMAGE -c SCRIPT < FILE`` of the README, run here."""
    for source, target in run.volumes:
        host.volume(target, source)
    assert run.entrypoint == "sh" and run.command[0] == "-c" and run.stdin, run
    host.copy_in(run.command[1], run.stdin)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    with FakeGitHub() as fake:
        yield Host(tmp_path, fake)


def copying_runs() -> list[DockerRun]:
    """The README's ``docker run`` that put a file into a volume (``--entrypoint sh``)."""
    return [run for run in readme_docker_runs() if run.entrypoint is not None]


def test_the_readme_docker_run_starts_and_github_accepts_the_app(
    host: Host, stages: dict[str, Stage],
) -> None:
    assert copying_runs(), "the README copies the App's credentials into the volume"
    for copy in copying_runs():
        copy_in(host, copy)
    for run in serving_runs():
        env = docker_environment(host, run, stages)
        # Copied as the README says: readable by the image's user only.
        credentials = Path(env["RATCHET_GITHUB_CREDENTIALS"])
        assert credentials.read_bytes() == host.credentials.read_bytes()
        assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
        command = entry_command(stages, readme_built_tags()[run.image], run.command or None)
        with serving(command, env, host.root) as url:
            ready = httpx.get(f"{url}/readyz", timeout=10).json()
        assert ready["checks"]["github-app"] == "ok", ready
        assert ready["checks"]["webhook-secret"] == "ok", ready


def test_the_readme_docker_run_without_the_credentials_exits_naming_what_to_set(
    host: Host, stages: dict[str, Stage],
) -> None:
    run = serving_runs()[0]  # the copy-in step forgotten
    env = docker_environment(host, run, stages)
    command = entry_command(stages, readme_built_tags()[run.image], run.command or None)
    log = host.root / "refused.log"
    proc = ratchet_process(command, env, cwd=host.root, log=log)
    try:
        assert proc.wait(60) == 2  # usage: a setting is missing
    finally:
        stop(proc)
    said = " ".join(log.read_text().split())
    assert "refusing to serve" in said
    for name in SIGN_IN:
        assert name in said, said
    assert "`ratchet github-app create` writes the App" in said
    assert env["RATCHET_GITHUB_CREDENTIALS"] in said  # where it looked
