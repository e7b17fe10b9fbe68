"""Guards of CI jobs and steps, read as GitHub decides them for a pull request (verification/ci.py):
the outputs of a paths filter, and what a job's `if:` says about the pull request itself.

Pure: the workflows are texts, read by `read_workflows` and `read_ci` as planning reads the
base's.
"""

from __future__ import annotations

from verification.ci import CiPlan, read_ci
from verification.workflows import MAX_WORKFLOW_BYTES, read_workflows


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


BROWSERS = """\
on: pull_request
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - run: pnpm install
      - run: pnpm playwright install chromium
      - name: Build
        run: pnpm run build
      - name: Test unit
        run: pnpm run test-unit
      - name: Test serve
        run: pnpm run test-serve
      - name: Check sizes
        run: node scripts/sizes.js
"""


def test_after_a_browser_download_builds_and_unit_tests_run_until_a_test_in_browsers() -> None:
    """The e2e suite (its package script names the e2e config) needs the browsers the sandbox
    does not download; the build and unit tests before it do not, and the steps after it may
    work on what it made: listed, not run."""
    scripts = {"build": "tsc -b", "test-unit": "vitest run",
               "test-serve": "vitest run -c vitest.config.e2e.ts"}
    plan = read_ci(read_workflows({".github/workflows/ci.yml": BROWSERS}), ["src/a.ts"], {"."},
                   lambda folder: scripts)
    assert planned(plan) == ["ci.test.build", "ci.test.test-unit"]
    assert [(u.step, u.reason) for u in plan.jobs[0].unverified] == [
        (step, "needs the browsers 'pnpm playwright install chromium' downloads, which does"
               " not run here") for step in ("Test serve", "Check sizes")]


FIXERS_AND_MEASURES = """\
on: pull_request
jobs:
  autofix:
    runs-on: ubuntu-latest
    steps:
      - run: cargo codegen analyzer
      - run: cargo fmt --all
      - uses: autofix-ci/action@v1
  build_metrics:
    runs-on: ubuntu-latest
    steps:
      - run: cargo xtask metrics build
  test:
    runs-on: ubuntu-latest
    steps:
      - run: cargo test --workspace
"""


def test_a_job_committing_its_rewrites_and_a_metrics_job_are_no_checks() -> None:
    """Codegen that autofix-ci commits regenerates files, and metrics measure: neither passes
    or fails the change; both are listed with why."""
    plan = ci(FIXERS_AND_MEASURES, ["crates/a/src/lib.rs"])
    assert planned(plan) == ["ci.test.cargo-test-workspace"]
    assert {job.key: job.unverified[0].reason for job in plan.jobs if job.unverified} == {
        "autofix": "commits what its steps rewrite (autofix-ci/action): a fixer, not verification",
        "build_metrics": "runs benchmarks or measures sizes: measurements, not verification",
    }


UNKNOWN_ENV = """\
on: pull_request
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - id: rust-cache
        uses: swatinem/rust-cache@v2
      - name: Cargo test
        env:
          CARGO_UNSTABLE_MTIME_ON_USE: ${{ steps.rust-cache.outputs.cache-hit != 'true' }}
          RUST_BACKTRACE: 1
        run: cargo nextest run --workspace
      - name: Snapshots
        env:
          PENDING: ${{ steps.rust-cache.outputs.cache-hit }}
        run: ls "$PENDING"
      - name: Comment
        env:
          GH_TOKEN: ${{ github.token }}
        run: gh pr comment --body done
"""


def test_a_step_setting_a_variable_planning_cannot_know_runs_without_it_unless_it_reads_it(
) -> None:
    """A tool setting the script never reads is left at its default, and the check says so; a
    variable the script reads, or a credential a tool reads by itself, keeps the step out."""
    plan = ci(UNKNOWN_ENV, ["crates/a/src/lib.rs"])
    [check] = plan.jobs[0].checks
    assert check.command == "export RUST_BACKTRACE=1; cargo nextest run --workspace"
    assert check.notes == ("step 'Cargo test': runs without CARGO_UNSTABLE_MTIME_ON_USE (it needs"
                           " steps.rust-cache, which planning cannot know)",)
    assert [u.step for u in plan.jobs[0].unverified] == ["Snapshots", "Comment"]


def test_a_generated_workflow_of_half_a_mebibyte_is_read() -> None:
    """Generated workflows (deno's ci.generated.yml: 424 KiB) are read whole; only a file over
    MAX_WORKFLOW_BYTES is ignored, with the reason."""
    jobs = "".join(f"  test-{n}:\n    runs-on: ubuntu-latest\n    steps:\n"
                   f"      - run: cargo test -p crate-{n}  # {'x' * 400}\n" for n in range(1200))
    text = "on: pull_request\njobs:\n" + jobs
    assert 512 * 1024 < len(text) <= MAX_WORKFLOW_BYTES
    workflows = read_workflows({".github/workflows/ci.generated.yml": text})
    assert workflows.problems == []
    assert len(workflows.by_path[".github/workflows/ci.generated.yml"].jobs) == 1200


HANDOFF = """\
on: pull_request
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: cargo build -p app
      - uses: actions/upload-artifact@v4
        with:
          name: app-binary
          path: target/debug/app
  test:
    needs: build
    runs-on: ubuntu-latest
    steps:
      - uses: actions/download-artifact@v4
        with:
          name: app-binary
          path: target/debug
      - run: chmod +x target/debug/app
      - run: cargo test -p app --test integration
  report:
    needs: build
    runs-on: ubuntu-latest
    steps:
      - uses: actions/download-artifact@v4
        with:
          name: coverage
      - run: ./report.sh
"""


def test_a_test_job_downloading_what_its_build_job_uploaded_runs_after_that_build() -> None:
    """Every check runs in one tree: the binary the build job uploads is already where the
    test job downloads it, so the test job's steps run, after the build; a download of an
    artifact no job it needs uploads still keeps the steps after it out."""
    plan = ci(HANDOFF, ["src/main.rs"])
    checks = {check.key: check for job in plan.jobs for check in job.checks}
    assert list(checks) == ["ci.build.cargo-build-p-app",
                            "ci.test.cargo-test-p-app-test-integration"]
    assert checks["ci.test.cargo-test-p-app-test-integration"].after == (
        "ci.build.cargo-build-p-app",)
    report = next(job for job in plan.jobs if job.key == "report")
    assert [u.step for u in report.unverified] == ["actions/download-artifact@v4", "./report.sh"]


RELEASE = """\
on:
  push:
    branches: [main]
jobs:
  changelog:
    runs-on: ubuntu-latest
    steps:
      - run: pnpm run build
      - id: changesets
        uses: changesets/action@v1
        with:
          publish: pnpm exec changeset publish
      - name: Check what was published
        id: editor-published
        if: steps.changesets.outputs.published == 'true'
        run: echo "published=true" >> "$GITHUB_OUTPUT"
      - name: Package the extension
        if: steps.editor-published.outputs.published == 'true'
        run: npm run build:grammar
        working-directory: editor
"""


def test_the_steps_on_what_a_release_action_published_do_not_run() -> None:
    """Nothing is released in a verification: the release action's outputs are empty, so a
    step for what it published is skipped, and so is the step on that skipped step's outputs
    (GitHub gives a skipped step none): both were planned as if true before."""
    plan = ci(RELEASE, ["src/a.ts"], folders=(".", "editor"))
    assert planned(plan) == ["ci.changelog.pnpm-run-build"]
    assert [u.step for u in plan.jobs[0].unverified] == ["changesets"]


def test_a_workflow_on_release_branches_only_does_not_run_for_a_change() -> None:
    """The change targets the default branch and lands on it: a workflow on pushes to
    `release` only, or on pull requests to `next` only, is not planned; one on pushes to
    main, to any branch but `gh-pages`, or to `release/*` and main is."""
    def jobs(on: str) -> list[str]:
        workflow = f"on:\n{on}\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n" \
                   "      - run: make test\n"
        return planned(ci(workflow, ["src/a.c"]))

    assert jobs("  push:\n    branches: [release, trigger-nightly]") == []
    assert jobs("  pull_request:\n    branches: [next]") == []
    assert jobs("  pull_request:\n    branches: [next]\n  push:\n    branches: [main]") == [
        "ci.t.make-test"]
    assert jobs("  push:\n    branches-ignore: [gh-pages]") == ["ci.t.make-test"]
    assert jobs("  push:\n    branches: ['release/*', master]") == ["ci.t.make-test"]
    assert jobs("  push:\n    branches-ignore: [main, master, develop, dev, trunk]") == []


ROOT = """\
on: pull_request
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - name: Install packages
        run: sudo apt-get update && sudo apt-get install -y libsnmp-dev
      - name: Create btrfs filesystem
        run: |
          sudo apt install -y btrfs-progs
          truncate -s 1G /tmp/btrfs.img
          mkfs.btrfs /tmp/btrfs.img
          sudo mount -o loop /tmp/btrfs.img /btrfs
      - name: Check in sysroot
        run: sudo chroot /sysroot "$(pwd)/target/debug/app" --version
      - run: cargo test
"""


def test_a_step_running_as_root_beyond_installing_packages_is_listed_not_run() -> None:
    """The sandbox has no root: `sudo mount` and `sudo chroot` cannot run there (the package
    install is host preparation, left to the host as before)."""
    plan = ci(ROOT, ["src/lib.rs"])
    assert planned(plan) == ["ci.test.cargo-test"]
    assert [(u.step, u.reason) for u in plan.jobs[0].unverified] == [
        ("Create btrfs filesystem", "runs 'sudo mount -o' as root: the sandbox has no root"),
        ("Check in sysroot", "runs 'sudo chroot /sysroot' as root: the sandbox has no root"),
    ]
