"""Where agents and checks may connect: the egress policy the proxy (``runner/egress.py``)
applies, and the model API routes through which it adds the API key.

Agents and checks have a network namespace of their own; the only way out is the egress proxy.
A host is reachable when it matches a pattern (``example.com``; ``*.example.com`` for its
subdomains; ``*`` for any host) of:

- for agents: the preset's model API hosts and the operator's ``RATCHET_AGENT_NETWORK_ALLOW``,
  plus the repository's ``agent.network.allow`` where the operator's
  ``RATCHET_REPOSITORY_NETWORK_ALLOW`` also allows it (a repository never opens what the
  operator did not);
- for checks: the repository's ``verify.network`` (``true`` meaning ``*``), bounded the same way.

Whatever the lists say, a name that resolves to an address that is not global (loopback,
link-local and cloud metadata, private, CGNAT, multicast, reserved) is refused: the addresses
are checked after resolution, and the proxy connects to the address it checked (no DNS
rebinding). The one exception is a model API endpoint the operator set explicitly
(``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``: a local gateway, a
test's scripted model), and only through its route, never by CONNECT.

Every refusal is one sentence naming the host and the setting that allows it. Pure: resolving
and connecting are the proxy's.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from verification.config import CONFIG_PATH, check_host_pattern

# Where the proxy serves a model API route (``/_ratchet/anthropic/v1/messages``).
ROUTE_PREFIX = "/_ratchet/"
# What an agent holds instead of an API key: the proxy adds the real one upstream.
PLACEHOLDER_KEY = "ratchet-proxy-adds-the-key"


@dataclass(frozen=True)
class ModelRoute:
    """A model API the proxy serves at ``/_ratchet/<name>``, forwarding to ``upstream`` with
    ``headers`` (the key) added. ``explicit``: the operator named the endpoint, so it may be a
    loopback or private address. ``base_env`` names the variable that points a CLI at it;
    ``key_env`` the variables that would hold the key (a placeholder inside the sandbox)."""

    name: str
    upstream: str
    headers: tuple[tuple[str, str], ...]
    explicit: bool
    base_env: str
    key_env: str

    @property
    def host(self) -> str:
        return (urlsplit(self.upstream).hostname or "").lower()

    @property
    def port(self) -> int:
        parts = urlsplit(self.upstream)
        return parts.port or (443 if parts.scheme == "https" else 80)


# The model APIs Ratchet routes: name, base URL variable, default endpoint, and the key
# variables with the header each fills (first present wins).
_APIS = (
    ("anthropic", "ANTHROPIC_BASE_URL", "https://api.anthropic.com",
     (("ANTHROPIC_API_KEY", "x-api-key", ""), ("ANTHROPIC_AUTH_TOKEN", "authorization",
                                                 "Bearer "))),
    ("openai", "OPENAI_BASE_URL", "https://api.openai.com/v1",
     (("OPENAI_API_KEY", "authorization", "Bearer "),)),
    # Gemini CLI's Google SDK sends the key as x-goog-api-key and adds /v1beta itself.
    ("gemini", "GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com",
     (("GEMINI_API_KEY", "x-goog-api-key", ""),)),
)
# Every variable that may hold a model API key: never inside a sandbox that has routes.
KEY_VARIABLES = tuple(variable for *_, keys in _APIS for variable, _, _ in keys)


def model_routes(environ: Mapping[str, str]) -> tuple[ModelRoute, ...]:
    """The routes the runner's own environment configures: one per API whose key or base URL
    the operator set. Raises ValueError for a base URL that is not http(s)."""
    routes = []
    for name, base_env, default, keys in _APIS:
        base = environ.get(base_env, "").strip()
        present = [(variable, header, prefix) for variable, header, prefix in keys
                   if environ.get(variable)]
        if not base and not present:
            continue
        parts = urlsplit(base or default)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{base_env}={base!r} is not an http(s) URL")
        headers: tuple[tuple[str, str], ...] = ()
        key_env = keys[0][0]
        if present:
            key_env, header, prefix = present[0]
            headers = ((header, prefix + environ[key_env]),)
        routes.append(ModelRoute(name, (base or default).rstrip("/"), headers, bool(base),
                                 base_env, key_env))
    return tuple(routes)


def parse_hosts(text: str) -> tuple[str, ...]:
    """A comma-separated host list from an operator's setting; ValueError naming the host."""
    return tuple(check_host_pattern(item) for item in text.split(",") if item.strip())


def matches(host: str, patterns: Iterable[str]) -> bool:
    """Whether ``host`` matches one of ``patterns`` (exact, ``*.suffix``, or ``*``)."""
    host = host.lower().rstrip(".")
    for pattern in patterns:
        if pattern == "*" or host == pattern:
            return True
        if pattern.startswith("*.") and host.endswith(pattern[1:]):
            return True
    return False


# IPv6 addresses that carry an IPv4 one a gateway reaches (NAT64's well-known prefix).
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def address_kind(address: str) -> str | None:
    """What makes ``address`` unreachable (``a loopback address``), or None for a global one."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):  # an IPv4 address inside: that one decides
        if ip in _NAT64:
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        else:
            ip = ip.ipv4_mapped or ip.sixtofour or ip
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address (cloud metadata lives there)"
    if ip.is_multicast or ip.is_unspecified or ip.is_reserved:
        return "a reserved address"
    if not ip.is_global:
        return "a private address"
    return None


@dataclass(frozen=True)
class NetworkPolicy:
    """Where one agent step or one verification may connect.

    ``allowed``: what the operator allows outright (preset hosts, RATCHET_AGENT_NETWORK_ALLOW);
    ``requested``: the repository's list (``setting`` names it); ``bound``: what the operator
    lets a repository open. ``who`` (``agents``, ``checks``) words the refusals.
    """

    who: str
    setting: str
    allowed: tuple[str, ...] = ()
    requested: tuple[str, ...] = ()
    bound: tuple[str, ...] = ()
    routes: tuple[ModelRoute, ...] = ()

    def route(self, name: str) -> ModelRoute | None:
        return next((route for route in self.routes if route.name == name), None)

    def refusal(self, host: str, port: int) -> str | None:
        """Why ``host`` may not be reached by name, or None when a pattern allows it. An
        address, or ``localhost``, that is never reachable says so rather than which list
        would allow it; a name no list allows is refused unresolved (no DNS query leaves)."""
        target = f"{host}:{port}"
        name = host.lower().rstrip(".")
        if name == "localhost" or name.endswith(".localhost"):
            return self.address_refusal(host, port, ["127.0.0.1"])
        with contextlib.suppress(ValueError):
            refusal = self.address_refusal(host, port, [str(ipaddress.ip_address(name))])
            if refusal is not None:
                return refusal
        if matches(host, self.allowed):
            return None
        if matches(host, self.requested):
            if matches(host, self.bound):
                return None
            return (f"blocked a connection to {target}: {CONFIG_PATH} lists it in"
                    f" {self.setting}, but the operator's RATCHET_REPOSITORY_NETWORK_ALLOW does"
                    " not include it")
        if self.who == "agents":
            return (f"blocked a connection to {target}: add it to {self.setting} in"
                    f" {CONFIG_PATH} (within the operator's RATCHET_REPOSITORY_NETWORK_ALLOW)"
                    " or to RATCHET_AGENT_NETWORK_ALLOW")
        return (f"blocked a connection to {target}: add it to {self.setting} in {CONFIG_PATH}"
                " (within the operator's RATCHET_REPOSITORY_NETWORK_ALLOW)")

    def address_refusal(self, host: str, port: int, addresses: Sequence[str], *,
                        explicit: bool = False) -> str | None:
        """Why the resolved ``addresses`` of ``host`` may not be reached, or None. Every one
        must be global unless the operator named the endpoint (``explicit``)."""
        if explicit:
            return None
        for address in addresses:
            kind = address_kind(address)
            if kind is not None:
                shown = host if host == address else f"{host} (it resolves to {address})"
                return (f"blocked a connection to {shown}:{port}: {kind}, which {self.who}"
                        " never reach; a model API on such an address is reached through the"
                        " proxy when the operator sets its endpoint (ANTHROPIC_BASE_URL,"
                        " OPENAI_BASE_URL)")
        return None


@dataclass(frozen=True)
class NetworkSettings:
    """The operator's network settings: hosts every agent may reach, what a repository may
    open, and the model API routes (keys included: they never leave the runner)."""

    agent_allow: tuple[str, ...] = ()
    repository_allow: tuple[str, ...] = ()
    routes: tuple[ModelRoute, ...] = ()

    def for_agents(self, preset_hosts: Sequence[str],
                   requested: Sequence[str]) -> NetworkPolicy:
        """Agents: a preset's model API host is reached directly only where no route adds a
        key for it; with one, only through the route, so an agent cannot send the API its own
        key (and the repository's code to an account of its choosing)."""
        keyed = {route.host for route in self.routes if route.headers}
        return NetworkPolicy("agents", "agent.network.allow",
                             allowed=(*(h for h in preset_hosts if h not in keyed),
                                      *self.agent_allow),
                             requested=tuple(requested), bound=self.repository_allow,
                             routes=self.routes)

    def for_checks(self, network: bool | Sequence[str]) -> NetworkPolicy:
        """Checks: ``verify.network`` (True: any host the operator lets a repository open;
        False: none); never a model API route."""
        requested = ("*",) if network is True else () if network is False else tuple(network)
        return NetworkPolicy("checks", "verify.network", requested=requested,
                             bound=self.repository_allow)
