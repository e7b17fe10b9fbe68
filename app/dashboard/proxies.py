"""Forwarded headers, trusted only from ``RATCHET_TRUSTED_PROXIES``.

uvicorn's own handling is off (``proxy_headers=False``: by default it believes any loopback
peer, so a local nginx would pass a stranger's address through). Here, a request from a
trusted proxy takes its client address and scheme from ``X-Forwarded-For`` (the nearest
address that is not itself a trusted proxy; without one the client is ``unknown``) and
``X-Forwarded-Proto``; a request that carries
forwarded headers from any other peer keeps its peer's address, and the guard is told
(``UNTRUSTED_FORWARDING``) so a dashboard signed in by link can refuse it: it came through a
proxy nobody declared, whatever its ``Host`` says.
"""

from __future__ import annotations

import ipaddress

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from app.dashboard.config import IPNetwork

UNTRUSTED_FORWARDING = "untrusted_forwarding"  # key in scope["state"]: the header's name
FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
                      "x-real-ip")


def is_trusted(address: str, proxies: tuple[IPNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    return any(ip in network for network in proxies)


class Proxies:
    """ASGI middleware: see the module docstring."""

    def __init__(self, app: ASGIApp, *, trusted: tuple[IPNetwork, ...]) -> None:
        self.app = app
        self.trusted = trusted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in {"http", "websocket"}:
            headers = Headers(scope=scope)
            sent = [name for name in FORWARDING_HEADERS if name in headers]
            peer = scope.get("client")
            if sent and peer is not None and is_trusted(peer[0], self.trusted):
                scope = dict(scope)
                hops = [hop.strip() for hop in headers.get("x-forwarded-for", "").split(",")
                        if hop.strip()]
                while hops and is_trusted(hops[-1], self.trusted):
                    hops.pop()
                # Without a usable X-Forwarded-For the client is unknown, never the proxy.
                scope["client"] = (hops[-1] if hops else "unknown", 0)
                proto = headers.get("x-forwarded-proto", "").split(",")[-1].strip().lower()
                if proto in {"http", "https"}:
                    scope["scheme"] = proto
            elif sent:
                scope.setdefault("state", {})[UNTRUSTED_FORWARDING] = sent[0]
        await self.app(scope, receive, send)
