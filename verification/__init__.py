"""Deterministic verification: plan checks from changed files, run them, bundle the evidence.

Modules: `config` (.github/ratchet.yml), `tree` and `changes` (git and filesystem adapters),
`detect` and `plan` (pure planning), `capture`, `junit` and `execute` (running checks),
`annotations` and `evidence` (pure rendering for GitHub). This package never imports `runner`,
`app` or `github`: the runner calls it, not the other way round.
"""
