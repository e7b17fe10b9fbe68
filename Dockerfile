# The Ratchet service and its workers: one image, the command picks the role.
#   docker build -t ratchet .
#   docker run --init -p 8000:8000 -v ratchet:/var/lib/ratchet ratchet           # ratchet serve
#   docker run --init -v ratchet:/var/lib/ratchet ratchet worker --processes 2   # a worker
# --init (compose: `init: true`) puts tini in front as PID 1: it reaps the git and agent
# grandchildren that Ratchet orphans; signals still reach `ratchet` unchanged.
# Agents and checks run in a bubblewrap sandbox, which needs user namespaces inside the
# container: add `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`
# (Docker's default profiles refuse unshare/mount) or a seccomp profile that allows them;
# no extra capability is needed. docs/operations.md, "Sandbox", has the details.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RATCHET_HOME=/var/lib/ratchet

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

# Only what the distribution needs; .dockerignore keeps everything else out of the context.
WORKDIR /tmp/ratchet-src
COPY pyproject.toml README.md ./
COPY app/ app/
COPY runner/ runner/
COPY verification/ verification/
COPY github/ github/
COPY plumbing/ plumbing/
RUN pip install --no-cache-dir . \
    && rm -rf /tmp/ratchet-src

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
