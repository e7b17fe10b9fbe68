"""Which commits of a repository the corpus holds: a deterministic sample, not a choice.

From a fixed commit (`end`, recorded in the repository's case file), walk the first-parent
history back and keep the commits that change code: at least one changed file that is not
documentation, and at most `MAX_FILES` files (a release, a subtree sync or a mass rename is not
a change a maintainer reviews as one). Every `every`-th of those, up to `count`, is a case. A
merge commit is its pull request's change: it is compared with its first parent, as the pull
request's CI saw it.

    python tests/verification/corpus/sample.py vuejs/core END_SHA 30 4

prints the sampled commits; `show` prints one commit's changed files and the CI workflows at
that commit (triggers, path filters, jobs and their `run:` steps), to write its expectations:

    python tests/verification/corpus/sample.py show vuejs/core SHA
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

# Where the `fetch` tool leaves mirrors: one folder per repository, `<owner>+<name>`.
DEFAULT_MIRRORS = "/work/.mirror"
# More changed files than this and a commit is not one reviewable change.
MAX_FILES = 100
DOC_SUFFIXES = {".md", ".mdx", ".rst", ".txt", ".adoc"}
DOC_FOLDERS = {"docs", "doc", "documentation", ".changeset", "changelogs"}


def mirrors_root() -> Path:
    return Path(os.environ.get("RATCHET_CORPUS_MIRRORS", DEFAULT_MIRRORS))


def git_dir(repository: str) -> Path | None:
    """The git dir of `repository`'s mirror (the folder itself or a bare repository below it),
    None when it is not there."""
    folder = mirrors_root() / repository.replace("/", "+")
    if not folder.is_dir():
        return None
    for candidate in (folder, *sorted(p for p in folder.iterdir() if p.is_dir())):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
        if (candidate / ".git" / "HEAD").is_file():
            return candidate / ".git"
    return None


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(folder), *args], check=True,
                          capture_output=True, text=True).stdout


def changed(folder: Path, commit: str) -> list[str]:
    """The files `commit` changes against its first parent."""
    out = git(folder, "diff", "--name-only", "--no-renames", f"{commit}^1", commit)
    return [line for line in out.splitlines() if line]


def changes_code(paths: list[str]) -> bool:
    return 0 < len(paths) <= MAX_FILES and any(not _is_doc(path) for path in paths)


def _is_doc(path: str) -> bool:
    pure = PurePosixPath(path)
    return pure.suffix.lower() in DOC_SUFFIXES or bool(DOC_FOLDERS & set(pure.parts[:-1]))


def sample(folder: Path, end: str, every: int, count: int) -> list[str]:
    """Every `every`-th first-parent commit from `end` back that changes code, `count` of them."""
    kept: list[str] = []
    seen = 0
    for commit in git(folder, "rev-list", "--first-parent", end).split():
        if not git(folder, "rev-list", "--parents", "-n", "1", commit).split()[1:]:
            break  # the root commit has no parent to compare with
        if not changes_code(changed(folder, commit)):
            continue
        if seen % every == 0:
            kept.append(commit)
            if len(kept) == count:
                break
        seen += 1
    return kept


def show(folder: Path, commit: str) -> None:
    """What writing a case needs: the changed files, and each workflow's triggers and steps."""
    files = changed(folder, commit)
    print(f"# {commit}: {len(files)} files")
    for path in files:
        print(f"  {path}")
    workflows = [p for p in git(folder, "ls-tree", "-r", "--name-only", commit,
                                ".github/workflows/").split() if p.endswith((".yml", ".yaml"))]
    import yaml

    for path in workflows:
        data = yaml.safe_load(git(folder, "show", f"{commit}:{path}")) or {}
        on = data.get("on", data.get(True, {}))
        if isinstance(on, (str, list)):
            triggers = {name: None for name in ([on] if isinstance(on, str) else on)}
        else:
            triggers = on or {}
        if not {"pull_request", "push", "merge_group", "workflow_call"} & set(triggers):
            continue
        print(f"\n== {path}  on: {sorted(triggers)}")
        for name in ("pull_request", "push"):
            spec = triggers.get(name) or {}
            for key in ("paths", "paths-ignore", "branches"):
                if isinstance(spec, dict) and spec.get(key):
                    print(f"   {name}.{key}: {spec[key]}")
        for job_id, job in (data.get("jobs") or {}).items():
            job = job or {}
            extra = f" uses {job['uses']}" if job.get("uses") else ""
            cond = f" if: {job['if']}" if job.get("if") else ""
            print(f"  job {job_id} needs={job.get('needs')}{extra}{cond}")
            for step in job.get("steps") or []:
                label = step.get("name") or step.get("uses") or ""
                run = " ; ".join(line for line in str(step.get("run", "")).splitlines()
                                 if line.strip())
                where = f" [{step['working-directory']}]" if step.get("working-directory") else ""
                print(f"    - {label}{where}: {run[:200]}" if run else f"    - {label}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["show"]:
        folder = git_dir(argv[1])
        if folder is None:
            print(f"no mirror of {argv[1]} under {mirrors_root()}", file=sys.stderr)
            return 2
        show(folder, argv[2])
        return 0
    repository, end, every, count = argv
    folder = git_dir(repository)
    if folder is None:
        print(f"no mirror of {repository} under {mirrors_root()}", file=sys.stderr)
        return 2
    for commit in sample(folder, end, int(every), int(count)):
        print(commit)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
