# The Ratchet service and its workers: one image, the command picks the role. Two targets:
#   docker build -t ratchet .                        # service: Ratchet, git, bubblewrap
#   docker build --target agents -t ratchet:agents . # and node with the pinned agent CLIs
# README.md ("Run it as a GitHub App", "Containers") has the `docker run` and compose.yaml
# commands. The image serves on 0.0.0.0, which `ratchet serve` refuses without sign-in: the
# App's credentials file (`ratchet github-app create` writes it; the README copies it into the
# volume, where RATCHET_GITHUB_CREDENTIALS below names it) or RATCHET_GITHUB_CLIENT_ID and
# _SECRET with the App's settings, or at least RATCHET_API_TOKEN (/api/* by that token only);
# otherwise it exits 2 naming what to set.
#   docker run --init -v ratchet:/var/lib/ratchet ratchet worker --processes 2   # a worker
# --init (compose: `init: true`) puts tini in front as PID 1: it reaps the git and agent
# grandchildren that Ratchet orphans; signals still reach `ratchet` unchanged.
# Agents and checks run in a bubblewrap sandbox, which needs user namespaces inside the
# container: add `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`
# (Docker's default profiles refuse unshare/mount) or a seccomp profile that allows them;
# no extra capability is needed. docs/operations.md, "Sandbox", has the details.

# --- build: Ratchet into a virtual environment of its own, copied whole into the runtime ----
FROM python:3.11-slim-bookworm AS build

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Only what the distribution needs; .dockerignore keeps everything else out of the context.
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app/ app/
COPY runner/ runner/
COPY verification/ verification/
COPY github/ github/
COPY plumbing/ plumbing/
RUN python -m venv /opt/ratchet \
    && /opt/ratchet/bin/pip install --no-cache-dir .

# --- runtime: what the service and workers need at run time, no build leftovers -------------
FROM python:3.11-slim-bookworm AS runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/ratchet/bin:$PATH \
    RATCHET_HOME=/var/lib/ratchet \
    RATCHET_GITHUB_CREDENTIALS=/var/lib/ratchet/github-app.json

# git: workspaces are git worktrees and publishing pushes a branch. bubblewrap: the sandbox of
# agents and checks. Not version-pinned: the base image's Debian release moves, and an exact
# pin would break the build when it does.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap \
    && rm -rf /var/lib/apt/lists/*

# A non-root user that owns the ledger, run directories and workspaces. The folder is created
# and chowned before VOLUME: changes to a volume path after its declaration are discarded.
# A fixed numeric id, used in USER below: Kubernetes' runAsNonRoot can only verify a number.
RUN groupadd --system --gid 10001 ratchet \
    && useradd --system --uid 10001 --gid ratchet --create-home --home-dir /home/ratchet \
        --shell /usr/sbin/nologin ratchet \
    && mkdir -p /var/lib/ratchet \
    && chown ratchet:ratchet /var/lib/ratchet

# The same base image as the build stage: the environment's python links stay valid.
COPY --from=build /opt/ratchet /opt/ratchet

VOLUME ["/var/lib/ratchet"]
WORKDIR /var/lib/ratchet
USER 10001:10001

EXPOSE 8000
# Liveness only (/readyz: the ledger, the broker and the checks at start). Workers serve no
# HTTP: run them with --no-healthcheck (compose: `healthcheck: {disable: true}`). slim has no
# curl, hence urllib.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

# Exec form: `ratchet` is PID 1's direct child under --init (or PID 1 itself), never wrapped
# in /bin/sh -c, so SIGTERM from `docker stop` reaches it and a worker can finish its step.
ENTRYPOINT ["ratchet"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]

# --- node: the runtime of the npm agent CLIs, copied from its official image -----------------
FROM node:22-bookworm-slim AS node

# --- agents: the runtime plus the agent CLIs of the presets, at the versions tested ----------
# The versions are those tests/agents/clis.py pins (`make test-agents` runs each preset end to
# end with them); tests/test_dockerfile.py fails when the two disagree. Everything lands in
# /usr/local and /opt, which the sandbox shows agents read-only.
FROM runtime AS agents

USER root
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
    && npm install --global --no-fund --no-audit --omit=dev \
        @anthropic-ai/claude-code@2.1.332 \
        @openai/codex@0.171.0 \
        opencode-ai@1.18.33 \
        @google/gemini-cli@0.61.0 \
        @github/copilot@1.0.102 \
    && npm cache clean --force \
    && rm -rf /root/.npm
# aider in a virtual environment of its own: its pins never meet Ratchet's.
RUN /usr/local/bin/python -m venv /opt/aider \
    && /opt/aider/bin/pip install --no-cache-dir aider-chat==0.86.2 \
    && ln -s /opt/aider/bin/aider /usr/local/bin/aider
USER 10001:10001

# --- service: the default target (`docker build .`), the runtime as it is --------------------
FROM runtime AS service
