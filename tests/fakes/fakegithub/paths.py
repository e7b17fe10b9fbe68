"""Path templates as GitHub's OpenAPI description writes them, matched against request paths.

One matcher serves routing, fault injection and call filtering, so a test names an endpoint the
way GitHub's documentation does (``/repos/{owner}/{repo}/issues/{issue_number}/comments``) or by
a concrete path (``/repos/acme/widgets/issues/1/comments``), or a mix of the two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

# Parameters whose values may contain "/": git refs (``heads/ratchet/issue-1``), branch names and
# label names. Clients send them raw or percent-encoded (uritemplate encodes "/" as %2F).
GREEDY_PARAMS = frozenset({"ref", "branch", "name"})

_PARAM = re.compile(r"\{([a-z_]+)\}")


def compile_template(template: str) -> re.Pattern[str]:
    """Return a regex matching concrete paths of ``template``, one named group per parameter."""
    pattern = ""
    position = 0
    for match in _PARAM.finditer(template):
        pattern += re.escape(template[position : match.start()])
        name = match.group(1)
        pattern += f"(?P<{name}>.+)" if name in GREEDY_PARAMS else f"(?P<{name}>[^/]+)"
        position = match.end()
    pattern += re.escape(template[position:])
    return re.compile(f"^{pattern}$")


@dataclass(frozen=True)
class PathPattern:
    """A template or concrete path that matches request paths (see the module docstring)."""

    text: str

    def matches(self, *, template: str | None, path: str) -> bool:
        """True when this pattern is ``template`` itself or matches the concrete ``path``."""
        if template is not None and self.text == template:
            return True
        return compile_template(self.text).match(path) is not None


def match_template(regex: re.Pattern[str], path: str) -> dict[str, str] | None:
    """Match ``path`` and return its parameters percent-decoded, or None."""
    found = regex.match(path)
    if found is None:
        return None
    return {name: unquote(value) for name, value in found.groupdict().items()}
