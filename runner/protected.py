"""Protected paths and the diff a person approves: which changed files are never published as
ready on a spec approval alone, and the hash that binds an approval to one exact diff. Pure.

A change to what runs with the repository's secrets (workflows, actions), to who reviews
(CODEOWNERS), to Ratchet's own config, or to what instructs the next agent (``CLAUDE.md``,
``.claude/``, ...) is code nobody approved: the spec approval approved words. Such a run waits
after verification until a writer approves its diff by hash, its candidate on a review ref that
no workflow triggers on (a workflow pushed to a branch would run at once, with the repository's
secrets). A repository adds its own globs (``publish.protected_paths`` in
``.github/ratchet.yml``, read at the base revision); it cannot remove the defaults.

The hash is the sha256 of the tree pair (the base's tree, the published tree): both are content
hashes, so it names exactly one diff, and any later change to the tree is another hash. Matching
ignores case: over-protecting ``Claude.md`` costs a click, under-protecting it costs the trust.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from runner.canonical import sha256_hex
from verification.config import CONFIG_PATH
from verification.globs import compile_glob

# What every repository protects. `**/` also matches at the root.
DEFAULT_PROTECTED: tuple[str, ...] = (
    # What runs with the repository's secrets, and who reviews.
    ".github/workflows/**", ".github/actions/**", CONFIG_PATH,
    "CODEOWNERS", ".github/CODEOWNERS", "docs/CODEOWNERS",
    # What instructs an agent (the next run's, a developer's): instructions and settings.
    "**/CLAUDE.md", "**/CLAUDE.local.md", "**/AGENTS.md", "**/AGENT.md", "**/GEMINI.md",
    ".claude/**", ".codex/**", ".gemini/**", ".cursor/**", ".cursorrules", ".windsurfrules",
    ".clinerules", ".clinerules/**", ".mcp.json", ".github/copilot-instructions.md",
    ".github/instructions/**", ".github/prompts/**",
)
# How much of a diff hash a person must type; the check run and comments show it whole.
MIN_DIFF_PREFIX = 12
# The ref a run's implementation waits on with `publish.review_before_push`: outside
# refs/heads and refs/tags, so no workflow runs on it.
REVIEW_REF = "refs/ratchet/review/{run}"


def protected_paths(changed: Iterable[str], extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The changed paths a default or ``extra`` glob names (or covers: a folder above them),
    in sorted order."""
    globs = [compile_glob(pattern.lower()) for pattern in (*DEFAULT_PROTECTED, *extra)]
    return tuple(sorted({path for path in changed
                         if any(glob.covers(path.lower()) for glob in globs)}))


def diff_sha256(base_tree: str, tree: str) -> str:
    """The hash a diff is approved by: its tree pair, base first."""
    return sha256_hex(f"ratchet-diff\n{base_tree}\n{tree}\n".encode())


def matches_diff(given: str, current: str) -> bool:
    """Whether ``given`` (what a person typed) names the diff ``current``: a prefix of at least
    ``MIN_DIFF_PREFIX`` hex characters."""
    typed = given.strip().lower()
    return len(typed) >= MIN_DIFF_PREFIX and current.startswith(typed)


def review_ref(run_id: str) -> str:
    return REVIEW_REF.format(run=run_id)
