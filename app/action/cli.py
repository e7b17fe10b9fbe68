"""``ratchet action``: what ``action.yml`` runs; also usable by hand or in another CI.

The environment is read once (``env.py``) and then scrubbed of the token and the runner's
credentials; the mode runs; every error becomes an ``::error`` annotation and a line on stderr
with exit status 2 (usage or configuration) or 1 (GitHub or the ledger failed).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from app.action.channels import Runner
from app.action.env import ActionEnv, ActionError, Mode, scrub_environment, secret_values
from app.settings import Settings
from runner.errors import RatchetError
from runner.redact import Redactor

log = logging.getLogger(__name__)

EXIT_USAGE = 2
EXIT_FAILED = 1

DESCRIPTION = "Ratchet inside a GitHub Actions job (what action.yml runs)."
EPILOG = """\
reads the Actions environment (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_REPOSITORY,
GITHUB_API_URL, GITHUB_SERVER_URL, GITHUB_RUN_ID, GITHUB_WORKSPACE, RUNNER_TEMP, ...) and the
action's inputs as INPUT_<NAME> variables:
  INPUT_MODE            verify | run
  INPUT_GITHUB-TOKEN    the token for check runs, comments, pushes (default in action.yml:
                        the job's GITHUB_TOKEN)
  INPUT_AGENT-COMMAND   run mode: the agent command template, e.g. 'claude -p {prompt}'
  INPUT_BASE, INPUT_HEAD  verify mode: revisions overriding the event's
  INPUT_TRIGGER-LABEL   run mode: the label that starts a run (default ratchet)
  INPUT_CONFIG          verify mode: a config file in the workspace instead of
                        .github/ratchet.yml at the base (not on pull_request_target)

example (outside Actions):
  INPUT_MODE=verify GITHUB_EVENT_NAME=workflow_dispatch GITHUB_EVENT_PATH=event.json \\
  GITHUB_REPOSITORY=acme/widgets INPUT_BASE=main ratchet action

exit status:
  0  verified; or the run waits, is done, or another job owns it
  1  a check did not pass; or the run failed or needs a human
  2  usage or configuration error
  3  verify mode: nothing verifies the change (conclusion neutral)
"""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def run_action(args: argparse.Namespace, settings: Settings) -> int:
    """Read the environment, scrub it, run the mode; the exit status."""
    environ = os.environ
    runner = Runner(output=None, summary=None)
    try:
        env = ActionEnv.from_environ(environ)
    except ActionError as exc:
        return _fail(runner, str(exc), EXIT_USAGE, Redactor(secret_values(environ)))
    secrets = secret_values(environ)
    redact = Redactor(secrets)
    scrub_environment(environ)
    runner = Runner(output=env.output, summary=env.step_summary)
    try:
        # Each mode loads what it runs with (the GitHub client among it) only when chosen:
        # ``ratchet`` builds this command's parser for every command.
        if env.inputs.mode is Mode.VERIFY:
            from app.action.verify import verify_job

            return verify_job(env, settings, runner)
        from app.action.run import run_job

        return run_job(env, settings, runner, secrets=secrets)
    except ActionError as exc:
        return _fail(runner, str(exc), EXIT_USAGE, redact)
    except RatchetError as exc:  # GitHub or git failed outside a run's own handling
        log.debug("ratchet action failed", exc_info=True)
        return _fail(runner, f"{exc}; re-run the job", EXIT_FAILED, redact)


def _fail(runner: Runner, message: str, code: int, redact: Redactor) -> int:
    text = redact(" ".join(message.split()))
    runner.annotate("error", text, title="Ratchet")
    runner.summary(f"## Ratchet: stopped\n\n{text}\n")
    print(f"ratchet action: {text}", file=sys.stderr)
    return code
