"""What Ratchet authenticates to GitHub with, validated once at start-up.

Two modes behind one client: a GitHub App (``AppCredentials``: app id, private key, endpoints)
or a plain token (``TokenCredentials``, e.g. an Actions ``GITHUB_TOKEN``). The app layer reads
the ``RATCHET_GITHUB_*`` variables and calls ``from_values``; every problem is reported as a
``GitHubSettingsError`` naming the variable to fix. Secrets are kept out of ``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from .errors import GitHubSettingsError

# github.com's REST root; GitHub Enterprise Server's is https://HOST/api/v3.
GITHUB_API_URL = "https://api.github.com"
# The REST root of GitHub Enterprise Server; its GraphQL endpoint is /api/graphql beside it.
_GHES_REST_SUFFIX = "/api/v3"
_GHES_GRAPHQL_SUFFIX = "/api/graphql"

APP_ID_VAR = "RATCHET_GITHUB_APP_ID"
PRIVATE_KEY_VAR = "RATCHET_GITHUB_PRIVATE_KEY"
PRIVATE_KEY_FILE_VAR = "RATCHET_GITHUB_PRIVATE_KEY_FILE"
API_URL_VAR = "RATCHET_GITHUB_API_URL"
GRAPHQL_URL_VAR = "RATCHET_GITHUB_GRAPHQL_URL"


def graphql_url_for(api_url: str) -> str:
    """The GraphQL endpoint beside a REST root.

    ``https://api.github.com`` -> ``https://api.github.com/graphql``;
    GitHub Enterprise Server ``https://HOST/api/v3`` -> ``https://HOST/api/graphql``.
    """
    root = api_url.rstrip("/")
    if root.endswith(_GHES_REST_SUFFIX):
        return root.removesuffix(_GHES_REST_SUFFIX) + _GHES_GRAPHQL_SUFFIX
    return f"{root}/graphql"


def _endpoint(value: str | None, *, default: str | None, name: str) -> str:
    url = (value or "").strip() or default
    if url is None:
        raise GitHubSettingsError(f"{name} is empty; set it or leave it unset for the default")
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise GitHubSettingsError(
            f"{name}={url!r} is not an http(s) URL; use e.g. {GITHUB_API_URL} or, for GitHub "
            "Enterprise Server, https://HOST/api/v3"
        )
    if parts.username or parts.password:
        raise GitHubSettingsError(f"{name} must not carry credentials; remove the user:password@")
    return url.rstrip("/")


def _endpoints(api_url: str | None, graphql_url: str | None) -> tuple[str, str]:
    api = _endpoint(api_url, default=GITHUB_API_URL, name=API_URL_VAR)
    graphql = _endpoint(graphql_url, default=graphql_url_for(api), name=GRAPHQL_URL_VAR)
    return api, graphql


def _app_id(value: str | int | None) -> int:
    text = str(value).strip() if value is not None else ""
    if not text:
        raise GitHubSettingsError(
            f"{APP_ID_VAR} is not set; set it to the App's numeric id (shown as 'App ID' on "
            "the App's settings page)"
        )
    if not text.isdigit() or int(text) <= 0:
        raise GitHubSettingsError(
            f"{APP_ID_VAR}={text!r} is not an App id; use the numeric 'App ID' from the App's "
            "settings page"
        )
    return int(text)


def _key_text(
    private_key: str | bytes | None, private_key_file: str | Path | None, text_source: str
) -> tuple[str, str]:
    """The PEM text and where it came from (``text_source`` for ``private_key``)."""
    text = private_key.decode() if isinstance(private_key, bytes) else (private_key or "")
    path = str(private_key_file or "").strip()
    if text.strip() and path:
        raise GitHubSettingsError(
            f"both {PRIVATE_KEY_VAR} and {PRIVATE_KEY_FILE_VAR} are set; keep one of them"
        )
    if text.strip():
        # A PEM pasted into a one-line variable often arrives with literal "\n" escapes.
        return text.replace("\\n", "\n").strip() + "\n", text_source
    if not path:
        raise GitHubSettingsError(
            f"no App private key: set {PRIVATE_KEY_FILE_VAR} to the .pem file GitHub generated "
            f"for the App, or {PRIVATE_KEY_VAR} to its contents"
        )
    try:
        return Path(path).read_text(), PRIVATE_KEY_FILE_VAR
    except (OSError, UnicodeDecodeError) as exc:
        raise GitHubSettingsError(
            f"{PRIVATE_KEY_FILE_VAR}={path!r} cannot be read ({exc.__class__.__name__}: "
            f"{getattr(exc, 'strerror', None) or exc}); point it at the App's .pem file and "
            "make it readable by Ratchet"
        ) from None


def load_private_key(pem: str, *, source: str = PRIVATE_KEY_VAR) -> RSAPrivateKey:
    """Parse an App's private key; ``GitHubSettingsError`` naming ``source`` when unusable."""
    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        # The parser's own message may quote the input: never repeat it.
        raise GitHubSettingsError(
            f"{source} is not an unencrypted PEM private key; use the .pem file GitHub "
            "generated for the App (it begins with '-----BEGIN RSA PRIVATE KEY-----')"
        ) from None
    if not isinstance(key, RSAPrivateKey):
        raise GitHubSettingsError(
            f"{source} holds a {type(key).__name__}; GitHub Apps sign with RSA keys: use the "
            ".pem file GitHub generated for the App"
        )
    return key


@dataclass(frozen=True)
class AppCredentials:
    """A GitHub App: its id, its private key (PEM), and the REST and GraphQL endpoints."""

    app_id: int
    private_key: str = field(repr=False)
    api_url: str = GITHUB_API_URL
    graphql_url: str = f"{GITHUB_API_URL}/graphql"

    @classmethod
    def from_values(
        cls,
        *,
        app_id: str | int | None,
        private_key: str | bytes | None = None,
        private_key_file: str | Path | None = None,
        api_url: str | None = None,
        graphql_url: str | None = None,
        private_key_source: str = PRIVATE_KEY_VAR,
    ) -> AppCredentials:
        """Validate settings (the ``RATCHET_GITHUB_*`` values) into credentials.

        The key is given as PEM text or as a file path, not both; it is parsed here, so a bad
        key fails at start-up. Raises ``GitHubSettingsError`` naming the variable to fix, or
        ``private_key_source`` for a key text that came from elsewhere (a credentials file).
        """
        number = _app_id(app_id)
        pem, source = _key_text(private_key, private_key_file, private_key_source)
        load_private_key(pem, source=source)
        api, graphql = _endpoints(api_url, graphql_url)
        return cls(app_id=number, private_key=pem, api_url=api, graphql_url=graphql)


@dataclass(frozen=True)
class TokenCredentials:
    """A token used as it is (an Actions ``GITHUB_TOKEN``, a fine-grained token): no App."""

    token: str = field(repr=False)
    api_url: str = GITHUB_API_URL
    graphql_url: str = f"{GITHUB_API_URL}/graphql"

    @classmethod
    def from_values(
        cls, *, token: str | None, api_url: str | None = None, graphql_url: str | None = None
    ) -> TokenCredentials:
        """Validate a token and endpoints; ``GitHubSettingsError`` when the token is unusable."""
        value = (token or "").strip()
        if not value:
            raise GitHubSettingsError(
                "no GitHub token given; pass the workflow's GITHUB_TOKEN (or configure an App "
                f"with {APP_ID_VAR} and {PRIVATE_KEY_FILE_VAR})"
            )
        if any(c.isspace() for c in value):
            raise GitHubSettingsError("the GitHub token contains whitespace; pass it unquoted")
        api, graphql = _endpoints(api_url, graphql_url)
        return cls(token=value, api_url=api, graphql_url=graphql)
