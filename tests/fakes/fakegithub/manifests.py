"""GitHub's App manifest flow: the page that creates an App from a manifest someone posts.

GitHub's rules, as documented
(https://docs.github.com/apps/sharing-github-apps/registering-a-github-app-from-a-manifest):

- ``POST /settings/apps/new?state=S`` (or ``/organizations/ORG/settings/apps/new``) with a
  form field ``manifest`` (JSON) shows the person signed in a page naming the App; their click
  on "Create GitHub App" creates it (owned by them, or by the organization) and sends the
  browser to the manifest's ``redirect_url?code=C&state=S``. The fake clicks at once. Nobody
  signed in (``fake.oauth.sign_in_browser``) gets the sign-in page (200, HTML); an unknown
  organization a 404 page; a manifest that is not JSON, lacks ``url`` or the hook's ``url``, or
  whose name another App has, the form again with what is wrong (422, HTML, no App).
- ``POST /app-manifests/{code}/conversions`` (REST, no authentication; ``routes/apps.py``)
  hands out the App's private key, webhook secret and OAuth client once, within the hour.

The page is recorded like every call, with the operation id ``apps/new-from-manifest`` (it is
github.com's page, not a REST operation).
"""

from __future__ import annotations

import html
import json
import re
import secrets
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from .oauth import OAuthWeb, form_fields, html_page, redirect_to
from .pipeline import Outcome, RawRequest
from .recording import Recorder
from .render.accounts import client_id_of
from .state import App, ManifestCode, OAuthClient, User, World

CODE_LIFETIME = 3600  # seconds: "exchange the code within one hour"
MAX_NAME_LENGTH = 34  # GitHub's limit on an App's name
_USER_FORM = re.compile(r"^/settings/apps/new$")
_ORG_FORM = re.compile(r"^/organizations/([^/]+)/settings/apps/new$")
OPERATION = "apps/new-from-manifest"


def slug_of(name: str) -> str:
    """The App's URL name: lower case, every run of other characters one hyphen."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


class ManifestWeb:
    """The manifest form's page (see the module docstring); who is signed in is asked of
    ``oauth``, the browser's session on github.com."""

    def __init__(self, world: World, recorder: Recorder, oauth: OAuthWeb) -> None:
        self.world = world
        self.recorder = recorder
        self.oauth = oauth

    def handle(self, raw: RawRequest) -> Outcome | None:
        """The answer to a manifest form's POST, or None for any other request."""
        split = urlsplit(raw.target)
        org = _ORG_FORM.match(split.path)
        if raw.method != "POST" or not (org or _USER_FORM.match(split.path)):
            return None
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        form = form_fields(raw)
        call = self.recorder.start(raw.method, split.path, query, form)
        call.operation_id = call.template = OPERATION
        with self.world.lock:
            outcome = self._create(org.group(1) if org else None, form.get("manifest", ""),
                                   state=query.get("state"))
        call.status = outcome.status
        call.response = outcome.body.decode(errors="replace")
        return outcome

    def _create(self, org: str | None, text: str, *, state: str | None) -> Outcome:
        if self.oauth.browser is None:
            return html_page(200, "<h1>Sign in to GitHub</h1><form><input name=login></form>")
        owner = self.world.user(self.oauth.browser)
        if org is not None:
            found = self.world.users.get(org.lower())
            if found is None or found.type != "Organization":
                return html_page(404, "<h1>404</h1><p>This is not the web page you are looking"
                                      " for.</p>")
            owner = found
        manifest, problems = self._read(text)
        if problems:
            items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
            return html_page(422, f"<h1>Register new GitHub App</h1><ul>{items}</ul>")
        code = self._register(manifest, owner)
        redirect = manifest.get("redirect_url")
        if not redirect:
            return html_page(200, f"<h1>{html.escape(code.app.name)}</h1><p>Your GitHub App"
                                  " was created.</p>")
        params = {"code": self._issue(code)}
        if state is not None:
            params["state"] = state
        return redirect_to(str(redirect), **params)

    def _read(self, text: str) -> tuple[dict[str, Any], list[str]]:
        """The manifest and what GitHub's page would refuse in it."""
        try:
            manifest = json.loads(text)
        except ValueError:
            return {}, ["Manifest is not valid JSON"]
        if not isinstance(manifest, dict):
            return {}, ["Manifest is not valid JSON"]
        problems = []
        name = str(manifest.get("name") or "")
        if not name or not slug_of(name):
            problems.append("Name can't be blank")
        elif len(name) > MAX_NAME_LENGTH:
            problems.append(f"Name is too long (maximum is {MAX_NAME_LENGTH} characters)")
        elif any(app.slug == slug_of(name) for app in self.world.apps.values()):
            problems.append("Name is already taken")
        if not manifest.get("url"):
            problems.append("Homepage URL can't be blank")
        hook = manifest.get("hook_attributes")
        if hook is not None and (not isinstance(hook, dict) or not hook.get("url")):
            problems.append("Hook URL can't be blank")
        callbacks = manifest.get("callback_urls", [])
        if not isinstance(callbacks, list) or len(callbacks) > 10:
            problems.append("Callback URLs are limited to 10")
        return manifest, problems

    def _register(self, manifest: dict[str, Any], owner: User) -> ManifestCode:
        """Create the App the manifest describes, with a fresh key GitHub keeps only the
        public half of."""
        world = self.world
        name = str(manifest["name"])
        slug = slug_of(name)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode()
        app_id = world.next_id()
        app = App(id=app_id, slug=slug, name=name, owner=owner,
                  bot=world.user(f"{slug}[bot]", type="Bot"), public_key=key.public_key(),
                  permissions=dict(manifest.get("default_permissions") or {}),
                  events=list(manifest.get("default_events") or []),
                  created_at=world.clock.now())
        world.apps[app_id] = app
        callbacks = manifest.get("callback_urls") or [manifest["url"]]
        client = OAuthClient(client_id_of(app), secrets.token_hex(20), str(callbacks[0]))
        world.oauth_clients[client.client_id] = client
        hooked = isinstance(manifest.get("hook_attributes"), dict)
        return ManifestCode(app=app, pem=pem,
                            webhook_secret=secrets.token_hex(20) if hooked else None,
                            client=client, expires_at=world.clock.now() + CODE_LIFETIME)

    def _issue(self, code: ManifestCode) -> str:
        value = secrets.token_hex(20)
        self.world.manifest_codes[value] = code
        return value


__all__ = ["CODE_LIFETIME", "OPERATION", "ManifestWeb", "slug_of"]
