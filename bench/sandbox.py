"""What the bubblewrap sandbox, and its network namespace and egress proxy, add to an agent step;
and what the proxy costs a model API stream.

Steps: the same trivial agent (a shell writing its output file) runs through ``CommandAgent``
unconfined, in bubblewrap on the host's network without the forwarder (the sandbox as it was
before the network namespace; the step's proxy object still starts, unused: its start and stop
are timed on their own), and in the sandbox as it is (own network namespace, egress proxy,
forwarder), in turn, so all see the same machine load. Printed: p50 and p90 of each, the
sandbox's added cost per step at p50, and what the namespace and proxy add to bubblewrap at
p50 (target under 50 ms) with the ratio of the medians.

Stream: a scripted model API on loopback streams server-sent events; the same client reads it
directly from the host and from inside the sandbox through the proxy's model route (the key
added there), timing only its own read. Printed: MB/s each way and the ratio.

    .venv/bin/python bench/sandbox.py [--steps N] [--stream-mb M]
"""

from __future__ import annotations

import argparse
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.agents.base import AgentTask
from runner.agents.command import CommandAgent
from runner.egress import EgressProxy
from runner.network import NetworkPolicy, NetworkSettings, model_routes
from runner.sandbox import Sandbox, SandboxMode

TARGET_ADDED_MS = 50.0
TEMPLATE = "sh -c 'echo done > \"$RATCHET_OUTPUT\"'"


def one_step(agent: CommandAgent, root: Path, n: int) -> float:
    folder = root / f"step-{n}"
    worktree = folder / "worktree"
    worktree.mkdir(parents=True)
    prompt = folder / "prompt.md"
    prompt.write_text("bench")
    task = AgentTask(
        run_id="bench", phase="research", step=f"research.{n}", worktree=worktree,
        prompt="bench", prompt_file=prompt, output_dir=folder / "out",
        output=folder / "out" / "research" / "repository-analysis.md",
        log_file=folder / "agent.log", timeout=60,
    )
    task.output.parent.mkdir(parents=True)
    started = time.perf_counter()
    agent.run(task)
    return time.perf_counter() - started


class HostNetworkSandbox(Sandbox):
    """bubblewrap as it was before the network namespace: the host's network, no forwarder."""

    def command(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path] = (),
                readable: Sequence[Path] = (), network: Any = None) -> list[str]:
        built = super().command(argv, cwd=cwd, writable=writable, readable=readable)
        return [arg for arg in built if arg != "--unshare-net"]


def proxy_start_stop(steps: int) -> float:
    """p50 seconds to start and stop one step's egress proxy (socket, folder, thread)."""
    timings = []
    for _ in range(steps):
        started = time.perf_counter()
        with EgressProxy(NetworkPolicy("agents", "agent.network.allow")):
            pass
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def bench_steps(steps: int) -> bool:
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-sandbox-") as scratch:
        root = Path(scratch)
        home = root / "home"
        home.mkdir()
        agents = {
            "none": CommandAgent(TEMPLATE, sandbox=Sandbox(mode=SandboxMode.NONE)),
            "bwrap, host network": CommandAgent(TEMPLATE,
                                                sandbox=HostNetworkSandbox(hidden=(home,))),
            "bwrap, netns + proxy": CommandAgent(TEMPLATE, sandbox=Sandbox(hidden=(home,))),
        }
        agents["bwrap, netns + proxy"].sandbox.check()
        for mode, agent in agents.items():  # the probe and page cache, outside the timing
            one_step(agent, root / "warm" / mode.replace(" ", "-"), 0)
        timings: dict[str, list[float]] = {mode: [] for mode in agents}
        for n in range(steps):
            for mode, agent in agents.items():
                timings[mode].append(one_step(agent, root / mode.replace(" ", "-"), n))
    p50 = {mode: statistics.median(values) * 1000 for mode, values in timings.items()}
    p90 = {mode: statistics.quantiles(values, n=10)[-1] * 1000 for mode, values in timings.items()}
    for mode in agents:
        print(f"agent step, {mode}: p50 {p50[mode]:.1f} ms, p90 {p90[mode]:.1f} ms")
    before, now = p50["bwrap, host network"], p50["bwrap, netns + proxy"]
    print(f"sandbox added cost per agent step at p50: {now - p50['none']:.1f} ms"
          f" (ratio {now / p50['none']:.2f})")
    added = now - before
    met = "met" if added < TARGET_ADDED_MS else "NOT met"
    print(f"network namespace + proxy + forwarder added per agent step at p50: {added:.1f} ms"
          f" (target < {TARGET_ADDED_MS:.0f} ms: {met}); ratio against bwrap without them"
          f" {now / before:.2f}; of it, the proxy's start and stop:"
          f" {proxy_start_stop(steps) * 1000:.2f} ms")
    return added < TARGET_ADDED_MS


# --- a model API stream ------------------------------------------------------------------------

# The client: one request, the whole stream read; prints the bytes and the seconds it took.
CLIENT = """
import os, sys, time, urllib.request
request = urllib.request.Request(sys.argv[1] + "/v1/messages", data=b'{"stream": true}',
                                 headers={"x-api-key": os.environ.get("ANTHROPIC_API_KEY", "")})
started = time.perf_counter()
size = 0
with urllib.request.urlopen(request, timeout=120) as response:
    while chunk := response.read1(65536):
        size += len(chunk)
print(size, time.perf_counter() - started)
"""


def stream_server(total: int) -> http.server.ThreadingHTTPServer:
    """A model API streaming ``total`` bytes of server-sent events, 4 KiB an event."""
    event = b"event: content_block_delta\ndata: " + b"x" * 4050 + b"\n\n"

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for _ in range(total // len(event)):
                self.wfile.write(event)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def read_stream(argv: list[str], env: dict[str, str]) -> float:
    """MB/s the client read at."""
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300,
                          check=True)
    size, seconds = done.stdout.split()
    return int(size) / float(seconds) / 1e6


def bench_stream(megabytes: int, rounds: int = 3) -> None:
    server = stream_server(megabytes * 1_000_000)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    routes = model_routes({"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "bench-key"})
    policy = NetworkSettings(routes=routes).for_agents((), ())
    env = {**os.environ, "ANTHROPIC_API_KEY": "bench-key"}
    direct, proxied = [], []
    try:
        with EgressProxy(policy, label="bench") as proxy:
            inside = proxy.endpoint.environment()["ANTHROPIC_BASE_URL"]
            confined = Sandbox().command([sys.executable, "-c", CLIENT, inside], cwd=Path("/"),
                                         network=proxy.endpoint)
            for _ in range(rounds):
                direct.append(read_stream([sys.executable, "-c", CLIENT, url], env))
                proxied.append(read_stream(confined, env))
    finally:
        server.shutdown()
        server.server_close()
    best_direct, best_proxied = max(direct), max(proxied)
    print(f"model API stream ({megabytes} MB of server-sent events, best of {rounds}):"
          f" direct {best_direct:.0f} MB/s, through the sandbox's proxy route"
          f" {best_proxied:.0f} MB/s (ratio {best_proxied / best_direct:.2f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--stream-mb", type=int, default=64)
    args = parser.parse_args(argv)
    met = bench_steps(args.steps)
    bench_stream(args.stream_mb)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
