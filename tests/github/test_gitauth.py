"""Git over HTTP(S) with the installation token from a credential helper, end to end."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from github.gitauth import GIT_TOKEN_VARIABLE, git_credentials
from plumbing.git import Git, GitError
from tests.fakes.conftest import Origin
from tests.github.githttp import GitHttpServer
from tests.gitrepo import commit_all, git, write_files

TOKEN = "ghs_" + "T0k3n" * 8


@pytest.fixture
def server(origin: Origin) -> Iterator[GitHttpServer]:
    with GitHttpServer(origin.bare.parent, username="x-access-token", password=TOKEN) as running:
        yield running


def new_commit(origin: Origin) -> str:
    git(origin.work, "checkout", "--quiet", "-b", "pushed")
    write_files(origin.work, {"pushed.txt": "over http\n"})
    return commit_all(origin.work, "pushed over http")


def ratchet_git(origin: Origin, config: tuple[str, ...] = ()) -> Git:
    return Git(git_dir=origin.work / ".git", work_tree=origin.work, config=config)


def test_a_push_with_the_token_succeeds(origin: Origin, server: GitHttpServer) -> None:
    sha = new_commit(origin)
    url = f"{server.base_url}/widgets.git"
    config, env = git_credentials(TOKEN, remote_url=url)
    ratchet_git(origin, config).run("push", url, "pushed:refs/heads/pushed", env=env)
    assert git(origin.bare, "rev-parse", "refs/heads/pushed").strip() == sha
    seen = server.seen
    assert not seen[0][2] and all(ok for _, _, ok in seen[1:])  # asked, then authorised
    assert TOKEN not in " ".join(config)  # the token travels in the environment only
    assert config[0].startswith(f"credential.{server.base_url}.helper=!")
    assert env == {GIT_TOKEN_VARIABLE: TOKEN}


def test_without_the_helper_or_with_another_token_the_push_fails(
    origin: Origin, server: GitHttpServer
) -> None:
    new_commit(origin)
    url = f"{server.base_url}/widgets.git"
    with pytest.raises(GitError) as refused:
        ratchet_git(origin).run("push", url, "pushed:refs/heads/pushed")
    assert "could not read Username" in refused.value.stderr  # nobody to ask: no prompt
    config, _ = git_credentials(TOKEN, remote_url=url)
    wrong_config, wrong_env = git_credentials("ghs_" + "w" * 36, remote_url=url)
    with pytest.raises(GitError) as wrong:
        ratchet_git(origin, wrong_config).run(
            "push", url, "pushed:refs/heads/pushed", env=wrong_env
        )
    with pytest.raises(GitError):  # the helper, but no token in this call's environment
        ratchet_git(origin, config).run("push", url, "pushed:refs/heads/pushed")
    assert "Authentication failed" in wrong.value.stderr
    assert TOKEN not in str(wrong.value) and "w" * 36 not in str(wrong.value)
    assert not git(origin.bare, "branch", "--list", "pushed").strip()


def test_the_token_is_offered_only_to_the_remotes_host(
    origin: Origin, server: GitHttpServer
) -> None:
    new_commit(origin)
    url = f"{server.base_url}/widgets.git"
    config, env = git_credentials(TOKEN, remote_url="https://github.com/acme/widgets.git")
    with pytest.raises(GitError):
        ratchet_git(origin, config).run("push", url, "pushed:refs/heads/pushed", env=env)
    assert not any(ok for _, _, ok in server.seen)


def test_file_remotes_work_with_the_same_settings(origin: Origin) -> None:
    sha = new_commit(origin)
    url = origin.bare.as_uri()
    config, env = git_credentials(TOKEN, remote_url=url)
    ratchet_git(origin, config).run("push", url, "pushed:refs/heads/pushed", env=env)
    assert git(origin.bare, "rev-parse", "refs/heads/pushed").strip() == sha


def test_the_helper_answers_only_get(tmp_path: Path) -> None:
    config, env = git_credentials(TOKEN, remote_url="https://github.com/acme/widgets.git")
    helper = config[0].partition("=")[2].removeprefix("!")
    asked = b"protocol=https\nhost=github.com\n\n"

    def run(action: str, environment: dict[str, str]) -> str:
        return subprocess.run(
            ["sh", "-c", f"{helper} {action}"],
            input=asked,
            env=environment,
            capture_output=True,
            check=True,
        ).stdout.decode()

    assert run("get", env) == f"username=x-access-token\npassword={TOKEN}\n"
    assert run("store", env) == "" and run("erase", env) == ""
    assert run("get", {}) == ""


@pytest.mark.parametrize("token", ["", "two words", "line\nbreak"])
def test_tokens_git_could_not_carry_are_refused(token: str) -> None:
    with pytest.raises(ValueError, match="no whitespace"):
        git_credentials(token, remote_url="https://github.com/acme/widgets.git")
