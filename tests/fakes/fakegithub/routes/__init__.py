"""Every route of the fake, composed in one place (operation id -> Route)."""

from __future__ import annotations

from . import apps, checks, graphql, issues, pulls, repos
from .base import Reply, Request, Route

ROUTES: dict[str, Route] = {
    route.operation_id: route
    for module in (apps, repos, issues, pulls, checks, graphql)
    for route in module.ROUTES
}

__all__ = ["ROUTES", "Reply", "Request", "Route"]
