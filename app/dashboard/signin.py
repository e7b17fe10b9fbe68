"""Signing in with GitHub and out again.

``/login`` says how to sign in (with GitHub, with the link ``ratchet serve`` printed, or why
one cannot); ``/auth/github``
remembers a one-time ``state`` in the session and sends the browser to GitHub;
``/auth/callback`` checks that ``state``, asks GitHub who signed in, and starts a fresh
session; ``POST /logout`` (with the CSRF secret) ends it.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from app.dashboard.config import Access, OAuthApp
from app.dashboard.context import Context, PageError, page
from app.dashboard.oauth import SignInError, authorize_url, signed_in_user
from app.dashboard.sessions import (
    CSRF_FIELD,
    begin_sign_in,
    csrf_valid,
    is_local_path,
    sign_in,
    sign_out,
    signed_in_login,
    signed_in_operator,
    take_state,
)
from github.manifest import SIGN_IN_CALLBACK

CALLBACK = SIGN_IN_CALLBACK  # the App manifest registers it as the OAuth callback


class SignIn:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def routes(self) -> list[Route]:
        ctx = self.ctx
        return [
            Route("/login", page(ctx, self.login), name="dashboard_login"),
            Route("/auth/github", page(ctx, self.start), name="dashboard_sign_in"),
            Route(CALLBACK, page(ctx, self.callback), name="dashboard_callback"),
            Route("/logout", page(ctx, self.logout), methods=["POST"], name="dashboard_logout"),
        ]

    async def login(self, request: Request) -> Response:
        config = self.ctx.config
        wanted = _wanted(request.query_params.get("next"))
        if signed_in_login(request) or signed_in_operator(request):
            return RedirectResponse(wanted, status_code=303)
        return self.ctx.render(request, "login.html", {
            "configured": config.oauth is not None, "api_token": config.api_token is not None,
            "by_link": config.access is Access.LINK,
            "start": f"/auth/github?next={quote(wanted, safe='')}", "problem": None,
        }, status=200 if config.oauth is not None else 401)

    async def start(self, request: Request) -> Response:
        oauth = self._oauth()
        state = begin_sign_in(request, wanted=_wanted(request.query_params.get("next")))
        return RedirectResponse(authorize_url(oauth, redirect_uri=self._callback(request),
                                              state=state), status_code=302)

    async def callback(self, request: Request) -> Response:
        oauth, query = self._oauth(), request.query_params
        if not take_state(request, query.get("state")):
            raise PageError(400, "this sign-in was not started here, or was already used"
                                 " (its state does not match); sign in again")
        if query.get("error"):
            raise PageError(403, f"GitHub did not sign you in ({query.get('error')}:"
                                 f" {query.get('error_description') or 'no reason given'})")
        code = query.get("code")
        if not code:
            raise PageError(400, "GitHub sent no code back; sign in again")
        try:
            user = await signed_in_user(oauth, code=code, redirect_uri=self._callback(request))
        except SignInError as exc:
            raise PageError(502, str(exc)) from exc
        return RedirectResponse(sign_in(request, user.login), status_code=303)

    async def logout(self, request: Request) -> Response:
        form = await request.form()
        if not csrf_valid(request, form.get(CSRF_FIELD)):
            raise PageError(403, "this form is stale or was not sent from this dashboard")
        sign_out(request)
        return RedirectResponse("/login", status_code=303)

    def _oauth(self) -> OAuthApp:
        if self.ctx.config.oauth is None:
            raise PageError(404, "sign-in with GitHub is not configured on this service")
        return self.ctx.config.oauth

    def _callback(self, request: Request) -> str:
        """The redirect URI GitHub sends the browser back to (the same in both legs)."""
        if self.ctx.config.public_url:
            return self.ctx.config.public_url + CALLBACK
        return str(request.url_for("dashboard_callback"))


def _wanted(value: str | None) -> str:
    return value if value and is_local_path(value) else "/"
