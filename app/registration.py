"""``ratchet github-app create``: register the App through GitHub's manifest flow.

A page on 127.0.0.1 holds a form that posts the App's manifest (``github/manifest.py``) to
GitHub's "Register new GitHub App" page with a random ``state``. Once someone clicks "Create
GitHub App" there, GitHub sends the browser back here (the manifest's ``redirect_url``) with
a code; a request whose ``state`` is not this command's is refused (it did not come from the
page this command served), the code is traded once for the App's id, key, webhook secret and
OAuth client (``POST /app-manifests/{code}/conversions``), and those are written to the
credentials file (``app/credentials_file.py``) that ``ratchet serve`` reads.

https://docs.github.com/apps/sharing-github-apps/registering-a-github-app-from-a-manifest
"""

from __future__ import annotations

import hmac
import html
import json
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.credentials_file import AppCredentialsFile
from github.manifest import app_manifest

REDIRECT_PATH = "/created"  # where GitHub sends the browser back with the code
EXCHANGE_TIMEOUT_S = 30.0  # seconds GitHub gets to hand over the App's credentials
API_VERSION = "2022-11-28"  # X-GitHub-Api-Version of the conversion call


class RegistrationFailed(Exception):
    """The App could not be registered or its credentials fetched; the message says what to
    do next."""


class CreatedApp(BaseModel):
    """GitHub's answer to the code exchange (``apps/create-from-manifest``: an
    ``integration`` with its secrets); other fields are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: int
    slug: str
    html_url: str
    client_id: str
    # Kept out of repr, so out of every log line and traceback.
    client_secret: str = Field(repr=False)
    webhook_secret: str | None = Field(repr=False)
    pem: str = Field(repr=False)

    def credentials(self, *, api_url: str, web_url: str,
                    public_url: str) -> AppCredentialsFile:
        return AppCredentialsFile(
            app_id=self.id, slug=self.slug, private_key=self.pem,
            webhook_secret=self.webhook_secret, client_id=self.client_id,
            client_secret=self.client_secret, api_url=api_url, web_url=web_url,
            html_url=self.html_url, public_url=public_url)

    @property
    def install_url(self) -> str:
        """Where the App is installed on an account's repositories."""
        return f"{self.html_url.rstrip('/')}/installations/new"


@dataclass(frozen=True)
class Registration:
    """One registration: which GitHub, whose App (a user's, or ``org``'s), its public URL, the
    address GitHub sends the browser back to, and the ``state`` that proves it came from here."""

    api_url: str
    web_url: str
    public_url: str
    redirect_url: str
    name: str
    org: str | None = None
    state: str = ""

    @classmethod
    def start(cls, *, api_url: str, web_url: str, public_url: str, local_url: str, name: str,
              org: str | None) -> Registration:
        """A registration with a fresh ``state`` (``ValueError`` for a public URL that is not
        http(s))."""
        registration = cls(api_url=api_url.rstrip("/"), web_url=web_url.rstrip("/"),
                           public_url=public_url.rstrip("/"),
                           redirect_url=f"{local_url.rstrip('/')}{REDIRECT_PATH}", name=name,
                           org=org, state=secrets.token_urlsafe(32))
        registration.manifest()  # refuses a public URL that is not http(s)
        return registration

    def manifest(self) -> dict[str, Any]:
        return app_manifest(self.public_url, name=self.name, redirect_url=self.redirect_url)

    def form_action(self) -> str:
        """GitHub's page that registers an App from a posted manifest."""
        owner = f"/organizations/{quote(self.org, safe='')}" if self.org else ""
        return f"{self.web_url}{owner}/settings/apps/new?state={quote(self.state, safe='')}"

    def form_page(self) -> str:
        """The page that posts the manifest to GitHub."""
        who = f"the organization {self.org}" if self.org else "your account"
        manifest = html.escape(json.dumps(self.manifest(), sort_keys=True), quote=True)
        return (
            "<!doctype html><meta charset=utf-8><title>Register Ratchet's GitHub App</title>"
            f"<h1>Register {html.escape(self.name)} as a GitHub App of {html.escape(who)}</h1>"
            f"<p>Its webhook: {html.escape(self.public_url)}/webhooks/github. GitHub shows the"
            " App before it creates it.</p>"
            f'<form method="post" action="{html.escape(self.form_action(), quote=True)}">'
            f'<input type="hidden" name="manifest" value="{manifest}">'
            '<button type="submit">Create the App on GitHub</button></form>')

    def answers(self, state: str | None) -> bool:
        """Whether a redirect carries this registration's ``state``."""
        if not self.state or state is None:  # a registration without a state proves nothing
            return False
        return hmac.compare_digest(state.encode(), self.state.encode())


def exchange_code(registration: Registration, code: str, *,
                  http: httpx.Client | None = None) -> CreatedApp:
    """Trade ``code`` for the App's credentials; ``RegistrationFailed`` saying why not."""
    url = f"{registration.api_url}/app-manifests/{quote(code, safe='')}/conversions"
    client = http or httpx.Client(timeout=EXCHANGE_TIMEOUT_S)
    try:
        response = client.post(url, headers={"Accept": "application/vnd.github+json",
                                              "X-GitHub-Api-Version": API_VERSION})
    except httpx.HTTPError as exc:
        raise RegistrationFailed(
            f"{registration.api_url} could not be reached to fetch the App's credentials"
            f" ({type(exc).__name__}): the App may exist without them; delete it on GitHub"
            " (Settings, Developer settings, GitHub Apps) and run `ratchet github-app create`"
            " again") from None
    finally:
        if http is None:
            client.close()
    if response.status_code == 404:
        raise RegistrationFailed(
            f"{registration.api_url} knows no such code (404): it was used already or is more"
            " than an hour old; run `ratchet github-app create` again")
    if response.status_code != 201:
        raise RegistrationFailed(
            f"{registration.api_url} refused the code ({response.status_code}"
            f" {_message(response)}); run `ratchet github-app create` again")
    try:
        return CreatedApp.model_validate_json(response.content)
    except ValidationError:
        raise RegistrationFailed(
            f"{registration.api_url} answered the code exchange without the App's credentials:"
            " is RATCHET_GITHUB_API_URL a GitHub API root?") from None


def _message(response: httpx.Response) -> str:
    try:
        message = response.json().get("message")
    except (ValueError, AttributeError):
        return "no message"
    return str(message)[:200] if message else "no message"


class Outcome:
    """What the redirect came to, for the command waiting on it: the App, or why not."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.app: CreatedApp | None = None
        self.failure: str | None = None


Finish = Callable[[CreatedApp], None]


def serve_registration(registration: Registration, server: ThreadingHTTPServer,
                       finish: Finish) -> Outcome:
    """Serve the form page and the redirect on ``server`` until one redirect carrying this
    registration's state has been answered; ``finish`` keeps the App's credentials (it raises
    ``RegistrationFailed`` when it cannot)."""
    outcome = Outcome()
    # httpx logs each request's URL (at INFO), and the exchange's path is the one-time code.
    logging.getLogger("httpx").setLevel(logging.WARNING)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            split = urlsplit(self.path)
            if split.path == "/":
                self._answer(200, registration.form_page())
            elif split.path == REDIRECT_PATH:
                self._redirected(dict(parse_qsl(split.query)))
            else:
                self._answer(404, "<p>Nothing here: open / to register the App.</p>")

        def _redirected(self, query: dict[str, str]) -> None:
            if not registration.answers(query.get("state")):
                # Not the page this command served (another tab, a forged link): refused, and
                # the command goes on waiting for its own.
                self._answer(400, "<p>Refused: this answer does not carry the state of the"
                                  " registration this command started, so it did not come"
                                  " from its page. Nothing was done.</p>")
                return
            code = query.get("code")
            if not code:
                self._answer(400, "<p>GitHub sent no code: create the App from the form at"
                                  " /.</p>")
                return
            with outcome.lock:
                if outcome.done.is_set():
                    self._answer(409, "<p>This registration is over; run `ratchet github-app"
                                      " create` again for another App.</p>")
                    return
                try:
                    app = exchange_code(registration, code)
                    finish(app)
                except RegistrationFailed as exc:
                    outcome.failure = str(exc)
                    self._answer(502, f"<p>{html.escape(str(exc))}</p>")
                else:
                    outcome.app = app
                    install = html.escape(app.install_url, quote=True)
                    self._answer(200, f"<h1>App {html.escape(app.slug)} created</h1><p>Its"
                                      " credentials are saved. Install it on the repositories"
                                      f' it may work on: <a href="{install}">{install}</a></p>')
                outcome.done.set()

        def _answer(self, status: int, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Referrer-Policy", "no-referrer")  # the code stays here
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # request lines carry the code: never printed

    server.RequestHandlerClass = Handler
    thread = threading.Thread(target=server.serve_forever, name="github-app-create",
                              daemon=True)
    thread.start()
    try:
        outcome.done.wait()
    finally:
        server.shutdown()
        server.server_close()
    return outcome


def local_server(port: int) -> ThreadingHTTPServer:
    """The page's server on 127.0.0.1 (``port`` 0: a free one); its handler is set later."""
    return ThreadingHTTPServer(("127.0.0.1", port), BaseHTTPRequestHandler)


def local_url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


__all__ = ["CreatedApp", "Registration", "RegistrationFailed", "exchange_code", "local_server",
           "local_url", "serve_registration"]
