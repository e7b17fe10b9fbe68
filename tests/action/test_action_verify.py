"""Verify mode through ``action.yml``, on a ``pull_request`` event, against the fake GitHub.

Passing and failing plans give the right exit status, outputs, step summary, annotations and
one ``ratchet/verify`` check run per head (a re-run updates it); a fork's pull request, whose
token is read-only, still gets the summary and annotations and makes no check run call; a bad
repository config is an error annotation naming the file and line. The token never shows in
the job's output or summary.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.action.conftest import (
    JOB_TOKEN,
    OWNER,
    READ_ONLY_TOKEN,
    REPO,
    WRITER,
    Scene,
    example,
)
from tests.gitrepo import commit_all, git, write_files

CONFIG = "verify:\n  checks:\n    - {id: unit, kind: test, run: 'python3 -m unittest -q'}\n"
CALC = "def add(a, b):\n    return a + b\n"
TEST = ("import unittest\n\nimport calc\n\n\nclass AddTest(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n")
BUGGY = "def add(a, b):\n    return a - b\n"


@pytest.fixture
def scene(open_scene: Any) -> Scene:
    return open_scene({".github/ratchet.yml": CONFIG, "README.md": "# widgets\n",
                       "calc.py": CALC, "test_calc.py": TEST})


def pull_request(scene: Scene, files: dict[str, str], *, fork: bool = False,
                 action: str = "opened") -> tuple[dict[str, Any], Path, str]:
    """A pull request changing ``files`` (branch ``feature``), its ``pull_request.opened``
    payload, and the job's workspace as ``actions/checkout`` with ``fetch-depth: 0`` leaves it."""
    work = scene.root / "author"
    git(scene.root, "clone", "--quiet", scene.bare.as_uri(), str(work))
    git(work, "checkout", "--quiet", "-b", "feature")
    write_files(work, files)
    head = commit_all(work, "change calc")
    git(work, "push", "--quiet", "origin", "feature")
    number = scene.fake.create_pull(OWNER, REPO, head="feature", base="main",
                                    title="Change calc", author=WRITER)
    payload = scene.common(example("pull_request", action), WRITER)
    payload["number"] = number
    payload["pull_request"] = scene.read(f"/repos/{OWNER}/{REPO}/pulls/{number}")
    if fork:
        payload["pull_request"]["head"]["repo"]["full_name"] = "mallory/widgets"
    workspace = scene.root / "checkout"
    git(scene.root, "clone", "--quiet", scene.bare.as_uri(), str(workspace))
    git(workspace, "checkout", "--quiet", "--detach", head)
    return payload, workspace, head


def check_calls(scene: Scene) -> list[str]:
    return [f"{c.method} {c.path}" for c in scene.fake.calls() if "check-runs" in c.path]


def assert_no_secret(result: Any, *tokens: str) -> None:
    for token in tokens:
        for text in (result.stdout, result.stderr, result.summary, json.dumps(result.outputs)):
            assert token not in text


def test_a_passing_pull_request_gets_a_summary_outputs_and_one_check_run(scene: Scene) -> None:
    payload, workspace, head = pull_request(scene, {"calc.py": CALC + "\n# steady\n"})
    job = scene.job("pull_request", payload, workspace=workspace)
    result = scene.run(job, mode="verify")

    assert result.exit_code == 0, result.stderr
    assert result.outputs["conclusion"] == "success"
    assert re.fullmatch(r"[0-9a-f]{64}", result.outputs["plan-hash"])
    bundle = Path(result.outputs["bundle"])
    assert json.loads((bundle / "result.json").read_text())["conclusion"] == "success"
    assert (bundle / "plan.json").is_file() and (bundle / "summary.md").is_file()
    assert result.outputs["run-id"] == "" and result.outputs["state"] == ""
    assert "## Ratchet verification: All 1 checks passed" in result.summary
    assert "`unit`" in result.summary and "passed" in result.summary
    assert result.annotations == []

    [check] = scene.fake.check_runs(OWNER, REPO, head)
    assert (check.name, check.conclusion, check.status) == ("ratchet/verify", "success",
                                                           "completed")
    assert check.external_id == f"ratchet-action:ratchet/verify:{head}"
    assert check.app.slug == "github-actions"
    assert "Check run: [ratchet/verify]" in result.summary

    # "Re-run all jobs": the same head keeps one check run, updated in place.
    again = scene.run(scene.job("pull_request", payload, workspace=workspace,
                                run_id=job.run_id, attempt=2), mode="verify")
    assert again.exit_code == 0
    assert len(scene.fake.check_runs(OWNER, REPO, head)) == 1
    assert_no_secret(result, JOB_TOKEN)
    assert_no_secret(again, JOB_TOKEN)
    scene.fake.assert_clean()


def test_a_failing_pull_request_fails_with_each_failure_annotated_once_on_its_check_run(
        scene: Scene) -> None:
    payload, workspace, head = pull_request(scene, {"calc.py": BUGGY})
    result = scene.run(scene.job("pull_request", payload, workspace=workspace), mode="verify")

    assert result.exit_code == 1, result.stderr
    assert result.outputs["conclusion"] == "failure"
    assert "1 of 1 checks did not pass" in result.summary
    assert "AssertionError" in result.summary  # the failing check's log tail
    # The failing test, named where it failed, in the step summary and the check run.
    named = "- `test_calc.AddTest.test_add` at `test_calc.py:8`"
    assert named in result.summary

    # Each failure annotated once: on the check run, so the job emits no ::error for it.
    [check] = scene.fake.check_runs(OWNER, REPO, head)
    assert check.conclusion == "failure" and check.name == "ratchet/verify"
    assert [(a["path"], a["start_line"]) for a in check.annotations] == [("test_calc.py", 8)]
    assert named in (check.output_text or "")
    assert result.annotations_at("error") == [], result.stdout
    assert "annotations are on the check run" in result.summary
    assert_no_secret(result, JOB_TOKEN)


def test_a_fork_pull_request_with_a_read_only_token_makes_no_check_run_call(
        scene: Scene) -> None:
    scene.fake.add_token(READ_ONLY_TOKEN, login="github-actions[bot]",
                         permissions={"contents": "read", "metadata": "read"},
                         repos=[f"{OWNER}/{REPO}"])
    payload, workspace, _ = pull_request(scene, {"calc.py": BUGGY}, fork=True)
    before = len(scene.fake.calls())
    result = scene.run(scene.job("pull_request", payload, workspace=workspace,
                                 token=READ_ONLY_TOKEN), mode="verify")

    assert result.exit_code == 1
    assert result.outputs["conclusion"] == "failure"
    assert "1 of 1 checks did not pass" in result.summary
    assert "read-only token" in result.summary and "fork" in result.summary
    # No check run to carry the annotations: the job's workflow commands do, once each.
    assert [(e.properties["file"], e.properties["line"])
            for e in result.annotations_at("error")] == [("test_calc.py", "8")]
    assert scene.fake.calls()[before:] == []  # not even a lookup
    assert check_calls(scene) == [] and scene.fake.check_runs(OWNER, REPO) == []
    assert_no_secret(result, READ_ONLY_TOKEN)


def test_a_bad_config_is_an_error_annotation_naming_file_and_line(open_scene: Any) -> None:
    broken = CONFIG + "    - {id: lint, kind: nonsense, run: 'true'}\n"
    scene = open_scene({".github/ratchet.yml": broken, "calc.py": CALC, "test_calc.py": TEST})
    payload, workspace, _ = pull_request(scene, {"calc.py": CALC + "\n# steady\n"})
    result = scene.run(scene.job("pull_request", payload, workspace=workspace), mode="verify")

    assert result.exit_code == 2
    assert result.outputs["conclusion"] == "error"
    [error] = result.annotations_at("error")
    assert error.properties["file"] == ".github/ratchet.yml"
    assert error.properties["line"] == "4"
    assert "kind" in error.message
    assert ".github/ratchet.yml" in result.summary
    assert check_calls(scene) == []


def test_a_token_without_checks_write_is_told_in_the_summary(scene: Scene) -> None:
    scene.fake.add_token(READ_ONLY_TOKEN, login="github-actions[bot]",
                         permissions={"contents": "read", "metadata": "read"},
                         repos=[f"{OWNER}/{REPO}"])
    payload, workspace, head = pull_request(scene, {"calc.py": CALC + "\n# steady\n"})
    result = scene.run(scene.job("pull_request", payload, workspace=workspace,
                                 token=READ_ONLY_TOKEN), mode="verify")

    assert result.exit_code == 0  # the verification passed; only the check run is missing
    assert "permissions: checks: write" in result.summary
    assert scene.fake.check_runs(OWNER, REPO, head) == []
    assert_no_secret(result, READ_ONLY_TOKEN)


# The fork's own config: a check that prints every credential it can name.
STEAL = ("verify:\n  checks:\n    - {id: steal, kind: test, run: 'echo STOLEN $GITHUB_TOKEN;"
         " cat .git/config; env'}\n")
# The fork's test: what any test a pull request brings can do. It looks for the checkout's git
# config from its worktree's .git file (and any file that config includes), reads the whole
# environment and every process's it can see, and prints it all base64-encoded in its log (and
# to a file outside, when it can reach one). ``hostile(loot, procs)`` is its source.
HOSTILE = """import base64, os, pathlib, re, unittest

import calc


def read(path):
    try:
        return pathlib.Path(path).read_text(errors='replace')
    except OSError as exc:
        return f'{path}: {exc}'


def loot():
    found = [repr(sorted(os.environ.items()))]
    if %r:  # every process it can see (unconfined: the whole host's, so not there)
        found += [read(f'/proc/{p}/environ') for p in os.listdir('/proc') if p.isdigit()]
    try:
        gitdir = pathlib.Path(read('.git').split('gitdir:')[1].strip())
        config = (gitdir / read(gitdir / 'commondir').strip()).resolve() / 'config'
    except (IndexError, OSError) as exc:
        return '\\n'.join([*found, repr(exc)])
    text = read(config)
    found.append(text)
    found += [read(included.strip()) for included in re.findall(r'path = (.+)', text)]
    return '\\n'.join(found)


class AddTest(unittest.TestCase):
    def test_add(self):
        stolen = loot()
        try:
            pathlib.Path(%r).write_text(stolen)
        except OSError:
            pass
        print('LOOT', base64.b64encode(stolen.encode()).decode())
        self.assertEqual(calc.add(2, 3), 5)
"""


def hostile(loot: Path, *, procs: bool = True) -> str:
    return HOSTILE % (procs, str(loot))


def persist_credentials(scene: Scene, workspace: Path) -> str:
    """What actions/checkout leaves with persist-credentials on: v4's header in .git/config,
    later versions' file under RUNNER_TEMP that .git/config includes, and a token in a URL;
    the header's base64 form of the token."""
    basic = base64.b64encode(f"x-access-token:{JOB_TOKEN}".encode()).decode()
    header = f"AUTHORIZATION: basic {basic}"
    git(workspace, "config", "http.https://github.com/.extraheader", header)
    included = scene.root / "git-credentials.config"
    git(workspace, "config", "--file", str(included), "http.https://github.com/.extraheader",
        header)
    git(workspace, "config", "--add", "include.path", str(included))
    git(workspace, "config", "remote.origin.pushurl",
        f"https://x-access-token:{JOB_TOKEN}@github.com/{OWNER}/{REPO}.git")
    return basic


def looted(result: Any, loot: Path) -> tuple[str, list[str]]:
    """What the fork's test found (decoded from its log), and every text the job left."""
    bundle = Path(result.outputs["bundle"])
    texts = [p.read_text(errors="replace") for p in bundle.rglob("*") if p.is_file()]
    # The log itself holds the whole line; a summary or an excerpt may hold a cut copy.
    found = max(re.findall(r"LOOT ([A-Za-z0-9+/=]+)", "\n".join(texts)), key=len, default="")
    assert found, "the fork's test ran and logged what it found"
    stolen = base64.b64decode(found[: len(found) // 4 * 4]).decode(errors="replace")
    if loot.exists():
        texts.append(loot.read_text())
    return stolen, texts


def test_a_fork_on_pull_request_target_runs_the_bases_checks_and_sees_no_token(
        scene: Scene) -> None:
    loot = scene.root / "loot.txt"
    payload, workspace, head = pull_request(
        scene, {".github/ratchet.yml": STEAL, "test_calc.py": hostile(loot)},
        fork=True, action="synchronize")
    basic = persist_credentials(scene, workspace)
    secret = "repository-secret-" + "7" * 16
    job = scene.job("pull_request_target", payload, workspace=workspace, env={
        "GITHUB_TOKEN": JOB_TOKEN, "GH_TOKEN": JOB_TOKEN, "DEPLOY_KEY": secret})
    result = scene.run(job, mode="verify")

    assert result.exit_code == 0, result.stderr + result.stdout
    plan = json.loads((Path(result.outputs["bundle"]) / "plan.json").read_text())
    assert [c["id"] for c in plan["checks"]] == ["unit"]  # the base's check, not "steal"
    stolen, texts = looted(result, loot)
    assert "HOME" in stolen and not loot.exists()  # it looked, from inside the sandbox
    [check] = scene.fake.check_runs(OWNER, REPO, head)  # pull_request_target may write it
    assert check.conclusion == "success"
    for text in (stolen, *texts, check.output_summary or "", check.output_text or ""):
        for value in (JOB_TOKEN, basic, secret, "STOLEN", "extraheader"):
            assert value not in text
    config = (workspace / ".git" / "config").read_text()
    assert JOB_TOKEN not in config and "extraheader" not in config and "include" not in config
    assert f"github.com/{OWNER}/{REPO}.git" in config  # the push URL kept, without its user
    [notice] = [a for a in result.annotations_at("notice") if "persist-credentials" in a.message]
    assert "http.https://github.com/.extraheader" in notice.message
    assert_no_secret(result, JOB_TOKEN, basic, secret)


def test_the_checkout_holds_no_token_when_checks_run_even_unconfined(scene: Scene) -> None:
    # Unconfined, the test can read the checkout's git dir: only the scrub stands in its way.
    loot = scene.root / "loot.txt"
    payload, workspace, _ = pull_request(scene, {"test_calc.py": hostile(loot, procs=False)})
    basic = persist_credentials(scene, workspace)
    job = scene.job("pull_request", payload, workspace=workspace,
                    env={"RATCHET_SANDBOX": "none", "GH_TOKEN": JOB_TOKEN})
    result = scene.run(job, mode="verify")

    assert result.exit_code == 0, result.stderr + result.stdout
    stolen, texts = looted(result, loot)
    assert "[remote \"origin\"]" in loot.read_text()  # it read the checkout's config
    for text in (stolen, *texts):
        assert "extraheader" not in text and "x-access-token" not in text
        assert JOB_TOKEN not in text and basic not in text


def test_pull_request_target_is_never_verified_unconfined(scene: Scene) -> None:
    loot = scene.root / "loot.txt"
    payload, workspace, _ = pull_request(scene, {"test_calc.py": hostile(loot)}, fork=True)
    job = scene.job("pull_request_target", payload, workspace=workspace,
                    env={"RATCHET_SANDBOX": "none"})
    result = scene.run(job, mode="verify")

    assert result.exit_code == 2
    [error] = result.annotations_at("error")
    assert "RATCHET_SANDBOX=none" in error.message
    assert not loot.exists()  # no check ran
    assert check_calls(scene) == []


def test_the_config_input_is_refused_on_pull_request_target(scene: Scene) -> None:
    payload, workspace, _ = pull_request(scene, {"calc.py": CALC + "\n# steady\n"}, fork=True)
    (workspace / "mine.yml").write_text(STEAL)
    result = scene.run(scene.job("pull_request_target", payload, workspace=workspace),
                       mode="verify", config="mine.yml")
    assert result.exit_code == 2
    [error] = result.annotations_at("error")
    assert "pull_request_target" in error.message and "config" in error.message
    assert check_calls(scene) == []


ENV_CONFIG = ("verify:\n  env: [DEPLOY_KEY]\n  checks:\n"
              "    - {id: unit, kind: test, run: 'python3 -m unittest -q'}\n")
SEES_KEY = TEST + ("\n\nclass KeyTest(unittest.TestCase):\n    def test_key(self):\n"
                   "        import os\n        self.assertIn('DEPLOY_KEY', os.environ)\n")


@pytest.mark.parametrize(("event", "fork", "conclusion"), [
    ("pull_request_target", True, "failure"),  # a fork's head: verify.env grants nothing
    ("pull_request", False, "success"),  # the repository's own branch: the operator allows it
])
def test_verify_env_reaches_a_pull_requests_head_only_off_pull_request_target(
        open_scene: Any, event: str, fork: bool, conclusion: str) -> None:
    scene = open_scene({".github/ratchet.yml": ENV_CONFIG, "calc.py": CALC, "test_calc.py": TEST})
    payload, workspace, head = pull_request(scene, {"test_calc.py": SEES_KEY}, fork=fork)
    secret = "deploy-secret-" + "4" * 16
    job = scene.job(event, payload, workspace=workspace,
                    env={"DEPLOY_KEY": secret, "RATCHET_CHECK_ENV": "DEPLOY_KEY"})
    result = scene.run(job, mode="verify")

    assert result.outputs["conclusion"] == conclusion, result.stderr + result.stdout
    [check] = scene.fake.check_runs(OWNER, REPO, head)
    assert check.conclusion == conclusion
    assert_no_secret(result, secret)
