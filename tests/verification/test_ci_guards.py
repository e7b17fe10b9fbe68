"""Guards of CI jobs and steps, read as GitHub decides them for a pull request (verification/ci.py):
the outputs of a paths filter, and what a job's `if:` says about the pull request itself.

Pure: the workflows are texts, read by `read_workflows` and `read_ci` as planning reads the
base's.
"""

from __future__ import annotations

from verification.ci import CiPlan, read_ci
from verification.workflows import read_workflows


def ci(workflow: str, changed: list[str], *, folders: tuple[str, ...] = (".", "web")) -> CiPlan:
    return read_ci(read_workflows({".github/workflows/ci.yml": workflow}), changed,
                   set(folders), lambda folder: {})


def planned(plan: CiPlan) -> list[str]:
    return [check.key for job in plan.jobs for check in job.checks]


PATHS_FILTER = """\
on: pull_request
jobs:
  changes:
    runs-on: ubuntu-latest
    outputs:
      web: ${{ steps.filter.outputs.web }}
    steps:
      - uses: dorny/paths-filter@v3
        id: filter
        with:
          filters: |
            web:
              - 'web/**'
  web:
    needs: changes
    if: github.repository == 'acme/app' && needs.changes.outputs.web == 'true'
    runs-on: ubuntu-latest
    steps:
      - run: npm test
        working-directory: web
  all:
    needs: [changes, web]
    if: ${{ !cancelled() }}
    runs-on: ubuntu-latest
    steps:
      - run: echo done
"""


def test_a_job_output_read_from_a_paths_filter_step_decides_the_jobs_needing_it() -> None:
    """The job's outputs read its steps' outputs as the steps produced them: a Rust change
    leaves the web job out (and out of what the job needing it waits for), a web change plans
    it."""
    rust = ci(PATHS_FILTER, ["crates/core/src/lib.rs"])
    assert "ci.web.npm-test" not in planned(rust)
    assert [job.key for job in rust.jobs] == ["changes", "all"]
    assert planned(ci(PATHS_FILTER, ["web/src/app.ts"]))[:1] == ["ci.web.npm-test"]


OPT_IN = """\
on: pull_request
jobs:
  docker:
    if: github.event_name == 'schedule' || contains(github.event.pull_request.title, '[docker]')
    runs-on: ubuntu-latest
    steps:
      - run: bash ./docker/build.sh
  full:
    if: contains(github.event.pull_request.labels.*.name, 'test:full')
    runs-on: ubuntu-latest
    steps:
      - run: make test-full
  unless-skipped:
    if: ${{ !contains(github.event.pull_request.labels.*.name, 'ci:skip')
      && !github.event.pull_request.draft }}
    runs-on: ubuntu-latest
    steps:
      - run: make test
  forks:
    if: github.event.pull_request.head.repo.fork != true
    runs-on: ubuntu-latest
    steps:
      - run: make integration
"""


def test_a_change_is_a_plain_pull_request_that_opts_into_no_extra_job() -> None:
    """No labels, not a draft, no marker in its title: jobs a label or title opts into are not
    planned, jobs a label opts out of are; what the event does not say stays unknown (planned
    as if true, with the note saying so)."""
    plan = ci(OPT_IN, ["src/app.py"])
    assert planned(plan) == ["ci.unless-skipped.make-test", "ci.forks.make-integration"]
    forks = next(job for job in plan.jobs if job.key == "forks")
    assert "github.event.pull_request.head.repo.fork" in forks.checks[0].notes[0]
