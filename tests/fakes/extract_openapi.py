"""Extract the operations the fake GitHub implements from GitHub's official OpenAPI description.

Run by hand when the fake grows an endpoint or the description should be refreshed; the tests only
read the committed result (``tests/data/github-openapi-subset.json``), never the network::

    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack @octokit/openapi@23.0.2 && tar xzf octokit-openapi-*.tgz)
    .venv/bin/python tests/fakes/extract_openapi.py "$tmp/package" \
        tests/data/github-openapi-subset.json

Only the listed operations are kept, with every component they reach through ``$ref`` (so the
schemas stay as GitHub wrote them, references intact) and without the media-type ``examples``,
which nothing validates against and which would triple the file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# (method, path) of every REST operation the fake serves; keep in step with fakegithub/routes.
OPERATIONS: tuple[tuple[str, str], ...] = (
    ("get", "/app"),
    ("get", "/repos/{owner}/{repo}/installation"),
    ("post", "/app/installations/{installation_id}/access_tokens"),
    ("post", "/app-manifests/{code}/conversions"),
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("get", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("get", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("post", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("delete", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"),
    ("get", "/repos/{owner}/{repo}/pulls"),
    ("post", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("patch", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/comments"),
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("get", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("get", "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("get", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("get", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("get", "/repos/{owner}/{repo}/git/matching-refs/{ref}"),
    ("get", "/repos/{owner}/{repo}/branches/{branch}"),
)

# Operation keys worth keeping: what validation, routing and error messages read.
_OPERATION_KEYS = (
    "operationId",
    "summary",
    "externalDocs",
    "parameters",
    "requestBody",
    "responses",
)


def _without_examples(node: Any) -> Any:
    """Drop media-type ``examples`` (and the component examples they point to) recursively."""
    if isinstance(node, dict):
        return {k: _without_examples(v) for k, v in node.items() if k != "examples"}
    if isinstance(node, list):
        return [_without_examples(item) for item in node]
    return node


def _lookup(spec: dict[str, Any], ref: str) -> Any:
    node: Any = spec
    for part in ref.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _collect_refs(spec: dict[str, Any], node: Any, seen: set[str]) -> None:
    """Add to ``seen`` every ``#/components/...`` reference reachable from ``node``."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in seen:
            seen.add(ref)
            _collect_refs(spec, _without_examples(_lookup(spec, ref)), seen)
        for key, value in node.items():
            if key != "$ref":
                _collect_refs(spec, value, seen)
    elif isinstance(node, list):
        for item in node:
            _collect_refs(spec, item, seen)


def extract(spec: dict[str, Any], *, source: str) -> dict[str, Any]:
    """Return an OpenAPI document holding only OPERATIONS and the components they reference."""
    paths: dict[str, dict[str, Any]] = {}
    for method, path in OPERATIONS:
        operation = spec["paths"][path][method]
        kept = {k: operation[k] for k in _OPERATION_KEYS if k in operation}
        paths.setdefault(path, {})[method] = _without_examples(kept)
    seen: set[str] = set()
    _collect_refs(spec, paths, seen)
    components: dict[str, dict[str, Any]] = {}
    for ref in sorted(seen):
        _, _, kind, name = ref.split("/", 3)
        components.setdefault(kind, {})[name] = _without_examples(_lookup(spec, ref))
    return {
        "openapi": spec["openapi"],
        "info": {
            "title": "Subset of GitHub's REST API description served by tests/fakes/fakegithub",
            "version": spec["info"]["version"],
            "x-extracted-from": source,
        },
        "paths": paths,
        "components": components,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path, help="unpacked @octokit/openapi package directory")
    parser.add_argument("output", type=Path, help="where to write the subset JSON")
    args = parser.parse_args(argv)
    manifest = json.loads((args.package / "package.json").read_text())
    spec = json.loads((args.package / "generated" / "api.github.com.json").read_text())
    source = f"{manifest['name']}@{manifest['version']} generated/api.github.com.json"
    subset = extract(spec, source=source)
    args.output.write_text(json.dumps(subset, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    sys.stdout.write(f"wrote {args.output} ({args.output.stat().st_size} bytes) from {source}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
