"""Settings, read once at start-up from ``RATCHET_*`` environment variables into one object."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from app.credentials_file import (
    CredentialsFileError,
    credentials_path,
    read_credentials,
    settings_from_file,
)
from plumbing.environment import parse_names
from plumbing.logfile import MIN_LOG_BYTES
from runner.agents.command import MAX_LOG_BYTES, MAX_OUTPUT_BYTES
from runner.agents.presets import PRESETS
from runner.budget import Budget
from runner.config import (
    DEFAULT_MAX_CHANGE_BYTES,
    DEFAULT_MAX_CHANGED_FILES,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_SUBAGENT_CONCURRENCY,
)
from runner.faults import CrashPoints
from runner.ledger import sqlite_path
from runner.network import NetworkSettings, model_routes, parse_hosts
from runner.prices import Price, load_prices
from runner.redact import Redactor
from runner.sandbox import PRIVATE_FOLDERS, Sandbox, SandboxMode
from runner.settings import EngineSettings

log = logging.getLogger(__name__)

# Variables that configure Ratchet itself: none of them reaches an agent's environment.
_PREFIX = "RATCHET_"
# Longest lease a run may hold (a day): a lease is renewed by a heartbeat, never held blind.
MAX_LEASE_SECONDS = 86400
SANDBOX_REMEDY = (
    "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap; Alpine: apk add bubblewrap), or set RATCHET_SANDBOX=none to run agents and "
    "checks unconfined (they can then read Ratchet's secrets)"
)


def default_home() -> Path:
    state = os.environ.get("XDG_STATE_HOME")
    return (Path(state) if state else Path.home() / ".local" / "state") / "ratchet"


def _seconds(default: float, *, ge: float = 0.001, le: float | None = None) -> float:
    """A duration setting: finite, positive (``.inf`` or ``nan`` name no duration)."""
    return Field(default, ge=ge, le=le, allow_inf_nan=False)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=_PREFIX, extra="ignore")

    home: Path = Field(default_factory=default_home)
    store_url: str | None = None  # sqlite:///PATH or postgresql://...; default $home/ratchet.db
    broker_url: str | None = None  # redis:// or amqp://; unset: in-process StubBroker
    queue: str = "ratchet"  # Dramatiq queue name and Redis key namespace
    shutdown_seconds: float = _seconds(600.0)  # SIGTERM: how long a worker may finish
    threads: int = Field(4, ge=1)  # in-process worker threads of `ratchet serve`
    agent_command: str | None = None
    lease_seconds: float = _seconds(30.0, ge=1, le=MAX_LEASE_SECONDS)
    reap_seconds: float = _seconds(5.0)
    agent_timeout: float = _seconds(3600.0)
    approval_timeout: float = _seconds(7 * 24 * 3600.0)
    max_attempts: int = Field(5, ge=1)
    sandbox: SandboxMode = SandboxMode.BWRAP  # bwrap, or none (unconfined: not recommended)
    sandbox_rw: str = ""  # colon-separated cache folders every agent may write (never checks)
    sandbox_ro: str = ""  # colon-separated tool folders agents and checks see read-only
    # What of the runner's environment agents and checks get (plumbing/environment.py).
    agent_env: str = ""  # comma-separated variables every agent gets (its model API key)
    check_env: str = ""  # comma-separated variables checks get when verify.env asks for them
    agent_home_seed: str = ""  # colon-separated CLI config paths copied into each agent's HOME
    # Egress (runner/network.py): hosts every agent may reach besides its model API, and the
    # hosts a repository's agent.network.allow or verify.network may open (`*`: any).
    agent_network_allow: str = ""
    repository_network_allow: str = ""
    max_output_bytes: int = Field(MAX_OUTPUT_BYTES, ge=1)  # cap on a phase's output file
    max_log_bytes: int = Field(MAX_LOG_BYTES, ge=MIN_LOG_BYTES)  # cap on a log on disk
    # Ceilings a repository's config may lower, never raise (runner/ceilings.py).
    check_concurrency: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1)
    check_timeout: float = _seconds(3600.0)  # seconds per check
    # Research subagents at once: a sandbox per core, at least a repository's default.
    subagent_concurrency: int = Field(
        default_factory=lambda: max(DEFAULT_SUBAGENT_CONCURRENCY, os.cpu_count() or 1), ge=1)
    # How big a run's change may get (a repository's `limits:` may only lower these).
    max_file_bytes: int = Field(DEFAULT_MAX_FILE_BYTES, ge=1)
    max_change_bytes: int = Field(DEFAULT_MAX_CHANGE_BYTES, ge=1)
    max_changed_files: int = Field(DEFAULT_MAX_CHANGED_FILES, ge=1)
    # GitHub: the App, its webhook, and who may trigger what.
    webhook_secret: str | None = None  # deliveries without a matching signature are refused
    insecure_dev_webhooks: bool = False  # accept unsigned deliveries (local development only)
    trigger_label: str = "ratchet"  # comma-separated labels that start a run on an issue
    # The least role whose label starts a run (triage, write, maintain or admin).
    trigger_permission: Literal["triage", "write", "maintain", "admin"] = "write"
    allowed_bots: str = ""  # comma-separated bot logins whose commands are not ignored
    public_url: str | None = None  # where this service is reachable (links, the App manifest)
    # The App's id, slug, key, webhook secret, OAuth client and GitHub URLs below, where no
    # variable sets them, come from the file `ratchet github-app create` wrote
    # (RATCHET_GITHUB_CREDENTIALS, default ~/.config/ratchet/github-app.json).
    github_app_id: int | None = None
    github_app_slug: str | None = None  # its bot <slug>[bot]; unset: any bot's marker is trusted
    github_private_key: str | None = None  # PEM text
    github_private_key_file: Path | None = None
    github_api_url: str = "https://api.github.com"
    github_graphql_url: str | None = None  # derived from the API URL when unset
    github_mutation_interval: float = _seconds(1.0, ge=0.0)  # GitHub asks for 1 s between writes
    # The dashboard (app/dashboard/): who may look, and how often live pages poll the ledger.
    github_client_id: str | None = None  # the App's OAuth client: sign-in with GitHub
    github_client_secret: str | None = None
    github_web_url: str | None = None  # OAuth pages and links; derived from the API URL if unset
    api_token: str | None = None  # a bearer token that reads /api/*
    session_secret: str | None = None  # signs session cookies; derived when unset
    trusted_proxies: str = ""  # comma-separated IPs/CIDRs whose X-Forwarded-*/Forwarded count
    dashboard_poll_seconds: float = _seconds(1.0, ge=0.05)  # one ledger poll per interval
    crash_at: str | None = None  # failure-injection tests only (runner/faults.py)
    # Agents and budgets: a preset instead of a command template, and what one run may spend
    # where its repository's `budget:` leaves a limit unset (runner/budget.py).
    agent: str | None = None  # claude, codex, aider, goose or opencode (runner/agents/presets.py)
    # Dollars per million tokens by model (JSON, or a file of it) over the shipped table, for CLIs
    # that report tokens but no cost (runner/prices.py).
    agent_prices: str = ""
    budget_max_cost_usd: float | None = Field(None, gt=0, allow_inf_nan=False)
    budget_max_agent_minutes: float | None = Field(None, gt=0, allow_inf_nan=False)
    budget_max_agent_runs: int | None = Field(None, ge=1)
    budget_max_run_hours: float | None = Field(None, gt=0, allow_inf_nan=False)

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Variables first, then the App's credentials file for what they leave unset."""
        return (init_settings, env_settings, _CredentialsFileSource(settings_cls))

    @field_validator("home")
    @classmethod
    def _home_is_a_folder(cls, value: Path) -> Path:
        """An absolute folder, resolved against the folder Ratchet starts in: agents and checks
        work in other folders, where a relative home would name another place."""
        if value.exists() and not value.is_dir():
            raise ValueError(f"{value} is a file; RATCHET_HOME must name a folder")
        return value.absolute()

    @field_validator("store_url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value:
            sqlite_path(value)  # ValueError naming the scheme
        return value

    @field_validator("sandbox_rw")
    @classmethod
    def _absolute_folders(cls, value: str) -> str:
        for folder in filter(None, value.split(":")):
            if not Path(folder).is_absolute():
                raise ValueError(f"{folder!r} is not an absolute path")
        return value

    @field_validator("agent_network_allow", "repository_network_allow")
    @classmethod
    def _hosts(cls, value: str) -> str:
        parse_hosts(value)
        return value

    @field_validator("agent_env", "check_env")
    @classmethod
    def _variable_names(cls, value: str) -> str:
        parse_names(value)  # ValueError naming the word
        return value

    @field_validator("agent_home_seed", "sandbox_ro")
    @classmethod
    def _seed_paths(cls, value: str) -> str:
        for path in filter(None, value.split(":")):
            if not Path(path).expanduser().is_absolute():
                raise ValueError(f"{path!r} is not an absolute path (or one under ~)")
        return value

    @field_validator("agent_prices")
    @classmethod
    def _readable_prices(cls, value: str) -> str:
        load_prices(value)  # ValueError naming what is wrong
        return value

    @field_validator("agent")
    @classmethod
    def _known_preset(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if value not in PRESETS:
            raise ValueError(f"{value!r} is not a preset; the presets are {', '.join(PRESETS)}")
        if info.data.get("agent_command"):
            raise ValueError("RATCHET_AGENT_COMMAND is set too: set one of them")
        return value

    def budget_defaults(self) -> Budget:
        """The service-wide budget (RATCHET_BUDGET_*): limits a repository leaves unset."""
        return Budget(max_cost_usd=self.budget_max_cost_usd,
                      max_agent_runs=self.budget_max_agent_runs,
                      max_agent_minutes=self.budget_max_agent_minutes,
                      max_run_hours=self.budget_max_run_hours)

    @property
    def ledger_url(self) -> str:
        return self.store_url or str(self.home / "ratchet.db")

    @property
    def trigger_labels(self) -> frozenset[str]:
        return frozenset(label.strip() for label in self.trigger_label.split(",")
                         if label.strip())

    @property
    def allowed_bot_logins(self) -> frozenset[str]:
        return frozenset(login.strip() for login in self.allowed_bots.split(",") if login.strip())

    @property
    def agent_env_names(self) -> tuple[str, ...]:
        return parse_names(self.agent_env)

    @property
    def check_env_names(self) -> tuple[str, ...]:
        return parse_names(self.check_env)

    @property
    def home_seed(self) -> tuple[Path, ...]:
        """The CLI config paths copied into each agent's fresh HOME (``~`` expanded)."""
        return tuple(Path(p).expanduser() for p in self.agent_home_seed.split(":") if p)

    @property
    def credentials_path(self) -> Path:
        """Where the App's credentials file is (or would be written)."""
        return credentials_path(os.environ)

    def key_from_credentials_file(self) -> Path | None:
        """The credentials file the App's key was read from, or None when a variable gave it
        (or there is none): what doctor's remedies name."""
        if self.github_private_key_file is not None or not self.github_private_key:
            return None
        try:
            saved = read_credentials(self.credentials_path)
        except CredentialsFileError:
            return None
        if saved is None or saved.private_key != self.github_private_key:
            return None
        return self.credentials_path

    def secret_values(self) -> tuple[str, ...]:
        """Every secret these settings hold, to mask wherever text is printed: the App's key
        (and each of its lines), the webhook secret, the OAuth client's secret."""
        others = (self.webhook_secret, self.github_client_secret)
        return (*self.private_key_lines(), *(value for value in others if value))

    def private_key_lines(self) -> tuple[str, ...]:
        """The App's private key and each of its lines, to mask wherever any of it is printed;
        nothing without a key, or when its file cannot be read (the App's client says why)."""
        text = self.github_private_key
        if text is None and self.github_private_key_file is not None:
            try:
                text = self.github_private_key_file.read_text()
            except (OSError, UnicodeDecodeError):
                return ()
        if not text:
            return ()
        lines = (line.strip() for line in text.splitlines())
        return (text, *(line for line in lines if line and "PRIVATE KEY" not in line))

    def sandbox_policy(self) -> Sandbox:
        """Where agents and checks run: Ratchet's home and secret files are never visible."""
        hidden = [self.home, self.credentials_path]
        if self.github_private_key_file is not None:
            hidden.append(self.github_private_key_file)
        ledger = sqlite_path(self.ledger_url)
        if ledger is not None:
            hidden += [ledger, ledger.with_name(ledger.name + "-wal"),
                       ledger.with_name(ledger.name + "-shm")]
        shared = tuple(Path(p) for p in self.sandbox_rw.split(":") if p)
        tools = tuple(Path(p).expanduser() for p in self.sandbox_ro.split(":") if p)
        for name, folders in (("RATCHET_SANDBOX_RW", shared), ("RATCHET_SANDBOX_RO", tools)):
            for folder in folders:
                problem = _folder_problem(folder, self.home_seed)
                if problem:
                    raise SettingsError(f"invalid settings: {name}: {problem}")
        if self.sandbox is SandboxMode.NONE:
            log.warning("RATCHET_SANDBOX=none: agents and checks run unconfined and can read "
                        "Ratchet's settings and ledger; each run records this in its evidence")
        try:
            return Sandbox(mode=self.sandbox, hidden=tuple(hidden), shared=shared, tools=tools,
                           remedy=SANDBOX_REMEDY)
        except ValueError as exc:
            raise SettingsError(f"invalid settings: {exc}") from None

    def network_settings(self) -> NetworkSettings:
        """Where agents and checks may connect; the model API routes come from this process's
        own environment (ANTHROPIC_API_KEY, OPENAI_BASE_URL, ...), which sandboxes never see."""
        try:
            routes = model_routes(os.environ)
        except ValueError as exc:
            raise SettingsError(f"invalid settings: {exc}") from None
        return NetworkSettings(
            agent_allow=parse_hosts(self.agent_network_allow),
            repository_allow=parse_hosts(self.repository_network_allow),
            routes=routes,
        )

    def prices(self) -> Mapping[str, Price]:
        return load_prices(self.agent_prices)  # validated at load

    def engine_settings(self) -> EngineSettings:
        return EngineSettings(
            home=self.home,
            lease_seconds=self.lease_seconds,
            agent_timeout=self.agent_timeout,
            approval_timeout=self.approval_timeout,
            max_attempts=self.max_attempts,
            agent_env=self.agent_env_names,
            check_env=self.check_env_names,
            agent_home_seed=self.home_seed,
            agent_prices=self.prices(),
            redact=Redactor.from_environment(os.environ,
                                             urls=(self.store_url, self.broker_url),
                                             secrets=self.secret_values()),
            default_agent_command=self.agent_command,
            default_agent=self.agent,
            budget=self.budget_defaults(),
            crash=CrashPoints(self.crash_at),
            sandbox=self.sandbox_policy(),
            network=self.network_settings(),
            max_output_bytes=self.max_output_bytes,
            max_log_bytes=self.max_log_bytes,
            check_concurrency=self.check_concurrency,
            check_timeout=self.check_timeout,
            subagent_concurrency=self.subagent_concurrency,
            max_file_bytes=self.max_file_bytes,
            max_change_bytes=self.max_change_bytes,
            max_changed_files=self.max_changed_files,
        )


class SettingsError(Exception):
    """A RATCHET_* variable has a value that cannot be used; the message names it."""


class _CredentialsFileSource(PydanticBaseSettingsSource):
    """The App's credentials file (``app/credentials_file.py``) as a settings source: read
    once with the other settings, below the variables."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[object, str, bool]:
        return None, field_name, False  # __call__ reads the whole file at once

    def __call__(self) -> dict[str, object]:
        try:
            return settings_from_file(os.environ)
        except CredentialsFileError as exc:
            raise SettingsError(f"invalid settings: {exc}") from None


def load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"{_PREFIX}{'_'.join(str(p) for p in err['loc']).upper()}: "
            f"{err['msg'].removeprefix('Value error, ')}"
            for err in exc.errors()
        )
        raise SettingsError(f"invalid settings: {problems}") from None


def _folder_problem(folder: Path, seeds: tuple[Path, ...]) -> str | None:
    """Why ``folder`` must not be shown to every agent (or check), or None: never the runner's
    whole home, and never a CLI's config, which is only ever copied (what one agent writes in
    a shared folder, every later agent reads)."""
    host_home = Path.home()
    if host_home.is_relative_to(folder):
        return (f"{folder} holds the runner's home {host_home}; name the tool's or the cache's"
                " own folder (e.g. ~/.cargo, ~/.cache/pip)")
    for private in PRIVATE_FOLDERS:
        if Path(private).is_relative_to(folder):
            return (f"{folder} holds {private}, where host services keep their sockets; name"
                    " the tool's or the cache's own folder")
    for seed in seeds:
        if seed.is_relative_to(folder) or folder.is_relative_to(seed):
            return (f"{folder} overlaps the seeded CLI config {seed}: a config an agent can"
                    " write reaches every later agent; seed it with RATCHET_AGENT_HOME_SEED"
                    " only")
    return None
