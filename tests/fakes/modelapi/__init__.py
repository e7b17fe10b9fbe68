"""The project's scripted model API (``server.py``) and its per-phase script (``script.py``):
the real agent CLIs run against it in ``make test-agents`` (tests/agents/)."""

from tests.fakes.modelapi.script import CALC, Action, Script, Switches, Turns
from tests.fakes.modelapi.server import ModelServer, Recorded

__all__ = ["CALC", "Action", "ModelServer", "Recorded", "Script", "Switches", "Turns"]
