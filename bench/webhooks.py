"""Webhook acknowledgements: signed deliveries per second and latency, against a bare endpoint.

GitHub waits 10 s for a delivery's answer, then counts it failed; a service that answers late
under a burst loses deliveries. Two servers run side by side as subprocesses under uvicorn on
this host, and one open-loop generator (this process) offers each the same deliveries:

- ``ratchet serve`` on embedded defaults: a SQLite ledger in a temporary RATCHET_HOME, the
  in-process worker and the reaper, RATCHET_WEBHOOK_SECRET set, RATCHET_AGENT_COMMAND=true;
- the baseline, measured in the same run: a bare Starlette endpoint that only checks
  ``X-Hub-Signature-256`` (HMAC-SHA256 of the body), i.e. what uvicorn, Starlette and the HMAC
  cost on this machine right now.

The generator sends request i at ``start + i / rate`` whether or not earlier ones were answered
(aiohttp, a pool of keep-alive connections) and times each answer from that scheduled moment,
so a server that stalls is charged for the queue it causes (no coordinated omission). The
servers take turns in ``--slices`` slices (order rotating), so a burst of load from elsewhere
on the machine hits both alike. For context only, a third turn times one raw SQLite commit
(WAL, synchronous=FULL, as the ledger) at the same pace: the disk's floor for any endpoint
that records a delivery durably before answering.

The deliveries are GitHub's documented example payloads (``tests/data``), compact JSON, signed,
each with its own ``X-GitHub-Delivery``: 60% ``issue_comment.created`` with plain text and 35%
``issues.opened`` (ignored: 200), and 5% ``issues.labeled`` with the trigger label, each on an
issue of its own (each starts a run: 202). The in-process worker executes those runs during the
measurement, as it does in a deployment of ``ratchet serve``; with no GitHub App configured each
run stops at its first GitHub step (needs_human), so the worker's competing work is the ledger
transactions of starting and stopping runs, not clones and agents.

Target: ratchet's p99 at most 3x the bare endpoint's, and under 100 ms (GitHub's 10 s by two
orders of magnitude); any 5xx, timeout or connection error fails the bench. Exits 0 on PASS,
1 on FAIL.

    .venv/bin/python bench/webhooks.py [--rate 200] [--seconds 10] [--slices 5] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import hashlib
import hmac
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXAMPLES = ROOT / "tests" / "data" / "github-webhook-examples.json.gz"
SECRET = "bench-webhook-secret"
TRIGGER_LABEL = "ratchet"  # RATCHET_TRIGGER_LABEL's default
TARGET_RATIO = 3.0
TARGET_P99_S = 0.1  # GitHub's 10 s timeout, by two orders of magnitude
GITHUB_TIMEOUT_S = 10.0  # GitHub gives up on a delivery unanswered after 10 s
CONNECTIONS = 64  # the generator's keep-alive pool
START_TIMEOUT_S = 60.0
# Above this p99 the generator itself was starved of CPU: the machine is too busy to trust.
BUSY_LAG_S = 0.005
FIRST_ISSUE = 100_000  # labeled deliveries use issue numbers from here, one issue each
# (event, action, share in 20): mostly deliveries Ratchet ignores, some that start a run.
MIX = (("issue_comment", "created", 12), ("issues", "opened", 7), ("issues", "labeled", 1))


@dataclass(frozen=True)
class Delivery:
    """One signed request, built before the clock starts so signing is not measured."""

    kind: str  # event.action
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Server:
    """A server to offer deliveries to: ``command`` serves on the ``--port`` appended to it."""

    label: str
    command: list[str]
    env: dict[str, str]


@dataclass
class Tally:
    """What one server answered over every slice; latency counts from the scheduled send."""

    label: str
    latencies: list[float] = field(default_factory=list)  # answered requests only
    lags: list[float] = field(default_factory=list)  # actual send minus scheduled time
    statuses: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)  # offered, by event.action
    busy_s: float = 0.0  # per slice: first scheduled send -> last answer, summed

    @property
    def offered(self) -> int:
        return sum(self.kinds.values())

    @property
    def ok(self) -> int:
        return sum(n for s, n in self.statuses.items() if s.isdigit() and int(s) < 300)

    @property
    def failures(self) -> int:
        """Server errors, timeouts and connection errors: what GitHub records as failed."""
        return sum(n for s, n in self.statuses.items() if not s.isdigit() or int(s) >= 500)

    def pct(self, q: float) -> float:
        return percentile(self.latencies, q)


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: the value at or below which ``q`` of the samples lie."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


# --- deliveries ---------------------------------------------------------------------------


def load_examples() -> dict[str, list[dict[str, Any]]]:
    """GitHub's documented payloads of the mix's kinds, as ``{"event.action": [payload]}``."""
    with gzip.open(EXAMPLES) as packed:
        events = json.loads(packed.read())
    wanted = {f"{event}.{action}" for event, action, _ in MIX}
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in wanted}
    for event in events:
        for example in event["examples"]:
            kind = f"{event['name']}.{example.get('action')}"
            if kind in found:
                found[kind].append(example)
    empty = [kind for kind, examples in found.items() if not examples]
    if empty:
        raise SystemExit(f"{EXAMPLES} has no example of {', '.join(empty)}")
    return found


def build_deliveries(examples: dict[str, list[dict[str, Any]]], count: int, *,
                     first_issue: int, seed: int) -> list[Delivery]:
    """``count`` signed deliveries in the mix's proportions, in a shuffled order; every
    labeled one names the trigger label and an issue of its own (``first_issue`` on)."""
    kinds = [f"{event}.{action}" for event, action, share in MIX for _ in range(share)]
    rng = random.Random(seed)
    order = [kinds[i % len(kinds)] for i in range(count)]
    rng.shuffle(order)
    deliveries, issue = [], first_issue
    for i, kind in enumerate(order):
        payload = examples[kind][i % len(examples[kind])]
        if kind == "issues.labeled":
            payload = json.loads(json.dumps(payload))  # a copy to edit
            payload["label"]["name"] = TRIGGER_LABEL
            payload["issue"]["number"] = issue
            issue += 1
        body = json.dumps(payload, separators=(",", ":")).encode()
        deliveries.append(Delivery(kind, {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/bench",
            "X-GitHub-Event": kind.split(".")[0],
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(body),
        }, body))
    return deliveries


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# --- the open-loop generator ----------------------------------------------------------------


async def offer(session: aiohttp.ClientSession, url: str, deliveries: list[Delivery],
                rate: float, tally: Tally) -> None:
    """Send delivery i at ``start + i / rate`` regardless of answers; time from that moment."""
    last_answer = 0.0

    async def send(delivery: Delivery, scheduled: float) -> None:
        nonlocal last_answer
        tally.lags.append(time.perf_counter() - scheduled)
        try:
            async with session.post(url, data=delivery.body, headers=delivery.headers) as answer:
                await answer.read()
                status = str(answer.status)
        except TimeoutError:
            tally.statuses["timeout"] += 1
            return
        except aiohttp.ClientError as exc:
            tally.statuses[f"error ({type(exc).__name__})"] += 1
            return
        done = time.perf_counter()
        tally.latencies.append(done - scheduled)
        tally.statuses[status] += 1
        last_answer = max(last_answer, done)

    tasks = []
    start = time.perf_counter() + 0.01
    for i, delivery in enumerate(deliveries):
        scheduled = start + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(send(delivery, scheduled)))
    await asyncio.gather(*tasks)
    tally.kinds.update(delivery.kind for delivery in deliveries)
    tally.busy_s += max(last_answer - start, len(deliveries) / rate)


def commit_floor(path: Path, rate: float, count: int, latencies: list[float]) -> None:
    """The durability floor: one raw single-row SQLite commit (WAL, synchronous=FULL, as the
    ledger uses) paced like the deliveries; no endpoint that records before answering beats
    this disk's fsync."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        start = time.perf_counter()
        for i in range(count):
            scheduled = start + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            began = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t (v) VALUES (?)", (f"delivery {i}",))
            db.execute("COMMIT")
            latencies.append(time.perf_counter() - began)
    finally:
        db.close()


# --- the servers ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running(servers: list[Server], scratch: Path) -> Iterator[list[str]]:
    """Start every server at once (each serves on the ``--port`` appended to its command),
    wait for their /healthz, yield their base URLs; stop them all with SIGTERM (uvicorn's
    graceful shutdown) afterwards. Each one's output goes to ``scratch/server<i>.log``."""
    started: list[tuple[subprocess.Popen[bytes], str, Path]] = []
    try:
        for i, spec in enumerate(servers):
            port, log = free_port(), scratch / f"server{i}.log"
            with log.open("w") as out:
                process = subprocess.Popen(
                    [*spec.command, "--port", str(port)], cwd=ROOT, env=spec.env, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True)
            started.append((process, f"http://127.0.0.1:{port}", log))
        for process, base, log in started:
            _wait_healthy(base, process, log)
        yield [base for _, base, _ in started]
    finally:
        for process, _, _ in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process, _, _ in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _wait_healthy(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the server at {base} did not become healthy (exit {process.poll()});"
                       f" its log {log} ends:\n{log.read_text()[-3000:]}")


def base_env() -> dict[str, str]:
    """This environment without any RATCHET_* setting of the caller's own."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")}


def ratchet_command() -> list[str]:
    script = Path(sys.executable).parent / "ratchet"
    base = [str(script)] if script.exists() else [sys.executable, "-m", "app.cli"]
    return [*base, "serve", "--host", "127.0.0.1"]


def bare_command() -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--serve-bare", "--host", "127.0.0.1"]


def bare_app(secret: str) -> Starlette:
    """The baseline: a Starlette endpoint that checks the signature and nothing else."""
    key = secret.encode()

    async def receive(request: Request) -> JSONResponse:
        body = await request.body()
        expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, request.headers.get("x-hub-signature-256", "")):
            return JSONResponse({"error": "bad signature"}, status_code=401)
        return JSONResponse({"delivery": request.headers.get("x-github-delivery")})

    async def healthz(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/webhooks/github", receive, methods=["POST"]),
                             Route("/healthz", healthz)])


def serve_bare(host: str, port: int) -> int:
    """The baseline's subprocess: uvicorn as ``ratchet serve`` runs it (access log on)."""
    import uvicorn

    uvicorn.run(bare_app(os.environ["BENCH_WEBHOOK_SECRET"]), host=host, port=port,
                log_level="info")
    return 0


def runs_by_state(home: Path) -> Counter[str]:
    """The runs the deliveries started, by state, read from the stopped server's ledger."""
    from runner.ledger import open_store

    store = open_store(str(home / "ratchet.db"))
    try:
        return Counter(run.state.value for run in store.list_runs(limit=100_000))
    finally:
        store.close()


# --- the bench ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    rate: float
    seconds: float
    slices: int  # the servers take turns, so a burst of machine noise hits each alike
    warmup_s: float


def measure(servers: list[Server], plan: Plan, scratch: Path,
            examples: dict[str, list[dict[str, Any]]]) -> tuple[list[Tally], list[float]]:
    """Start every server, warm each up (imports, caches, the ledger's first pages), then
    offer each ``plan.slices`` slices in turn, the order rotating; the commit floor takes
    its turn too. Returns a tally per server and the floor's commit latencies."""
    per_slice = max(1, round(plan.rate * plan.seconds / plan.slices))
    with running(servers, scratch) as bases:
        urls = [f"{base}/webhooks/github" for base in bases]
        tallies = [Tally(s.label) for s in servers]
        floor: list[float] = []
        asyncio.run(_take_turns(urls, tallies, floor, plan, per_slice, scratch, examples))
    return tallies, floor


async def _take_turns(urls: list[str], tallies: list[Tally], floor: list[float], plan: Plan,
                      per_slice: int, scratch: Path,
                      examples: dict[str, list[dict[str, Any]]]) -> None:
    warm = build_deliveries(examples, max(1, round(plan.rate * plan.warmup_s)),
                            first_issue=FIRST_ISSUE, seed=0)
    issue = FIRST_ISSUE + len(warm)
    slices = []
    for n in range(plan.slices):  # labeled deliveries keep to issues of their own
        slices.append(build_deliveries(examples, per_slice, first_issue=issue, seed=n + 1))
        issue += per_slice
    timeout = aiohttp.ClientTimeout(total=GITHUB_TIMEOUT_S)
    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=CONNECTIONS), timeout=timeout))
            for _ in urls]
        for session, url, tally in zip(sessions, urls, tallies, strict=True):
            await offer(session, url, warm, plan.rate, Tally(tally.label))
        turns = len(urls) + 1  # the servers, then the floor
        for n, deliveries in enumerate(slices):
            for turn in range(turns):
                who = (turn + n) % turns
                if who == len(urls):
                    commit_floor(scratch / "floor.db", plan.rate, per_slice, floor)
                else:
                    await offer(sessions[who], urls[who], deliveries, plan.rate, tallies[who])


def report(bare: Tally, ours: Tally, floor: list[float], plan: Plan, *, quick: bool,
           runs: Counter[str]) -> bool:
    """Print both measurements and the verdict; True when every target is met."""
    ms = 1000.0
    shares = ", ".join(f"{share * 5}% {event}.{action}" for event, action, share in MIX)
    print(f"signed webhook deliveries, open loop: {plan.rate:g}/s offered for {plan.seconds:g} s"
          f" per server in {plan.slices} alternating slices ({bare.offered} each; {shares};"
          f" {CONNECTIONS} keep-alive connections)"
          + ("  [--quick: a smoke test, not a measurement]" if quick else ""))
    for tally in (bare, ours):
        codes = ", ".join(f"{status}: {n}" for status, n in sorted(tally.statuses.items()))
        print(f"  {tally.label:<34} achieved {tally.ok / tally.busy_s:6.1f}/s"
              f"   p50 {tally.pct(0.5) * ms:7.1f} ms  p99 {tally.pct(0.99) * ms:7.1f} ms"
              f"  max {max(tally.latencies, default=float('nan')) * ms:7.1f} ms"
              f"   status {codes}")
    print(f"  durability floor: a raw SQLite WAL commit (synchronous=FULL) at the same pace:"
          f" p50 {percentile(floor, 0.5) * ms:.1f} ms  p99 {percentile(floor, 0.99) * ms:.1f} ms"
          f"  max {max(floor, default=float('nan')) * ms:.1f} ms")
    lag = max(percentile(bare.lags, 0.99), percentile(ours.lags, 0.99))
    print(f"  generator send lag p99 (included above): bare {percentile(bare.lags, 0.99) * ms:.1f}"
          f" ms, ratchet {percentile(ours.lags, 0.99) * ms:.1f} ms"
          + ("  (the generator was starved: this machine is busy, re-run when it is quiet)"
             if lag > BUSY_LAG_S else ""))
    states = ", ".join(f"{state} {n}" for state, n in sorted(runs.items()))
    print(f"  runs started in ratchet (warm-up included), by state after the bench:"
          f" {sum(runs.values())} ({states or 'none'})")
    ratio = ours.pct(0.99) / bare.pct(0.99)
    problems = []
    if not ratio <= TARGET_RATIO:
        problems.append(f"p99 ratio {ratio:.2f} > {TARGET_RATIO:g}")
    if not ours.pct(0.99) < TARGET_P99_S:
        problems.append(f"ratchet p99 {ours.pct(0.99) * ms:.0f} ms >= {TARGET_P99_S * ms:.0f} ms")
    for tally in (bare, ours):
        if tally.failures:
            problems.append(f"{tally.label}: {tally.failures} 5xx, timeouts or errors")
    accepted, labeled = ours.statuses.get("202", 0), ours.kinds["issues.labeled"]
    if accepted != labeled:
        problems.append(f"ratchet accepted {accepted} deliveries with 202, expected {labeled}"
                        " (one per labeled issue)")
    print(f"p99 ratio ratchet/bare: {ratio:.2f}x (target <= {TARGET_RATIO:g}x); ratchet p99"
          f" {ours.pct(0.99) * ms:.1f} ms (target < {TARGET_P99_S * ms:.0f} ms; GitHub waits"
          f" {GITHUB_TIMEOUT_S:.0f} s)")
    print("PASS" if not problems else f"FAIL: {'; '.join(problems)}")
    return not problems


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="example: .venv/bin/python bench/webhooks.py --rate 400 --seconds 20",
    )
    parser.add_argument("--rate", type=float, default=200.0, help="deliveries offered per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each is offered")
    parser.add_argument("--slices", type=int, default=5,
                        help="turns each server takes (noise is shared between them)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: 40/s for 1 s in 2 slices (overrides the others)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the servers' logs and ledger (the folder is printed)")
    # The baseline's own subprocess (this file, run by the bench itself).
    parser.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.serve_bare:
        return serve_bare(args.host, args.port)
    plan = (Plan(rate=40.0, seconds=1.0, slices=2, warmup_s=0.25) if args.quick
            else Plan(rate=args.rate, seconds=args.seconds, slices=args.slices, warmup_s=2.0))
    examples = load_examples()
    scratch = Path(tempfile.mkdtemp(prefix="ratchet-bench-webhooks-"))
    try:
        home = scratch / "home"
        servers = [
            Server("bare Starlette + HMAC (baseline)", bare_command(),
                   {**base_env(), "BENCH_WEBHOOK_SECRET": SECRET}),
            Server("ratchet serve (embedded defaults)", ratchet_command(),
                   {**base_env(), "RATCHET_HOME": str(home), "RATCHET_WEBHOOK_SECRET": SECRET,
                    "RATCHET_AGENT_COMMAND": "true"}),
        ]
        (bare, ours), floor = measure(servers, plan, scratch, examples)
        passed = report(bare, ours, floor, plan, quick=args.quick, runs=runs_by_state(home))
    finally:
        if args.keep:
            print(f"logs and ledger kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
