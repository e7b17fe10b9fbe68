"""``ratchet action``: Ratchet inside a GitHub Actions job, the same code as the App.

``action.yml`` at the repository root installs Ratchet and runs ``ratchet action``, which reads
the Actions environment and the action's inputs once (``env.py``), then runs one mode:

- ``verify`` (``verify.py``): the verification plan on a pull request, a push, a merge group or
  a dispatched revision; the evidence as a step summary, annotations and a check run.
- ``run`` (``run.py``): a durable Ratchet run inside Actions jobs. The run's SQLite ledger is
  kept in the repository itself, in a ref compare-and-swapped after every step
  (``ledgerref.py``), so the next job (a re-run, an approval comment) continues it.

Workflow commands, outputs and the step summary are written by ``channels.py``.
"""
