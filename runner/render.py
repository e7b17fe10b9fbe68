"""Words for people, from the runner's data: tracking comments, pull request bodies, replies
to signals, check runs (the verification's: ``runner/checkruns.py``). Pure.

The runner's records hold data; this module turns it into Markdown. How a person acts on a run
differs by forge (a slash command on GitHub, a CLI command locally), so every renderer takes a
``Vocabulary`` from the edge that supplies it; nothing here names a command.

Every text Ratchet did not write (an agent's spec and summary, a failure's reason, a typed
hash) goes through ``runner/neutralise.py`` here, so it cannot act on the forge; Ratchet's own
lines (its hash line, its commands, a reply's mention of who typed the command) are written
around it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from plumbing.markdown import code_span
from runner.budget import Limit, format_amount
from runner.neutralise import neutralise, neutralise_inline, strip_controls
from runner.signals import MIN_HASH_PREFIX, Refusal
from runner.views import NextActionKind

# Hidden markers that let an executor find what it wrote (a comment by name, an effect by key).
NAME_MARKER = "<!-- ratchet:name={name} -->"
KEY_MARKER = "<!-- ratchet:key={key} -->"
# How much of a spec hash people are asked to type: the least an approval accepts.
HASH_PREFIX = MIN_HASH_PREFIX
_STATUS_MARKS = {
    "done": "[x]", "running": "[ ] :hourglass:", "waiting": "[ ] :raised_hand:",
    "stopped": "[ ] :stop_sign:", "pending": "[ ]",
}


class Vocabulary(Protocol):
    """How people act on a run where they read it: each method returns the exact text to
    type (a slash command on a forge, a CLI command locally); ``closes`` the line that closes
    the run's issue when its change is merged (empty where nothing does)."""

    def approve(self, run_id: str, spec_prefix: str) -> str: ...
    def approve_diff(self, run_id: str, diff_sha256: str) -> str: ...
    def request_changes(self, run_id: str) -> str: ...
    def retry(self, run_id: str) -> str: ...
    def retry_with_agent(self, run_id: str) -> str: ...
    def cancel(self, run_id: str) -> str: ...
    def resume(self, run_id: str) -> str: ...
    def mention(self, author: str) -> str: ...
    def budget(self, run_id: str, amount: str) -> str: ...
    def closes(self, issue: int) -> str: ...


@dataclass(frozen=True)
class CheckRunText:
    """A check run's output: ``annotations`` as the payload holds them (``path``,
    ``start_line``, ``end_line``, ``level``, ``message``, ``title``)."""

    title: str
    summary: str
    text: str = ""
    annotations: tuple[Mapping[str, Any], ...] = ()


def name_marker(name: str) -> str:
    return NAME_MARKER.format(name=name)


def key_marker(key: str) -> str:
    return KEY_MARKER.format(key=key)


def say_next_action(action: Mapping[str, Any], run_id: str, words: Vocabulary) -> str:
    """The next action as one sentence: who the run waits for (a worker, a reviewer, someone
    with write access to decide or to raise the budget), and the commands that act."""
    kind = NextActionKind(action["kind"])
    if kind is NextActionKind.NONE_DONE:
        return f"none: the run is done (published {action.get('head') or 'its branch'})"
    if kind is NextActionKind.NONE_CANCELLED:
        return "none: the run was cancelled"
    resume = words.resume(run_id)
    if kind is NextActionKind.WAIT_FOR_HOLDER:
        takeover = (f"{_code(resume)} takes over once it expires" if resume
                    else "another worker takes over once it expires")
        return (f"the run waits for worker {action['owner']}, which holds the lease on"
                f" {action['step']} (renewed by its heartbeat; if that worker died, {takeover})")
    if kind is NextActionKind.WAIT_FOR_RETRY:
        then = f"{_code(resume)} runs it then" if resume else "a worker runs it then"
        return f"the run waits for its scheduled retry of {action['step']}; {then}"
    if kind is NextActionKind.RESUME:
        unsent, signals = action.get("unsent") or 0, action.get("signals") or 0
        work = [f"answers {signals} signal(s)" if signals else "",
                f"sends {unsent} recorded effect(s)" if unsent else ""]
        settle = f"; it first {' and '.join(w for w in work if w)}" if any(work) else ""
        who = f"a worker (or {_code(resume)})" if resume else "a worker"
        if action.get("ended"):
            # Nothing continues: what is left is to tell the forge (or the outbox) it ended.
            return (f"none: the run is {action['ended']}; {who} still"
                    f" {' and '.join(w for w in work if w) or 'has nothing to send'}")
        return f"the run waits for {who} to continue from {action['step']}{settle}"
    if kind is NextActionKind.REVIEW_SPEC:
        prefix = str(action.get("spec_sha256") or "")[:HASH_PREFIX]
        return (f"the run waits for a reviewer with write access: review spec.md, then"
                f" {_code(words.approve(run_id, prefix))} or"
                f" {_code(words.request_changes(run_id))}")
    if kind is NextActionKind.REVIEW_DIFF:
        sha = str(action.get("diff_sha256") or "")
        return (f"verified, not published: {action.get('reason')}; the run waits for a reviewer"
                f" with write access: review the diff, then"
                f" {_code(words.approve_diff(run_id, sha))}, or {_code(words.cancel(run_id))}")
    if kind is NextActionKind.HUMAN_DECISION:
        return (f"the run waits for a person with write access to decide:"
                f" {_inline(action.get('reason'))}; then {_code(words.retry(run_id))} or"
                f" {_code(words.cancel(run_id))}")
    if kind is NextActionKind.RAISE_BUDGET:
        amount = str(action.get("raise") or "+1")
        return (f"the run waits for someone with write access to raise its budget"
                f" ({action.get('limit')} is spent) with {_code(words.budget(run_id, amount))}"
                f" (a bare number raises the limit reached; +$1 is dollars, +30m agent minutes,"
                f" +2h run hours, +3runs agent runs) and the run continues from"
                f" {action.get('step')}, or {_code(words.cancel(run_id))}")
    if action.get("agent"):
        # The agent is the operator's to install or change, not a reviewer's.
        with_agent = words.retry_with_agent(run_id)
        another = (f", or retry with another agent, {_code(with_agent)}" if with_agent
                   else " (or retry it with another agent command at the host)")
        return (f"the run waits for the operator to make its agent start"
                f" ({_inline(action.get('reason'))}): install the command, then"
                f" {_code(words.retry(run_id))}{another}, or {_code(words.cancel(run_id))}")
    return (f"the run waits for a person with write access to fix the cause of its failure"
            f" ({_inline(action.get('reason'))}), then {_code(words.retry(run_id))}, or"
            f" {_code(words.cancel(run_id))}")


def render_tracking(view: Mapping[str, Any], words: Vocabulary,
                    links: Sequence[tuple[str, str]] = (), *,
                    artifacts_url: str | None = None) -> str:
    """The run's tracking comment: phases, elapsed time, spec hash, research subagents, the
    next action; ``links`` (label, URL) point at what the forge made of the run (its pull
    request, check runs), ``artifacts_url`` at where its artifacts are served, if anywhere."""
    run_id = view["run"]
    lines = [f"### Ratchet run `{run_id}`: {view['state'].replace('_', ' ')}", ""]
    for phase in view["phases"]:
        mark = _STATUS_MARKS.get(phase["status"], "[ ]")
        repairs = f" ({phase['repairs']} repair(s))" if phase.get("repairs") else ""
        lines.append(f"- {mark} {phase['phase'].replace('_', ' ')}{repairs}")
    lines += ["", f"Branch `{view['branch']}` · elapsed {_duration(view['elapsed_s'])}"]
    if view.get("spec_sha256") and view["state"] == "awaiting_approval":
        lines.append(f"Spec sha256: `{view['spec_sha256']}`")
    if links:
        lines.append(" · ".join(f"[{label}]({url})" for label, url in links))
    if view.get("subagents"):
        lines.append(f"Subagents: {say_subagents(view['subagents'], artifacts_url)}")
    if view.get("usage"):
        lines.append(f"Spent: {say_usage(view['usage'])}")
    for note in view.get("limited", ()):
        lines.append(f"Limited: {_inline(note)}.")
    if view.get("failure_class"):
        lines.append(f"Failure class: {view['failure_class']}")
    if view.get("reason") and view["state"] in {"failed", "needs_human", "cancelled"}:
        lines.append(f"Reason: {_inline(view['reason'])}")
    lines += ["", f"Next: {say_next_action(view['next_action'], run_id, words)}"]
    return "\n".join(lines) + "\n"


def render_pull_request(payload: Mapping[str, Any], words: Vocabulary, *,
                        check_run_url: str | None = None,
                        artifacts_url: str | None = None) -> str:
    """The pull request body. A draft's: Ratchet's section (the spec's sha256, once, and how
    to approve or send it back), then the spec and the implementation's summary as the agents
    wrote them, neutralised. A published one's (its payload has ``verification``) reads as
    finished work: ``render_published``."""
    if "verification" in payload:
        return render_published(payload, words, check_run_url=check_run_url,
                                artifacts_url=artifacts_url)
    spec = payload["spec"]
    run_id = payload["run"]
    prefix = spec["sha256"][:HASH_PREFIX]
    parts = [
        f"Ratchet run `{run_id}` proposes this specification for review.",
        f"Spec sha256: `{spec['sha256']}`",
        f"- approve it: `{words.approve(run_id, prefix)}`\n"
        f"- send it back: `{words.request_changes(run_id)}`",
        "---",
        neutralise(spec["text"]).rstrip() + "\n",
    ]
    if payload.get("summary"):
        parts += ["---", "**Implementation summary**",
                  neutralise(payload["summary"]).rstrip() + "\n"]
    return "\n\n".join(parts)


def render_published(payload: Mapping[str, Any], words: Vocabulary, *,
                     check_run_url: str | None = None,
                     artifacts_url: str | None = None) -> str:
    """A verified pull request's body: what changed (the summary of the agent step whose tree
    passed), the verification (its checks, and a link to its check run where the forge has
    one), the approved spec by its sha256 and where to read it (a link where artifacts are
    served, and collapsed below), and the forge's closing line for the run's issue. No
    instruction is pending, so none is given."""
    run_id, spec, verified = payload["run"], payload["spec"], payload["verification"]
    checks = verified.get("checks") or []
    passed = sum(1 for check in checks if check.get("status") == "passed")
    repairs = int(verified.get("repairs") or 0)
    after = f", after {repairs} repair{'s' if repairs != 1 else ''}" if repairs else ""
    where = f" on `{str(verified['head'])[:12]}`" if verified.get("head") else ""
    check_run = (f"[{verified.get('check_name') or 'the check run'}]({check_run_url})"
                 if check_run_url else f"`{verified.get('check_name') or 'the check run'}`")
    # Named in code: the approver is not pinged again by a body they already acted on.
    approved = f", approved by {_code(str(spec['by']))}" if spec.get("by") else ""
    read = (f"[`spec.md`]({artifacts_url.rstrip('/')}/spec.md)" if artifacts_url
            else "`spec.md` in the run's artifacts")
    lines = [f"Ratchet run `{run_id}` implemented and verified this change.", "",
             "### What changed", "",
             neutralise(payload.get("summary") or "(the agent wrote no summary)").rstrip(), "",
             "### Verification", "",
             f"{passed} of {len(checks)} checks passed{where}{after}: {check_run}"
             f" (plan `{str(verified.get('plan') or '')[:12]}`).", ""]
    lines += [f"- `{_printable(str(c.get('id')))}`: {c.get('status')}" for c in checks[:50]]
    if len(checks) > 50:
        lines.append(f"- ... and {len(checks) - 50} more in the check run")
    lines += ["", "### Specification", "",
              f"Spec sha256: `{spec['sha256']}`{approved}: {read}, and here:", "",
              "<details><summary>spec.md</summary>", "",
              neutralise(spec.get("text") or "").rstrip(), "", "</details>"]
    closes = words.closes(int(payload["issue"])) if payload.get("issue") else ""
    if closes:
        lines += ["", closes]
    return "\n".join(lines) + "\n"


def render_reply(payload: Mapping[str, Any], words: Vocabulary) -> str:
    """One reply to a signal: why it was refused and what would work, or the run's status."""
    if "status" in payload:
        return render_status_reply(payload, words)
    refusal = Refusal(payload["refusal"])
    params = payload.get("params", {})
    run_id = payload["run"]
    author = payload.get("author", "")
    who = f"{words.mention(author)}: " if author else ""
    if refusal is Refusal.NOT_PERMITTED:
        detail = _inline(params.get("detail") or "not permitted")
        text = (f"your command was not applied: {detail}."
                " Someone with write access to the repository can run it.")
    elif refusal is Refusal.NOT_WAITING_FOR_APPROVAL:
        text = (f"there is no spec waiting for approval (the run is {params.get('state')}).")
    elif refusal is Refusal.STALE_HASH:
        current = str(params.get("current", ""))
        given = _code(str(params.get("given") or "(none)"))
        text = (f"{given} is not the current spec's hash."
                f" The current spec is `{current}`: review it, then"
                f" `{words.approve(run_id, current[:HASH_PREFIX])}`.")
    elif refusal is Refusal.SHORT_HASH:
        current, given = str(params.get("current", "")), str(params.get("given") or "")
        text = (f"give at least {params.get('needed')} characters of the spec's hash"
                f" (`{given or '(none)'}` has {len(given)}). The current spec is `{current}`:"
                f" review it, then `{words.approve(run_id, current[:HASH_PREFIX])}`.")
    elif refusal is Refusal.BEFORE_SPEC:
        current = str(params.get("current", ""))
        text = (f"this approval (`{params.get('given') or '(none)'}`) was sent before the spec"
                f" it names was ready for review, so it approves nothing. Review the spec now"
                f" waiting, then `{words.approve(run_id, current[:HASH_PREFIX])}`.")
    elif refusal is Refusal.NOT_WAITING_FOR_DIFF_APPROVAL:
        text = (f"there is no verified diff waiting for approval (the run is"
                f" {params.get('state')}).")
    elif refusal is Refusal.STALE_DIFF:
        current = str(params.get("current", ""))
        text = (f"`{params.get('given') or '(none)'}` is not the hash of the diff waiting for"
                f" approval (or is shorter than {params.get('min', HASH_PREFIX)} characters);"
                f" an approval holds for one exact diff. The diff now is `{current}`: review"
                f" it, then `{words.approve_diff(run_id, current)}`.")
    elif refusal is Refusal.NO_SPEC:
        text = "the run has no spec to approve yet."
    elif refusal is Refusal.EMPTY_MESSAGE:
        text = ("a change request needs text saying what to change:"
                f" `{words.request_changes(run_id)}`.")
    elif refusal is Refusal.NOTHING_TO_RETRY:
        text = (f"there is nothing to retry: the run is {params.get('state')}, not stopped.")
    elif refusal is Refusal.NOTHING_TO_VERIFY:
        text = ("verification runs again only on a stopped run with an implemented tree"
                f" (the run is {params.get('state')}).")
    elif refusal is Refusal.BAD_BUDGET:
        text = (f"{_inline(params.get('detail') or 'that is not a budget raise')}:"
                f" `{words.budget(run_id, '+1')}`.")
    else:
        text = f"the run has ended ({params.get('state')}); start a new one."
    return f"{who}{text}\n"


def render_status_reply(payload: Mapping[str, Any], words: Vocabulary) -> str:
    status = payload["status"]
    run_id = payload["run"]
    author = payload.get("author", "")
    who = f"{words.mention(author)}: " if author else ""
    lines = [f"{who}run `{run_id}` is {status['state'].replace('_', ' ')} (step {status['step']})."]
    if status.get("completed"):
        lines.append(f"Completed: {', '.join(status['completed'])}.")
    if status.get("reason"):
        lines.append(f"Reason: {_inline(status['reason'])}")
    if (status.get("usage") or {}).get("total", {}).get("agent_runs"):
        lines.append(f"Spent: {say_usage(status['usage'])}")
    lines.append(f"Next: {say_next_action(status['next_action'], run_id, words)}")
    return "\n".join(lines) + "\n"


def render_spec_check(payload: Mapping[str, Any], words: Vocabulary) -> CheckRunText:
    """The spec's check run: it asks for approval of this exact hash."""
    run_id = payload["run"]
    sha = payload["review"]["spec_sha256"]
    return CheckRunText(
        title="Spec awaiting approval",
        summary=(f"Ratchet run `{run_id}` waits for a reviewer to approve its specification"
                 f" (sha256 `{sha}`) in the pull request.\n\nApprove with"
                 f" `{words.approve(run_id, sha[:HASH_PREFIX])}`, or send it back with"
                 f" `{words.request_changes(run_id)}`.\n"),
    )


def render_diff_request(payload: Mapping[str, Any], words: Vocabulary) -> tuple[str, str]:
    """A verification's title and request when a writer must approve its diff: the protected
    paths it touches, where it waits, the full hash and the command that approves it."""
    run_id, diff = payload["run"], payload["diff"]
    sha, paths = str(diff["sha256"]), [str(p) for p in diff.get("paths") or ()]
    shown = ", ".join(f"`{_printable(p)}`" for p in paths[:20])
    more = f" and {len(paths) - 20} more" if len(paths) > 20 else ""
    lines = []
    if diff.get("approved"):
        lines.append(f"Approved: this exact diff (sha256 `{sha}`), touching {shown or 'no'}"
                     f" protected paths{more}, was approved by someone with write access.")
        return "Verified; diff approved", "\n\n".join(lines)
    if paths:
        lines.append(f"This change touches protected paths: {shown}{more}. It is not published"
                     " as ready until someone with write access approves this exact diff.")
    if diff.get("ref"):
        lines.append(f"It waits on `{diff['ref']}` (no workflow runs there) and is pushed to the"
                     " run's branch only once its diff is approved.")
    lines.append(f"Diff sha256 (base tree to this tree): `{sha}`")
    lines.append(f"Approve it with `{words.approve_diff(run_id, sha)}` (at least the first"
                 f" {HASH_PREFIX} characters), or with the check run's button.")
    title = ("Protected paths: approve the diff" if paths
             else "Verified: approve the diff before it is pushed")
    return title, "\n\n".join(lines)


def _printable(path: str) -> str:
    """A path as one line of text: control characters escaped, backticks dropped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in path).replace("`", "'")


def say_usage(usage: Mapping[str, Any]) -> str:
    """What a run's agents spent, and of which budget, in one line (``usage_view``'s data)."""
    totals = usage.get("total") or {}
    runs = int(totals.get("agent_runs") or 0)
    parts = [say_cost(totals)]
    if say_tokens(totals):
        parts.append(say_tokens(totals))
    seconds = float(totals.get("agent_seconds") or 0)
    parts.append(f"agent time {f'{seconds:.1f}s' if seconds < 60 else _duration(seconds)}"
                 f" over {runs} agent run(s)")
    text = " · ".join(parts)
    limits = [f"{format_amount(Limit(name), float(item['spent']))} of"
              f" {format_amount(Limit(name), float(item['allowed']))}"
              for name, item in (usage.get("budget") or {}).items()
              if name in {limit.value for limit in Limit}]
    return f"{text} (budget: {'; '.join(limits)})" if limits else text


def say_cost(totals: Mapping[str, Any]) -> str:
    """What agent runs cost in dollars (``UsageTotals.to_dict``'s data): ``$0.42``, or
    ``unpriced`` when none reported a cost, ``$0.42 + 1 unpriced`` when some did not: a cost
    nobody knows is never shown as $0.00."""
    runs = int(totals.get("agent_runs") or 0)
    unpriced = int(totals.get("unpriced_runs") or 0)
    if runs and unpriced >= runs:
        return "unpriced"
    dollars = f"${float(totals.get('cost_usd') or 0):.2f}"
    return f"{dollars} + {unpriced} unpriced" if unpriced else dollars


def say_tokens(totals: Mapping[str, Any]) -> str:
    """The tokens agent runs used, in and out (``UsageTotals.to_dict``'s data): ``1.5k tokens
    (1.5k in, 20 out)``; empty when none were reported."""
    tokens = sum(int(totals.get(k) or 0)
                 for k in ("input_tokens", "output_tokens", "cache_read_tokens"))
    if not tokens:
        return ""
    return (f"{_count(tokens)} tokens ({_count(int(totals.get('input_tokens') or 0))} in,"
            f" {_count(int(totals.get('output_tokens') or 0))} out)")


def say_subagents(rows: Sequence[Mapping[str, Any]], artifacts_url: str | None = None) -> str:
    """Each research subagent with its status, and its artifact (a link where they are
    served, else its run-directory path)."""
    parts = []
    for row in rows:
        text = f"`{row['name']}` {row['status']}"
        artifact = row.get("artifact")
        if artifact and artifacts_url:
            text += f" ([{artifact}]({artifacts_url.rstrip('/')}/{artifact}))"
        elif artifact:
            text += f" (`{artifact}`)"
        parts.append(text)
    return " · ".join(parts)


def _count(number: int) -> str:
    return f"{number / 1000:.1f}k" if number >= 1000 else str(number)


def _code(text: str) -> str:
    """An inline code span its own backticks cannot end (what it holds shows as typed)."""
    return code_span(strip_controls(text))


def _inline(text: object) -> str:
    """Text Ratchet did not write, inside one of its own lines: neutralised, on one line."""
    return neutralise_inline(str(text))


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"
