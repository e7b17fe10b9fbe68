"""Deterministic verification: plan checks from changed files, run them, bundle the evidence.

Modules: `config` (.github/ratchet.yml), `git`, `files`, `tree` and `changes` (git and
filesystem adapters); planning, all pure: `index` (one pass over the paths), `manifests`
(reading them once), `workspaces` (membership), `graph` (dependents), `lockfiles` (per-package
diffs), `select` (what a change concerns), `runners` with `node_runner` and `python_runner`
(the repository's own commands), `plan` and `model` (the canonical plan), `explain`;
`capture`, `junit` and `execute` (running checks); `annotations` and `evidence` (pure
rendering for GitHub). This package never imports `runner`, `app`, `github` or `dramatiq`:
the runner calls it, not the other way round.
"""
