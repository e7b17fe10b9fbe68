"""The service's limits are ceilings: a repository's config may lower them, never raise them.

`.github/ratchet.yml` is the repository's (any writer of its base branch, a hostile repository
installed by its owner); the operator's ``RATCHET_*`` limits bound what its runs may use of the
host and of the operator's money. A value above a ceiling is lowered to it, and the run records
one sentence naming the setting and the ceiling. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from runner.budget import Budget, Limit, format_amount
from runner.config import BudgetConfig, LimitsConfig, RepositoryConfig, ResearchConfig
from verification.config import DEFAULT_CHECK_TIMEOUT, CheckConfig, VerifyConfig

# Check timeouts named in one note at most; the rest are counted.
NAMED_TIMEOUTS = 5


@dataclass(frozen=True)
class Ceilings:
    """The operator's limits a repository's config can only lower (None: no ceiling)."""

    budget: Budget = field(default_factory=Budget)  # RATCHET_BUDGET_*
    check_concurrency: int | None = None  # RATCHET_CHECK_CONCURRENCY
    check_timeout: float | None = None  # RATCHET_CHECK_TIMEOUT
    subagent_concurrency: int | None = None  # RATCHET_SUBAGENT_CONCURRENCY
    # The size of a run's change (RATCHET_MAX_FILE_BYTES, RATCHET_MAX_CHANGE_BYTES,
    # RATCHET_MAX_CHANGED_FILES): what it publishes and what the ledger stores of it.
    max_file_bytes: int | None = None
    max_change_bytes: int | None = None
    max_changed_files: int | None = None


def within_ceilings(config: RepositoryConfig,
                    ceilings: Ceilings) -> tuple[RepositoryConfig, tuple[str, ...]]:
    """``config`` with every value above a ceiling lowered to it, and a note for each setting
    the repository asked more of. A ceiling also bounds what the repository leaves unset."""
    budget, notes = _budget(config, ceilings.budget)
    verify, verify_notes = _verify(config.verify, ceilings)
    research, research_notes = _research(config.research, ceilings.subagent_concurrency)
    limits, limits_notes = _limits(config.limits, ceilings)
    limited = config.model_copy(update={"budget": budget, "verify": verify,
                                        "research": research, "limits": limits})
    return limited, (*notes, *verify_notes, *research_notes, *limits_notes)


def _note(setting: str, asked: str, ceiling: str, variable: str) -> str:
    return (f"{setting} asks for {asked}, above the service's ceiling of {ceiling} ({variable});"
            f" the run uses {ceiling}")


def _budget(config: RepositoryConfig, ceiling: Budget) -> tuple[BudgetConfig, list[str]]:
    """The repository's budget, each limit at most the service's (an unset one stays unset:
    it takes the service's limit when the budget is fixed)."""
    update: dict[str, float | int] = {}
    notes = []
    for limit in Limit:
        asked, allowed = getattr(config.budget, limit.value), ceiling.limit(limit)
        if asked is not None and allowed is not None and asked > allowed:
            update[limit.value] = getattr(ceiling, limit.value)
            notes.append(_note(f"budget.{limit.value}", format_amount(limit, asked),
                               format_amount(limit, allowed),
                               f"RATCHET_BUDGET_{limit.value.upper()}"))
    return config.budget.model_copy(update=update), notes


def _research(research: ResearchConfig,
              most: int | None) -> tuple[ResearchConfig, list[str]]:
    if most is None or research.concurrency <= most:
        return research, []
    notes = []
    if "concurrency" in research.model_fields_set:
        notes.append(_note("research.concurrency", f"{research.concurrency} subagents at once",
                           str(most), "RATCHET_SUBAGENT_CONCURRENCY"))
    return research.model_copy(update={"concurrency": most}), notes


def _limits(limits: LimitsConfig, ceilings: Ceilings) -> tuple[LimitsConfig, list[str]]:
    """The repository's change limits, each at most the service's; one the repository leaves
    unset is the service's (its default is only the service's default)."""
    update: dict[str, int] = {}
    notes = []
    for name, unit in (("max_file_bytes", "bytes"), ("max_change_bytes", "bytes"),
                       ("max_changed_files", "files")):
        most = getattr(ceilings, name)
        if most is None:
            continue
        asked = getattr(limits, name)
        if name not in limits.model_fields_set or asked > most:
            update[name] = most
        if name in limits.model_fields_set and asked > most:
            notes.append(_note(f"limits.{name}", f"{asked} {unit}", f"{most} {unit}",
                               f"RATCHET_{name.upper()}"))
    return limits.model_copy(update=update), notes


def _verify(verify: VerifyConfig, ceilings: Ceilings) -> tuple[VerifyConfig, list[str]]:
    update: dict[str, object] = {}
    notes = []
    most = ceilings.check_concurrency
    if most is not None:
        if verify.concurrency is None or verify.concurrency > most:
            update["concurrency"] = most
        if verify.concurrency is not None and verify.concurrency > most:
            notes.append(_note("verify.concurrency", f"{verify.concurrency} checks at once",
                               str(most), "RATCHET_CHECK_CONCURRENCY"))
    longest = ceilings.check_timeout
    if longest is None:
        return replace(verify, **update), notes
    over = []  # the settings that asked for more, as a reader finds them in the file
    if verify.timeout > longest:
        update["timeout"] = longest
        # The default is the service's to lower: only a timeout the file asks for is named.
        if verify.timeout != DEFAULT_CHECK_TIMEOUT:
            over.append("verify.timeout")

    def lowered(checks: list[CheckConfig], where: str) -> list[CheckConfig]:
        result = []
        for check in checks:
            if check.timeout is not None and check.timeout > longest:
                over.append(f"{where}[{check.id}].timeout")
                check = replace(check, timeout=longest)
            result.append(check)
        return result

    update["checks"] = lowered(verify.checks, "verify.checks")
    update["workspaces"] = [
        replace(workspace, checks=lowered(workspace.checks,
                                          f"verify.workspaces[{workspace.path}].checks"))
        for workspace in verify.workspaces
    ]
    if over:
        named = ", ".join(over[:NAMED_TIMEOUTS])
        more = f" and {len(over) - NAMED_TIMEOUTS} more" if len(over) > NAMED_TIMEOUTS else ""
        notes.append(f"{named}{more} ask for longer than the service's ceiling of"
                     f" {longest:g} s per check (RATCHET_CHECK_TIMEOUT); those checks run with"
                     f" {longest:g} s")
    return replace(verify, **update), notes
