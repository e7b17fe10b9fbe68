"""Throughput: whole runs through workers, and the durable step rate against DBOS and LangGraph.

Two measurements, each labelled in the report:

(a) End to end: ``--runs`` full runs (prepare, research, specify, approval, implement, verify,
    publish) with an instant agent (``sh`` writing its output file) and one ``true`` check,
    through the embedded default (SQLite ledger, Dramatiq StubBroker, the in-process worker of
    ``ratchet serve``) and through two ``ratchet worker`` processes on Redis + PostgreSQL.
    Prints runs per minute and per-step latency and overhead p50/p99 taken from the ledger's
    event timestamps. Each step still spawns git and the agent, so this measures the whole
    machinery, not the durable core alone.
(b) Durable steps: ``--steps`` step commits through Ratchet's SQLite ledger (one
    ``Store.apply`` with checkpoint, events and artifact per step, as in ``bench/ledger.py``),
    next to raw WAL commits and, with ``pip install -e '.[bench]'``, a DBOS workflow of as many
    ``@DBOS.step`` calls on SQLite and a LangGraph graph of as many super-steps checkpointed by
    ``SqliteSaver``. Every system uses WAL with ``synchronous=FULL``. Targets: Ratchet at least
    2x LangGraph and 4x DBOS.

    .venv/bin/python bench/throughput.py [--runs 200] [--steps 1000] [--threads 4]

PostgreSQL and Redis come from RATCHET_TEST_POSTGRES_URL and RATCHET_TEST_REDIS_URL (defaults:
the local servers); the bench uses a schema and queue namespace of its own and drops both.
Exits 0; a part that cannot run prints why.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import logging
import os
import secrets
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.compose import build_engine  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.wakeups import Reaper  # noqa: E402
from app.worker import build_wakeups  # noqa: E402
from bench.ledger import raw_commits, step_completions  # noqa: E402
from runner.changes import ENTRY_EVENTS as STATE_ENTRY_EVENTS  # noqa: E402
from runner.engine import Engine  # noqa: E402
from runner.ledger import open_store  # noqa: E402
from runner.ledger.store import Store  # noqa: E402
from runner.names import EventType, SignalKind  # noqa: E402
from runner.signal_payloads import Approve  # noqa: E402
from runner.workflow import State, is_runnable  # noqa: E402

log = logging.getLogger("bench.throughput")

# The instant agent: writes the phase's output file; implement also adds a product file, so
# verify has a change to plan checks for. No shell parses the prompt (no placeholders used).
AGENT_COMMAND = (
    "sh -c 'echo \"$RATCHET_PHASE done\" > \"$RATCHET_OUTPUT\";"
    " if [ \"$RATCHET_PHASE\" = implement ]; then echo ok > bench.txt; fi'"
)
# One instant check: verification runs for real but costs one `true` process.
REPO_CONFIG = (
    "repair: {max_attempts: 1}\nverify:\n  checks:\n    - {id: ok, kind: test, run: 'true'}\n"
)
ENTRY_EVENTS = set(STATE_ENTRY_EVENTS.values())
STARTED_EVENTS = {event for state, event in STATE_ENTRY_EVENTS.items() if is_runnable(state)}
STUCK = {State.FAILED, State.NEEDS_HUMAN, State.CANCELLED}
POLL_S = 0.02  # how often the bench looks for runs to approve (a reviewer who answers at once)
RUN_TIMEOUT_S = 900.0  # per batch of runs; a stuck batch is reported, not waited on forever
TARGET_LANGGRAPH = 2.0
TARGET_DBOS = 4.0
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


# --- (a) end to end -----------------------------------------------------------------------


@dataclass
class EndToEnd:
    runs: int
    wall_s: float
    step_s: list[float]  # a step's STARTED (or lease acquisition, if later) -> its commit
    overhead_s: list[float]  # the same minus the agent process's own duration
    wake_s: list[float]  # STARTED -> the lease acquisition that ran it (queue and wake-up)


def make_repo(path: Path) -> Path:
    (path / ".github").mkdir(parents=True)
    (path / ".github" / "ratchet.yml").write_text(REPO_CONFIG)
    (path / "README.md").write_text("# bench\n")
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True)
    return path


def drive(store: Store, engine: Engine, enqueue: Callable[[str], None], count: int,
          repo: Path) -> tuple[list[str], float]:
    """Create ``count`` runs, approve each spec as soon as it waits, until all are done."""
    started = time.monotonic()
    run_ids = []
    for i in range(count):
        run = engine.create_local_run(repo, title=f"bench {i}", agent_command=AGENT_COMMAND)
        run_ids.append(run.id)
        enqueue(run.id)
    pending = set(run_ids)
    while pending:
        if time.monotonic() - started > RUN_TIMEOUT_S:
            raise TimeoutError(f"{len(pending)} of {count} runs unfinished after"
                               f" {RUN_TIMEOUT_S:.0f}s, e.g. {sorted(pending)[:3]}")
        for run in store.list_runs(limit=count, states={State.AWAITING_APPROVAL, State.DONE,
                                                        *STUCK}):
            if run.id not in pending:
                continue
            if run.state is State.AWAITING_APPROVAL:
                if store.signals(run.id):
                    continue  # approved already; its worker has not answered yet
                spec = store.read_artifact(run.id, "spec.md") or b""
                engine.signal(run.id, SignalKind.APPROVE, author="bench",
                              payload=Approve(hash=hashlib.sha256(spec).hexdigest()))
                enqueue(run.id)
            elif run.state is State.DONE:
                pending.discard(run.id)
            else:
                raise RuntimeError(f"run {run.id} ended {run.state.value}: {run.reason}")
        time.sleep(POLL_S)
    return run_ids, time.monotonic() - started


def measure(store: Store, run_ids: list[str], wall_s: float) -> EndToEnd:
    """Per-step times from the ledger: each entry event and the commit that follows it."""
    result = EndToEnd(len(run_ids), wall_s, [], [], [])
    for run_id in run_ids:
        agent_s = {c.step: float(c.result.get("duration_s", 0.0))
                   for c in store.checkpoints(run_id)}
        step, began, leased = None, None, None
        for event in store.events(run_id):
            if event.type == EventType.RUN_CREATED:
                step, began, leased = event.step, event.at, None
            elif event.type == EventType.LEASE_ACQUIRED and step is not None:
                leased = event.at
            elif event.type in ENTRY_EVENTS:
                if step is not None and began is not None and leased is not None:
                    start = max(began, leased)
                    result.step_s.append(event.at - start)
                    result.overhead_s.append(event.at - start - agent_s.get(step, 0.0))
                    if leased >= began:
                        result.wake_s.append(leased - began)
                waiting = event.type not in STARTED_EVENTS
                step, began = (None, None) if waiting else (event.step, event.at)
    return result


def bench_embedded(tmp: Path, count: int, threads: int) -> EndToEnd:
    """The embedded default: SQLite, a StubBroker and the in-process worker of ratchet serve."""
    from dramatiq import Worker

    settings = Settings(home=tmp / "home", store_url=None, broker_url=None,
                        agent_command=AGENT_COMMAND, threads=threads)
    store = open_store(settings.ledger_url)
    wakeups = build_wakeups(settings, reaper=False)
    worker = Worker(wakeups.broker, worker_threads=settings.threads, worker_timeout=100)
    worker.start()
    _, stop_reaper = Reaper(store, wakeups.enqueue, interval=settings.reap_seconds).start()
    try:
        engine = build_engine(store, settings)
        run_ids, wall = drive(store, engine, wakeups.enqueue, count, make_repo(tmp / "repo"))
        return measure(store, run_ids, wall)
    finally:
        stop_reaper.set()
        wakeups.stop_sessions()
        worker.stop()
        store.close()


@contextlib.contextmanager
def services(postgres_url: str, redis_url: str) -> Iterator[tuple[str, str]]:
    """A schema of our own in PostgreSQL and a queue namespace of our own in Redis, dropped
    afterwards. Yields (store URL, queue)."""
    import psycopg
    import redis

    schema, queue = f"bench_{secrets.token_hex(6)}", f"bench{secrets.token_hex(6)}"
    sep = "&" if "?" in postgres_url else "?"
    client = redis.Redis.from_url(redis_url)
    client.ping()
    with psycopg.connect(postgres_url, autocommit=True, connect_timeout=5):
        pass
    try:
        yield f"{postgres_url}{sep}schema={schema}", queue
    finally:
        with contextlib.suppress(redis.RedisError):
            keys = list(client.scan_iter(f"{queue}:*"))
            if keys:
                client.delete(*keys)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def bench_distributed(tmp: Path, count: int, threads: int, postgres_url: str,
                      redis_url: str) -> EndToEnd:
    """Two `ratchet worker` processes on Redis + PostgreSQL; this process creates and approves."""
    import redis

    with services(postgres_url, redis_url) as (store_url, queue):
        settings = Settings(home=tmp / "home", store_url=store_url, broker_url=redis_url,
                            queue=queue, agent_command=AGENT_COMMAND)
        store = open_store(store_url)  # migrates the schema before the workers start
        env = {k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")}
        env.update(RATCHET_HOME=str(settings.home), RATCHET_STORE_URL=store_url,
                   RATCHET_BROKER_URL=redis_url, RATCHET_QUEUE=queue,
                   RATCHET_AGENT_COMMAND=AGENT_COMMAND)
        workers = []
        logs = [open(tmp / f"worker{i}.log", "w") for i in range(2)]  # noqa: SIM115
        try:
            for i in range(2):
                workers.append(subprocess.Popen(
                    [sys.executable, "-m", "app.cli", "worker", "--threads", str(threads)],
                    cwd=ROOT, env=env, stdout=logs[i], stderr=subprocess.STDOUT,
                    start_new_session=True,
                ))
            _wait_for_consumers(redis.Redis.from_url(redis_url), queue, len(workers))
            wakeups = build_wakeups(settings, reaper=False)
            engine = build_engine(store, settings)
            run_ids, wall = drive(store, engine, wakeups.enqueue, count,
                                  make_repo(tmp / "repo"))
            return measure(store, run_ids, wall)
        except Exception:
            for i, worker in enumerate(workers):
                tail = (tmp / f"worker{i}.log").read_text()[-2000:]
                log.error("worker %d (pid %d, exit %r) log tail:\n%s", i, worker.pid,
                          worker.poll(), tail)
            raise
        finally:
            _stop(workers)
            for fh in logs:
                fh.close()
            store.close()


def _wait_for_consumers(client: object, queue: str, count: int, timeout: float = 30.0) -> None:
    """Wait until ``count`` worker processes have booted (Dramatiq's Redis heartbeats)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.zcard(f"{queue}:__heartbeats__") >= count:  # type: ignore[attr-defined]
            return
        time.sleep(0.1)
    log.warning("workers did not report %d heartbeats in %.0fs; timing anyway", count, timeout)


def _stop(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


# --- (b) durable steps --------------------------------------------------------------------


def langgraph_steps(path: Path, n: int) -> float:
    """Durable steps/s of a LangGraph graph looping one node ``n`` times, each super-step
    checkpointed synchronously by ``SqliteSaver`` (WAL, set by its setup; synchronous=FULL)."""
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    class Counter(TypedDict):
        i: int

    graph = StateGraph(Counter)
    graph.add_node("step", lambda state: {"i": state["i"] + 1})
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda state: END if state["i"] >= n else "step")
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA synchronous = FULL")
    saver = SqliteSaver(conn)
    saver.setup()
    app = graph.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": n + 10}
    start = time.perf_counter()
    final = app.invoke({"i": 0}, config, durability="sync")
    elapsed = time.perf_counter() - start
    conn.close()
    assert final["i"] == n, final
    return n / elapsed


def dbos_steps(path: Path, n: int, *, wal: bool) -> float:
    """Durable steps/s of one DBOS workflow of ``n`` ``@DBOS.step`` calls on SQLite."""
    dbos = DbosBench(path, wal=wal)
    try:
        return dbos.steps(n)
    finally:
        dbos.close()


class DbosBench:
    """DBOS (a process-wide singleton) on a SQLite system database with synchronous=FULL (the
    SQLite default, which DBOS keeps), no Conductor and no OTLP. DBOS leaves the rollback
    journal on; with ``wal`` the file is switched to WAL first, as Ratchet and LangGraph use."""

    def __init__(self, path: Path, *, wal: bool) -> None:
        from dbos import DBOS

        if wal:  # journal_mode=WAL is a property of the file: set it before DBOS opens it
            with contextlib.closing(sqlite3.connect(path)) as db:
                db.execute("PRAGMA journal_mode = WAL")
        self.dbos = DBOS(config={
            "name": "ratchet-bench", "system_database_url": f"sqlite:///{path}",
            "enable_otlp": False, "log_level": "WARNING",
        })

        @DBOS.step()
        def step(i: int) -> int:
            return i

        @DBOS.workflow()
        def workflow(n: int) -> int:
            for i in range(n):
                step(i)
            return n

        self.workflow = workflow
        DBOS.launch()

    def steps(self, n: int) -> float:
        start = time.perf_counter()
        assert self.workflow(n) == n
        return n / (time.perf_counter() - start)

    def close(self) -> None:
        from dbos import DBOS

        DBOS.destroy(destroy_registry=True)


@dataclass
class StepRates:
    raw: float
    ratchet: float
    langgraph: float | None
    dbos: float | None  # WAL, like the others
    dbos_shipped: float | None  # DBOS's own default: rollback journal
    missing: list[str]


def bench_steps(tmp: Path, n: int, rounds: int) -> StepRates:
    """Medians over ``rounds`` interleaved rounds, so machine noise hits every system alike."""
    missing = [name for name, module in (("langgraph", "langgraph.graph"),
                                         ("langgraph-checkpoint-sqlite",
                                          "langgraph.checkpoint.sqlite"), ("dbos", "dbos"))
               if not _importable(module)]
    has_langgraph = not any(m.startswith("langgraph") for m in missing)
    has_dbos = "dbos" not in missing
    raw, ours, graph, dbos_wal, dbos_shipped = [], [], [], [], []
    for r in range(rounds):
        raw.append(raw_commits(tmp / f"raw{r}.db", n))
        ours.append(step_completions(tmp / f"ledger{r}.db", n))
        if has_langgraph:
            graph.append(langgraph_steps(tmp / f"langgraph{r}.db", n))
        if has_dbos:
            dbos_wal.append(dbos_steps(tmp / f"dbos-wal{r}.sqlite", n, wal=True))
            dbos_shipped.append(dbos_steps(tmp / f"dbos{r}.sqlite", n, wal=False))
    return StepRates(statistics.median(raw), statistics.median(ours), _median(graph),
                     _median(dbos_wal), _median(dbos_shipped), missing)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# --- report -------------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def print_end_to_end(label: str, result: EndToEnd) -> None:
    ms = 1000.0
    print(f"  {label}: {result.runs} runs in {result.wall_s:.1f}s ="
          f" {result.runs / result.wall_s * 60:.0f} runs/min, {len(result.step_s)} steps")
    for name, values in (("step latency ", result.step_s), ("step overhead", result.overhead_s),
                         ("wake-up delay", result.wake_s)):
        print(f"    {name} p50 {_pct(values, 0.5) * ms:7.1f} ms   p99"
              f" {_pct(values, 0.99) * ms:7.1f} ms")


def print_steps(n: int, rounds: int, rates: StepRates) -> None:
    print(f"(b) durable steps, {n} per system, median of {rounds} interleaved rounds; SQLite"
          " synchronous=FULL everywhere, WAL unless said")
    print(f"  raw WAL single-row commits (baseline)       {rates.raw:8.0f}/s")
    print(f"  ratchet ledger step commits (Store.apply)   {rates.ratchet:8.0f}/s"
          f"   {rates.ratchet / rates.raw:.2f} of raw")
    for name, rate, target in (
        ("langgraph SqliteSaver super-steps", rates.langgraph, TARGET_LANGGRAPH),
        ("dbos @DBOS.step on SQLite", rates.dbos, TARGET_DBOS),
        ("dbos as shipped (rollback journal)", rates.dbos_shipped, TARGET_DBOS),
    ):
        if rate is None:
            print(f"  {name:<42}  skipped: install .[bench] (missing:"
                  f" {', '.join(rates.missing)})")
            continue
        ratio = rates.ratchet / rate
        verdict = "ok" if ratio >= target else "BELOW TARGET"
        print(f"  {name:<42}  {rate:8.0f}/s   ratchet/{name.split()[0]} {ratio:.2f}x"
              f" (target >= {target:g}x) {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="example: .venv/bin/python bench/throughput.py --runs 50 --steps 500",
    )
    parser.add_argument("--runs", type=int, default=200, help="full runs per setup (a)")
    parser.add_argument("--steps", type=int, default=1000, help="durable steps per system (b)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of (b); median reported")
    parser.add_argument("--threads", type=int, default=4,
                        help="worker threads: in-process worker and each `ratchet worker`")
    parser.add_argument("--skip-runs", action="store_true", help="only (b)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for key in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):  # no tracing uploads
        os.environ.pop(key, None)
    postgres_url = os.environ.get("RATCHET_TEST_POSTGRES_URL",
                                  "postgresql://postgres@127.0.0.1:5432/test")
    redis_url = os.environ.get("RATCHET_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

    with tempfile.TemporaryDirectory(prefix="ratchet-bench-") as tmp:
        root = Path(tmp)
        if not args.skip_runs:
            print(f"(a) end to end: {args.runs} full runs each, instant sh agent, one `true`"
                  f" check, {args.threads} worker threads per process")
            for label, bench in (
                ("embedded (SQLite + in-process worker)",
                 lambda d: bench_embedded(d, args.runs, args.threads)),
                ("2 workers (Redis + PostgreSQL)",
                 lambda d: bench_distributed(d, args.runs, args.threads, postgres_url,
                                             redis_url)),
            ):
                folder = root / label.split()[0]
                folder.mkdir()
                try:
                    print_end_to_end(label, bench(folder))
                except Exception as exc:  # one setup failing must not hide the others
                    log.debug("bench failed", exc_info=True)
                    print(f"  {label}: not measured: {type(exc).__name__}: {exc}")
            print("  step latency: from a step's STARTED event (or its lease, if later) to its"
                  " commit;\n  step overhead: the same minus the agent process's own run time;"
                  "\n  wake-up delay: STARTED event to the lease that ran it (queue wait).")
        print_steps(args.steps, args.rounds, bench_steps(root, args.steps, args.rounds))
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    sys.exit(main())
