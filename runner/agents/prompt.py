"""Prompt rendering for agent steps: pure, deterministic Markdown from a ``PromptContext``.

Text that comes from outside the runner (issue body, artifacts, feedback, logs) is put in code
fences longer than any backtick run it contains, so it cannot break the prompt's structure. The
issue's title and body are shown as people saw them on the forge (``runner/neutralise.py``), as
are earlier phases' artifacts (``runner/steps/agent.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from plumbing.markdown import code_span, fenced
from runner.neutralise import neutralise, strip_controls

# The run-directory path each phase must write; "{n}" is the repair number.
PHASE_OUTPUTS: Mapping[str, str] = MappingProxyType(
    {
        "research": "research/repository-analysis.md",
        "specify": "spec.md",
        "implement": "implementation/summary.md",
        "repair": "repair/{n}/summary.md",
        "subagent": "subagents/{name}.md",  # a research subagent's artifact, by its name
    }
)

_READ_ONLY = (
    "Read the repository in the current directory (the worktree); do NOT modify, create or "
    "delete any file in it. The runner inspects the worktree after this step: any change is "
    "saved as evidence, discarded, and the run stops for a human.",
)
_NO_GIT = (
    "Do not commit, push, open pull requests or change branches: the runner does that after "
    "it has verified your work.",
)
# The phase's rules, one bullet each.
_PHASE_RULES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "research": (
            *_READ_ONLY,
            "Write an analysis of the repository for this task to `$RATCHET_OUTPUT`: its "
            "layout, the code the task touches, how it is built and tested, and the risks.",
        ),
        "specify": (
            *_READ_ONLY,
            "Write the specification of the change to `$RATCHET_OUTPUT`: what changes, where, "
            "and how it will be verified.",
            "A reviewer approves the specification against its sha256: a changed specification "
            "is not an approved one, so make it complete.",
        ),
        "implement": (
            "Modify the worktree (the current directory) to implement the approved "
            "specification (`spec.md` below); stay within its scope.",
            *_NO_GIT,
            "Write a summary of what you changed and why to `$RATCHET_OUTPUT`.",
        ),
        "repair": (
            "Fix the failing checks listed below by modifying the worktree (the current "
            "directory).",
            "Keep to the approved specification (`spec.md` below): do not change its scope, and "
            "do not weaken or delete checks or tests to make them pass.",
            *_NO_GIT,
            "Write a summary of what you fixed to `$RATCHET_OUTPUT`.",
        ),
        "subagent": (
            "You are one of several research subagents working in parallel, each on one focus."
            " Research only your focus (below); the research agent's analysis is below too.",
            "The worktree (the current directory) is read-only for you: read it, change"
            " nothing.",
            "Write your findings to `$RATCHET_OUTPUT`: what you found, where (files and"
            " symbols), and what it means for the task. Later phases read that file, never your"
            " conversation or your log.",
            "Optionally write one short paragraph to `$RATCHET_NOTE`: what the next phase should"
            " know first. It is shown next to your artifact's path.",
        ),
    }
)
# Code-fence info strings by file suffix, for readable artifacts.
_FENCE_LANGUAGES: Mapping[str, str] = MappingProxyType(
    {".md": "markdown", ".diff": "diff", ".patch": "diff", ".json": "json"}
)


@dataclass(frozen=True)
class FailingTest:
    """A test a failed check named: where it failed, and its message."""

    name: str
    file: str | None = None
    line: int | None = None
    message: str = ""


@dataclass(frozen=True)
class FailingCheck:
    """A verification check that failed, as evidence for a repair step."""

    id: str
    command: str
    status: str
    exit_code: int | None
    log_tail: str
    tests: tuple[FailingTest, ...] = ()


@dataclass(frozen=True)
class PromptContext:
    """Everything a step's prompt says; the same context always renders the same text."""

    run_id: str
    phase: str
    step: str
    title: str  # the task (issue title)
    body: str  # the task (issue body)
    output_path: str  # run-relative path, e.g. "spec.md"
    artifacts: tuple[tuple[str, str], ...] = ()  # earlier phases' artifacts: (run path, text)
    feedback: tuple[str, ...] = ()  # reviewer feedback, oldest first
    failing_checks: tuple[FailingCheck, ...] = ()  # for repair
    salvage_path: str | None = None  # an interrupted attempt's changes, saved as this artifact
    repair_number: int | None = None
    focus: str | None = None  # a subagent's one question
    subagents: tuple[tuple[str, str], ...] = ()  # research: declared subagents (name, focus)
    plan_limit: int = 0  # research: how many subagents its plan may add (0: none)
    artifacts_readable: bool = False  # earlier artifacts are files under $RATCHET_ARTIFACTS
    # Absolute paths the agent writes, named in the prompt as well as in its environment (a
    # CLI's own shell may not pass RATCHET_* on to the model): its output, the research
    # agent's subagent plan, a subagent's note. Empty: not named.
    output_file: str = ""
    plan_file: str = ""
    note_file: str = ""


def output_path(phase: str, repair_number: int | None = None, *,
                subagent: str | None = None) -> str:
    """The run-directory path ``phase`` must write; repair needs its number (1, 2, ...), a
    subagent its name.

    Raises ``ValueError`` for an unknown phase or a missing or misplaced repair number.
    """
    _check_phase(phase)
    if phase == "subagent":
        if not subagent:
            raise ValueError("the subagent phase needs the subagent's name")
        return PHASE_OUTPUTS[phase].format(name=subagent)
    if phase == "repair":
        if repair_number is None or repair_number < 1:
            raise ValueError(
                f"the repair phase needs a repair number >= 1, got {repair_number!r}"
            )
        return PHASE_OUTPUTS[phase].format(n=repair_number)
    if repair_number is not None:
        raise ValueError(
            f"repair_number={repair_number!r} was given for phase {phase!r}; only repair has one"
        )
    return PHASE_OUTPUTS[phase]


def render_prompt(ctx: PromptContext) -> str:
    """Render the Markdown prompt for one agent step.

    Raises ``ValueError`` for an unknown phase.
    """
    _check_phase(ctx.phase)
    title = " ".join(strip_controls(ctx.title).split()) or "(untitled)"
    # The issue as people saw it: an HTML comment a stranger hid in it reaches no agent unseen.
    body = neutralise(ctx.body) if ctx.body else "(no description)"
    sections = [
        f"# Ratchet {ctx.phase} step {ctx.step} (run {ctx.run_id})",
        "You are a coding agent working for Ratchet, a runner that owns this run's lifecycle. "
        "Do this step only, then exit.",
        f"## Task: {title}\n\n{fenced(body, 'markdown')}",
        _render_rules(ctx),
    ]
    if ctx.focus is not None:
        sections.append(f"## Your focus\n\n{fenced(ctx.focus, 'markdown')}")
    if ctx.salvage_path is not None:
        sections.append(
            "## Interrupted earlier attempt\n\n"
            "An earlier attempt at this step was interrupted. Its changes to the worktree were "
            f"saved as the artifact {code_span(ctx.salvage_path)} and the worktree was reset to "
            "the last checkpoint. Reuse what is sound in them; do not assume they are present."
        )
    if ctx.failing_checks:
        sections.append(_render_checks(ctx.failing_checks, ctx.repair_number))
    if ctx.feedback:
        sections.append(_render_feedback(ctx.feedback))
    if ctx.artifacts:
        sections.append(_render_artifacts(ctx.artifacts))
    return "\n\n".join(sections) + "\n"


def _check_phase(phase: str) -> None:
    if phase not in PHASE_OUTPUTS:
        raise ValueError(f"unknown phase {phase!r}; expected one of {', '.join(PHASE_OUTPUTS)}")


def _render_rules(ctx: PromptContext) -> str:
    rules = [
        *_PHASE_RULES[ctx.phase],
        *_subagent_rules(ctx),
        *_paths(ctx),
        "`$RATCHET_OUTPUT` is an absolute path; the runner stores it as "
        f"{code_span(ctx.output_path)} in the run directory. The step fails if it is missing or "
        "empty when you exit.",
        "Exit 0 when done. Exit 75 for a temporary problem (rate limit, network) so the runner "
        "retries; any other exit status fails the step.",
    ]
    return f"## Rules for the {ctx.phase} phase\n\n" + "\n".join(f"- {rule}" for rule in rules)


def _paths(ctx: PromptContext) -> list[str]:
    """Where the files the agent writes are, by absolute path."""
    named = [("RATCHET_OUTPUT", ctx.output_file), ("RATCHET_SUBAGENT_PLAN", ctx.plan_file),
             ("RATCHET_NOTE", ctx.note_file)]
    return [f"`${variable}` is {code_span(path)}." for variable, path in named if path]


def _subagent_rules(ctx: PromptContext) -> list[str]:
    """Research: the subagents that follow it, and how to plan more; later phases: where the
    subagents' artifacts can be read."""
    rules = []
    if ctx.subagents:
        listed = ", ".join(f"{code_span(name)} ({' '.join(focus.split())})"
                           for name, focus in ctx.subagents)
        rules.append("After you, research subagents declared by the repository each research"
                     f" one focus in parallel: {listed}. Their findings reach the next phase"
                     " next to yours.")
    if ctx.plan_limit > 0:
        rules.append(
            "If the task is better researched by several focused agents at once, write a plan"
            ' to `$RATCHET_SUBAGENT_PLAN`: JSON `[{"name": "database", "focus": "How are'
            ' migrations applied?"}]`, at most'
            f" {ctx.plan_limit} entries, each name a slug (lowercase letters, digits, inner"
            " hyphens) used once. Write no plan when one agent is enough; a malformed plan"
            " fails this step."
        )
    if ctx.artifacts_readable:
        rules.append("Artifacts named by run-directory path (such as `subagents/<name>.md`)"
                     " are readable files under `$RATCHET_ARTIFACTS`.")
    return rules


def _render_checks(checks: tuple[FailingCheck, ...], repair_number: int | None) -> str:
    attempt = f" This is repair attempt {repair_number}." if repair_number else ""
    parts = [f"## Failing checks\n\nThese checks failed verification; make them pass.{attempt}"]
    for check in checks:
        exit_code = "none" if check.exit_code is None else str(check.exit_code)
        parts.append(
            f"### Check {code_span(check.id)}\n\n"
            f"- status: {check.status}\n"
            f"- exit code: {exit_code}\n\n"
            f"Command:\n\n{fenced(check.command, 'sh')}\n\n"
            f"{_render_tests(check.tests)}"
            f"Log tail:\n\n{fenced(check.log_tail or '(empty log)')}"
        )
    return "\n\n".join(parts)


def _render_tests(tests: tuple[FailingTest, ...]) -> str:
    """The failing tests a check named: each name, where it failed, its message fenced."""
    if not tests:
        return ""
    lines = ["Failing tests:", ""]
    for test in tests:
        where = f"{test.file}:{test.line}" if test.file and test.line else test.file
        lines.append(f"- {code_span(test.name)}" + (f" at {code_span(where)}" if where else ""))
        if test.message:
            lines += ["", *("  " + line for line in fenced(test.message).splitlines()), ""]
    return "\n".join(lines).rstrip("\n") + "\n\n"


def _render_feedback(feedback: tuple[str, ...]) -> str:
    parts = ["## Reviewer feedback\n\nAddress every point, oldest first."]
    for number, text in enumerate(feedback, start=1):
        parts.append(f"### Feedback {number}\n\n{fenced(text, 'markdown')}")
    return "\n\n".join(parts)


def _render_artifacts(artifacts: tuple[tuple[str, str], ...]) -> str:
    parts = ["## Artifacts of earlier phases"]
    for path, text in artifacts:
        suffix = path[path.rfind(".") :] if "." in path else ""
        parts.append(f"### {code_span(path)}\n\n{fenced(text, _FENCE_LANGUAGES.get(suffix, ''))}")
    return "\n\n".join(parts)
