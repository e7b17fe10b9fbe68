"""The test harness's runner keeps the Actions runner's rules for composite actions: inputs and
their defaults, ``if:``, shells, the file commands, outputs and failures."""

from __future__ import annotations

from pathlib import Path

from tests.action.actions_runner import ActionsRunner, FakeActionsCache, Job

ACTION = """\
name: probe
inputs:
  who: {required: true}
  token: {required: false, default: "${{ github.token }}"}
outputs:
  greeting: {value: "${{ steps.greet.outputs.greeting }}"}
  cached: {value: "${{ steps.cache.outputs.cache-hit }}"}
runs:
  using: composite
  steps:
    - id: env
      shell: bash
      run: |
        echo "FROM_ENV=carried" >> "$GITHUB_ENV"
        echo "$RUNNER_TEMP/bin" >> "$GITHUB_PATH"
        echo "::warning file=a.py,line=2::careful, 100%"
    - id: cache
      uses: actions/cache@v4
      with: {path: "${{ runner.temp }}/cached", key: "k-${{ inputs.who }}"}
    - id: greet
      shell: python
      env: {WHO: "${{ inputs.who }}", TOKEN_SEEN: "${{ inputs.token != '' }}"}
      run: |
        import os
        env = os.environ
        with open(env["GITHUB_OUTPUT"], "a") as out:
            out.write(f"greeting<<END\\nhello {env['WHO']}\\n{env['FROM_ENV']}\\nEND\\n")
        with open(env["GITHUB_STEP_SUMMARY"], "a") as out:
            first = env["PATH"].split(":")[0]
            out.write(f"token given: {env['TOKEN_SEEN']}; path: {first}\\n")
    - if: steps.cache.outputs.cache-hit != 'true'
      shell: bash
      run: mkdir -p "$RUNNER_TEMP/cached" && exit 3
    - shell: bash
      run: echo never
    - if: always()
      shell: sh
      run: echo "cleanup ran"
"""


def test_a_composite_runs_as_the_actions_runner_runs_it(tmp_path: Path) -> None:
    (tmp_path / "action").mkdir()
    (tmp_path / "action" / "action.yml").write_text(ACTION)
    runner = ActionsRunner(tmp_path / "action", FakeActionsCache(tmp_path / "cache"))

    def job(attempt: int) -> Job:
        temp = tmp_path / f"temp{attempt}"
        temp.mkdir()
        return Job(workspace=tmp_path, temp=temp, event_name="push", event={}, token="t0k",
                   repository="acme/widgets", api_url="http://api", server_url="http://web",
                   run_attempt=attempt, env={"PATH": "/usr/bin:/bin"})

    result = runner.run(job(1), {"who": "octocat"})
    assert result.exit_code == 3  # the failing step's status fails the action
    assert [s.outcome for s in result.steps] == [
        "success", "success", "success", "failure", "skipped", "success"]
    assert result.outputs == {"greeting": "hello octocat\ncarried", "cached": "false"}
    assert result.summary == f"token given: true; path: {tmp_path / 'temp1' / 'bin'}\n"
    [warning] = result.annotations
    assert (warning.level, warning.message, warning.properties) == (
        "warning", "careful, 100%", {"file": "a.py", "line": "2"})
    assert "cleanup ran" in result.stdout and "never" not in result.stdout
    assert runner.cache.saved == []  # a failed job saves no cache

    runner.cache.warm(lambda key: key == "k-octocat", tmp_path / "action")
    again = runner.run(job(2), {"who": "octocat"})
    assert again.exit_code == 0 and again.outputs["cached"] == "true"
