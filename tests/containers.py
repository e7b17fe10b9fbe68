"""What the container tests share: the Dockerfile's stages, the README's ``docker`` commands,
and the image's entry command run as a process of this host.

No container engine runs here: a container's command is run as it would run in the image
(its ``ENTRYPOINT`` and ``CMD``, the image's ``ENV``, the environment a ``docker run`` or
compose service gives it), with each path inside the container (a volume, a mounted secret)
mapped to a folder of the test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.credentials_file import CREDENTIALS_VAR, AppCredentialsFile, write_credentials
from app.settings import Settings
from tests.fakes.fakegithub import FakeGitHub
from tests.services import free_port

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TARGET = "service"  # the Dockerfile's last stage: what `docker build .` makes
START_SECONDS = 30.0  # the most a service may take to answer /healthz (slow CI machines)
# The RATCHET_* variables Ratchet reads as settings (app/settings.py), and where the App's
# credentials file is (app/credentials_file.py).
KNOWN_SETTINGS = frozenset({*(f"RATCHET_{name.upper()}" for name in Settings.model_fields),
                            CREDENTIALS_VAR})
# The App `ratchet github-app create` registered, as its credentials file says.
APP_ID, APP_SLUG, PUBLIC_URL = 123456, "my-ratchet", "https://ratchet.example.com"


@dataclass(frozen=True)
class Stage:
    name: str
    base: str  # an image, or an earlier stage's name
    instructions: tuple[tuple[str, str], ...]  # (INSTRUCTION, arguments) after its FROM


def instructions_of(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with comments dropped and continuations joined."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    result = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, arguments = line.strip().partition(" ")
            result.append((keyword.upper(), " ".join(arguments.split())))
    return result


def parse_stages(text: str) -> dict[str, Stage]:
    """Each ``FROM image AS name`` stage, in order (a dict keeps it)."""
    stages: dict[str, Stage] = {}
    name, base, body = "", "", []
    for keyword, arguments in instructions_of(text):
        if keyword == "FROM":
            if name:
                stages[name] = Stage(name, base, tuple(body))
            found = re.fullmatch(r"(\S+) AS (\S+)", arguments, flags=re.IGNORECASE)
            assert found, f"every stage is named (FROM image AS name): FROM {arguments}"
            base, name, body = found[1], found[2], []
        else:
            assert name, f"{keyword} before the first FROM"
            body.append((keyword, arguments))
    stages[name] = Stage(name, base, tuple(body))
    return stages


def dockerfile_stages() -> dict[str, Stage]:
    return parse_stages((ROOT / "Dockerfile").read_text())


def lineage(stages: Mapping[str, Stage], target: str) -> list[Stage]:
    """The target's stages from the first one it builds on, the target last."""
    chain = [stages[target]]
    while chain[0].base in stages:
        chain.insert(0, stages[chain[0].base])
    return chain


def effective(stages: Mapping[str, Stage], target: str) -> list[tuple[str, str]]:
    """Every instruction that shapes the target image, inherited ones first."""
    return [pair for stage in lineage(stages, target) for pair in stage.instructions]


def last(instructions: Sequence[tuple[str, str]], keyword: str) -> str:
    found = [arguments for name, arguments in instructions if name == keyword]
    assert found, f"no {keyword} in the image"
    return found[-1]


def image_environment(stages: Mapping[str, Stage], target: str) -> dict[str, str]:
    """The target's ``ENV`` (``KEY=value`` forms), PATH left to the host."""
    env: dict[str, str] = {}
    for keyword, arguments in effective(stages, target):
        if keyword == "ENV":
            for word in shlex.split(arguments):
                name, _, value = word.partition("=")
                if name != "PATH":
                    env[name] = value
    return env


def entry_command(stages: Mapping[str, Stage], target: str,
                  command: Sequence[str] | None = None) -> list[str]:
    """``ENTRYPOINT`` plus ``command`` (or the image's ``CMD``), as exec-form words."""
    instructions = effective(stages, target)
    entrypoint = json.loads(last(instructions, "ENTRYPOINT"))
    return [*entrypoint, *(command or json.loads(last(instructions, "CMD")))]


# --- the README ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DockerRun:
    """One ``docker run`` of the README: its options and what it asks the image to do."""

    options: list[str]
    environment: dict[str, str | None]  # None: passed from the host's environment (-e NAME)
    volumes: list[tuple[str, str]]  # (source, target in the container)
    ports: list[str]
    security: list[str]
    entrypoint: str | None
    image: str
    command: list[str]
    stdin: str | None  # the file after ``<``


def readme_commands(prefix: str) -> list[list[str]]:
    """The README's shell lines starting with ``prefix`` (continuations joined), as words."""
    text = (ROOT / "README.md").read_text()
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL):
        for line in re.sub(r"\\\n", " ", block).splitlines():
            words = shlex.split(line, comments=True)
            if words[:len(prefix.split())] == prefix.split():
                found.append(words)
    return found


_VALUED = {"-e", "--env", "-v", "--volume", "-p", "--publish", "--security-opt", "--name",
           "--env-file", "--entrypoint"}


def parse_docker_run(words: list[str]) -> DockerRun:
    assert words[:2] == ["docker", "run"], words
    options: list[str] = []
    environment: dict[str, str | None] = {}
    volumes: list[tuple[str, str]] = []
    ports: list[str] = []
    security: list[str] = []
    entrypoint = stdin = None
    rest = words[2:]
    if "<" in rest:
        at = rest.index("<")
        rest, stdin = rest[:at], rest[at + 1]
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        options.append(option)
        if option not in _VALUED:
            continue
        value = rest.pop(0)
        if option in {"-e", "--env"}:
            name, equals, text = value.partition("=")
            environment[name] = text if equals else None
        elif option in {"-v", "--volume"}:
            source, target = value.split(":")[:2]
            volumes.append((source, target))
        elif option in {"-p", "--publish"}:
            ports.append(value)
        elif option == "--security-opt":
            security.append(value)
        elif option == "--entrypoint":
            entrypoint = value
    assert rest, f"`{shlex.join(words)}` names no image"
    return DockerRun(options, environment, volumes, ports, security, entrypoint, rest[0],
                     rest[1:], stdin)


def readme_docker_runs() -> list[DockerRun]:
    found = [parse_docker_run(words) for words in readme_commands("docker run")]
    assert found, "the README has no `docker run`"
    return found


def readme_built_tags() -> dict[str, str]:
    """The README's ``docker build`` commands: tag -> target."""
    tags = {}
    for words in readme_commands("docker build"):
        tag = words[words.index("-t") + 1]
        tags[tag] = words[words.index("--target") + 1] if "--target" in words else DEFAULT_TARGET
    return tags


# --- running the entry command on this host -------------------------------------------------


def map_paths(value: str, mounts: Mapping[str, Path]) -> str:
    """``value`` with a path inside the container replaced by the test's folder for it."""
    for target, source in sorted(mounts.items(), key=lambda item: -len(item[0])):
        if value == target or value.startswith(target.rstrip("/") + "/"):
            return str(source) + value[len(target):]
    return value


def with_port(command: Sequence[str], port: int) -> list[str]:
    """The command serving on ``port`` instead of the one it names (8000 is not free here)."""
    words = list(command)
    if "--port" in words:
        words[words.index("--port") + 1] = str(port)
    else:
        words += ["--port", str(port)]
    return words


def host_environment(container: Mapping[str, str]) -> dict[str, str]:
    """This host's environment without its own Ratchet settings, plus the container's."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")}
    return {**base, **container}


def ratchet_process(command: Sequence[str], env: Mapping[str, str], *, cwd: Path,
                    log: Path) -> subprocess.Popen[bytes]:
    """``ratchet ...`` (the image's entrypoint) as this checkout's ``python -m app.cli``."""
    assert command[0] == "ratchet", command
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "app.cli", *command[1:]], cwd=cwd,
                                env=dict(env), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Return once ``url``/healthz answers 200; fail quoting the log if the process ends."""
    deadline = time.monotonic() + START_SECONDS
    with httpx.Client(timeout=5) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"exited {proc.returncode}:\n{log.read_text()}")
            try:
                if client.get(f"{url}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    raise AssertionError(f"did not answer /healthz in {START_SECONDS} s:\n{log.read_text()}")


def key_pem() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class Host:
    """This host standing in for Docker: named volumes and mounts as folders of the test, the
    files the README copies into them (the App's credentials file, as ``ratchet github-app
    create`` writes it), the fake GitHub answering for github.com with that App."""

    def __init__(self, root: Path, fake: FakeGitHub) -> None:
        self.root, self.fake, self.key = root, fake, key_pem()
        self.mounts: dict[str, Path] = {}
        fake.register_app(app_id=APP_ID, slug=APP_SLUG, private_key_pem=self.key)
        self.credentials = root / "github-app.json"
        write_credentials(self.credentials, AppCredentialsFile(
            app_id=APP_ID, slug=APP_SLUG, private_key=self.key.decode(),
            webhook_secret="webhook-secret-from-github", client_id="Iv1.from-github",
            client_secret="client-secret-from-github", api_url=fake.base_url,
            web_url=fake.base_url, html_url=f"{fake.base_url}/apps/{APP_SLUG}",
            public_url=PUBLIC_URL), overwrite=False)

    def volume(self, target: str, name: str) -> Path:
        """The folder standing in for volume (or bind mount) ``name`` at ``target``."""
        folder = self.root / "volumes" / Path(name).name
        folder.mkdir(parents=True, exist_ok=True)
        self.mounts[target] = folder
        return folder

    def copy_in(self, script: str, stdin: str) -> None:
        """``sh -c SCRIPT < STDIN`` as the image's shell runs it, its paths mapped; the file
        on stdin is the one of that name this host has (the credentials file)."""
        for target, folder in self.mounts.items():
            script = script.replace(target, str(folder))
        with (self.root / Path(stdin).name).open("rb") as source:
            subprocess.run(["sh", "-c", script], stdin=source, check=True, cwd=self.root)

    def environment(self, image: Mapping[str, str],
                    given: Mapping[str, str | None]) -> dict[str, str]:
        """What the container's ``ratchet`` sees: the image's ENV and the variables given
        (``None``: passed from the host, here a placeholder), paths mapped."""
        env = {CREDENTIALS_VAR: str(self.root / "nowhere" / "github-app.json"), **image}
        for name, value in given.items():
            env[name] = f"placeholder-{name.lower()}" if value is None else value
        env = {name: map_paths(value, self.mounts) for name, value in env.items()}
        # The agent named is a real CLI this host may lack (the image has it): a stand-in.
        env.pop("RATCHET_AGENT", None)
        env["RATCHET_AGENT_COMMAND"] = "true"
        return host_environment(env)


@contextmanager
def serving(command: Sequence[str], env: Mapping[str, str], root: Path,
            name: str = "serve") -> Iterator[str]:
    """Run a serving entry command on a free port; yield its URL, stop it on the way out."""
    port = free_port()
    log = root / f"{name}.log"
    proc = ratchet_process(with_port(command, port), env, cwd=root, log=log)
    try:
        wait_healthy(proc, f"http://127.0.0.1:{port}", log)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(10)
