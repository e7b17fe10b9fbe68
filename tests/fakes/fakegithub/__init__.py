"""A faithful fake of the GitHub REST API (and one GraphQL mutation) for tests.

Start it with ``with FakeGitHub() as fake:`` and point clients at ``fake.base_url``; see
``fake.py`` for seeding, fault injection and reading what happened, ``faults.py`` for the
faults, and ``tests/data/README.md`` for the OpenAPI description that every request is checked
against.
"""

from . import faults
from .fake import FakeGitHub
from .recording import Call, ValidationFailure
from .state import AuthKind

__all__ = ["AuthKind", "Call", "FakeGitHub", "ValidationFailure", "faults"]
