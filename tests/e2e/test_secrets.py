"""Secrets never reach the ledger's logs and evidence, nor the comments and pull request."""

from __future__ import annotations

from tests.e2e.harness import CONFIG, Ratchet, drive_to_done, make_target_repo

TOKEN = "tok-3f9a7c1e5b2d"
HOOK_SECRET = "hook-secret-8d1e4a"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
LEAKY_CHECK = CONFIG.replace(
    '    - {id: unit, kind: test, run: "python3 -m unittest -q", timeout: 600}',
    '    - {id: unit, kind: test, run: "python3 -m unittest -q", timeout: 600}\n'
    '    - {id: env, kind: custom, run: "echo token=$MY_API_TOKEN hook=$RATCHET_WEBHOOK_SECRET'
    ' gh=$LEAKED_GH cli=$GH_TOKEN"}',
).replace("verify:\n", "verify:\n  env: [MY_API_TOKEN, LEAKED_GH, GH_TOKEN]\n")


def test_secrets_are_redacted_everywhere(tmp_path):
    ratchet = Ratchet(home=tmp_path / "home",
                      repo=make_target_repo(tmp_path / "repo", config=LEAKY_CHECK))
    # The repository asks for three variables; the operator allows two of them to checks.
    ratchet.env.update({"MY_API_TOKEN": TOKEN, "RATCHET_WEBHOOK_SECRET": HOOK_SECRET,
                        "LEAKED_GH": GITHUB_TOKEN, "GH_TOKEN": GITHUB_TOKEN,
                        "RATCHET_CHECK_ENV": "MY_API_TOKEN,LEAKED_GH",
                        "AGENT_LEAK": f"debug: {TOKEN}"})
    run_id, _ = drive_to_done(ratchet)
    folder = ratchet.export(run_id, tmp_path / "export")
    env_log = (folder / "verification/env.log").read_text()
    assert "token=***" in env_log and "gh=***" in env_log
    assert "hook= " in env_log  # Ratchet's own settings never reach a check's environment
    assert "cli=\n" in env_log  # asked for, not allowed: withheld, and the log says so
    assert ("the repository asks for GH_TOKEN in verify.env, but the operator does not allow"
            " it (RATCHET_CHECK_ENV)") in env_log
    assert "debug: ***" in (folder / "implementation/summary.md").read_text()
    # The run directories, the export and the ledger's own files (database and WAL).
    everything = [p for p in (tmp_path / "home" / "runs").rglob("*") if p.is_file()]
    everything += list((tmp_path / "home").glob("ratchet.db*"))
    everything += [p for p in folder.rglob("*") if p.is_file()]
    for path in everything:
        text = path.read_text(errors="replace")
        for secret in (TOKEN, HOOK_SECRET, GITHUB_TOKEN):
            assert secret not in text, f"{secret} leaked into {path}"
