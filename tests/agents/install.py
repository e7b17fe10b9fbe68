"""Install the pinned agent CLIs (``clis.py``) into their cache: ``make test-agents`` runs it.

A CLI already installed is left alone. A registry that does not answer skips its CLIs (the
tests then skip, saying why); an install that fails while the registry answers is an error
under ``CI=true`` and a warning elsewhere. Usage: ``python tests/agents/install.py [preset...]``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.agents.clis import CLIS, Cli

REGISTRIES = {"npm": "https://registry.npmjs.org/", "pypi": "https://pypi.org/simple/"}
TIMEOUT_S = 600


def reachable(cli: Cli) -> bool:
    """Whether the CLI's registry answers (npm's own configured registry for npm)."""
    if cli.registry == "npm":
        try:
            found = subprocess.run(["npm", "view", f"{cli.package}@{cli.version}", "version"],
                                   capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return found.returncode == 0 and found.stdout.strip() == cli.version
    try:
        with urllib.request.urlopen(REGISTRIES["pypi"] + cli.package + "/", timeout=20):
            return True
    except OSError:
        return False


def install(cli: Cli) -> None:
    """Install ``cli`` into a fresh cache folder; ``.complete`` marks it whole (a venv records
    its own path, so it is built where it stays)."""
    shutil.rmtree(cli.folder, ignore_errors=True)
    cli.folder.mkdir(parents=True)
    if cli.registry == "npm":
        commands = [["npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix",
                     str(cli.folder), f"{cli.package}@{cli.version}"]]
    else:
        commands = [[sys.executable, "-m", "venv", str(cli.folder / "venv")],
                    [str(cli.folder / "venv/bin/python"), "-m", "pip", "install", "-q",
                     f"{cli.package}=={cli.version}"]]
    for command in commands:
        subprocess.run(command, check=True, timeout=TIMEOUT_S, stdout=subprocess.DEVNULL)
    (cli.folder / ".complete").write_text(f"{cli.package} {cli.version}\n")


def main(names: list[str]) -> int:
    in_ci = os.environ.get("CI", "").lower() == "true"
    failed = []
    for name in names or list(CLIS):
        cli = CLIS[name]
        if cli.installed:
            continue
        if not reachable(cli):
            print(f"test-agents: {cli.registry} does not answer for {cli.package}"
                  f" {cli.version}: its tests skip", file=sys.stderr)
            continue
        print(f"test-agents: installing {cli.package} {cli.version} into {cli.folder}",
              file=sys.stderr)
        try:
            install(cli)
        except (OSError, subprocess.SubprocessError) as exc:
            print(f"test-agents: installing {cli.package} {cli.version} failed: {exc}",
                  file=sys.stderr)
            failed.append(cli.package)
    if failed and in_ci:
        print(f"test-agents: {', '.join(failed)} failed to install while the registry answers"
              " (CI=true)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
