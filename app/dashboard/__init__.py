"""The dashboard: every run, its timeline and evidence, live, behind sign-in (GitHub's, or
the one-time link ``ratchet serve`` prints).

Server-rendered pages (Jinja2, autoescaped) that work without JavaScript; one small script
(``static/live.js``) refreshes them in place from Server-Sent Events. Composed here, once:
``build_dashboard`` returns the routes and middleware ``app.service.create_app`` mounts.

    dashboard = build_dashboard(store, dashboard_config(settings, host=host),
                                wake=delivery.enqueue, permissions=GitHubPermissions(client))
    app = create_app(store, dashboard=dashboard)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from app.dashboard.access import Gate, GitHubPermissions, PermissionLookup
from app.dashboard.actions import Actions
from app.dashboard.api import Api
from app.dashboard.config import Access, DashboardConfig, dashboard_config
from app.dashboard.context import Context
from app.dashboard.guard import Guard
from app.dashboard.live import Broadcaster
from app.dashboard.proxies import Proxies
from app.dashboard.security import SecurityHeaders
from app.dashboard.sessions import session_middleware
from app.dashboard.signin import SignIn
from app.dashboard.streams import Streams
from app.dashboard.templating import STATIC, make_templates
from app.dashboard.views import Pages
from app.settings import Settings
from runner.ledger.store import Store


@dataclass(frozen=True)
class Dashboard:
    config: DashboardConfig
    routes: list[BaseRoute]
    middleware: list[Middleware]
    broadcaster: Broadcaster


def build_dashboard(store: Store, config: DashboardConfig, *, wake: Callable[[str], None],
                    permissions: PermissionLookup | None = None,
                    clock: Callable[[], float] = time.time) -> Dashboard:
    """The dashboard over ``store``; ``wake`` enqueues a run after a signal from a page, and
    ``permissions`` says what a GitHub user may do on a repository (needed for sign-in)."""
    broadcaster = Broadcaster(store.run_marks, interval=config.poll_seconds)
    ctx = Context(store=store, config=config, gate=Gate(permissions, web_url=config.web_url),
                  templates=make_templates(), broadcaster=broadcaster, wake=wake, clock=clock)
    routes: list[BaseRoute] = [
        *Pages(ctx).routes(), *Streams(ctx).routes(), *Actions(ctx).routes(),
        *SignIn(ctx).routes(), *Api(ctx).routes(),
        Mount("/static", StaticFiles(directory=STATIC), name="dashboard_static"),
    ]
    middleware = [
        Middleware(SecurityHeaders),  # outermost: refusals carry the headers too
        Middleware(Proxies, trusted=config.trusted_proxies),
        session_middleware(config),
        Middleware(Guard, config=config),
    ]
    return Dashboard(config, routes, middleware, broadcaster)


def dashboard_for_service(store: Store, settings: Settings, config: DashboardConfig, *,
                          wake: Callable[[str], None]) -> Dashboard:
    """The dashboard ``ratchet serve`` mounts, configured by ``dashboard_config`` (which
    refuses an address the settings do not protect)."""
    permissions = None
    if config.access is Access.GITHUB:
        from app.github import app_credentials
        from github.client import GitHubClient

        credentials = app_credentials(settings)
        assert credentials is not None  # dashboard_config requires the App for sign-in
        permissions = GitHubPermissions(GitHubClient(credentials))
    return build_dashboard(store, config, wake=wake, permissions=permissions)


__all__ = ["Dashboard", "build_dashboard", "dashboard_config", "dashboard_for_service"]
