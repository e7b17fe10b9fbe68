"""Git over HTTPS with an installation token, handed over by a credential helper.

GitHub takes an installation token as the password of user ``x-access-token``. Putting it in a
remote URL or a config file would leave it where logs, ``.git/config``, the evidence and the
agent's sandbox can read it. Instead, ``git_credentials`` returns a ``credential.helper``
setting (passed with ``-c`` through ``plumbing.git.Git(config=...)``) that names only an
environment variable, and that variable for the one git call's ``run(env=...)``. The helper
is an inline shell function; it answers ``get`` only, and nothing when the variable is unset.

``plumbing.git`` puts ``credential.helper=`` (which clears inherited helpers) before
``Git.config``, so this helper is the only one git asks. It is scoped to the remote's scheme
and host (``credential.https://github.com.helper``): a redirect or a submodule on another host
never receives the token. Non-HTTP remotes (``file://``, ssh) never ask for credentials; the
helper is harmless there, so every URL git accepts works with the same call.
"""

from __future__ import annotations

from urllib.parse import urlsplit

GIT_TOKEN_VARIABLE = "RATCHET_GIT_TOKEN"  # read by the helper from the git call's environment
GIT_USERNAME = "x-access-token"  # the user GitHub expects with an installation token

# `git credential` runs `!`-helpers through the shell with the action as $1; printf's %s
# copies the value without interpreting it, so any token text is passed as it is.
CREDENTIAL_HELPER = (
    "!f() { "
    'test "$1" = get || return 0; '
    f'test -n "${GIT_TOKEN_VARIABLE}" || return 0; '
    f"printf 'username={GIT_USERNAME}\\npassword=%s\\n' \"${GIT_TOKEN_VARIABLE}\"; "
    "}; f"
)


def git_credentials(token: str, *, remote_url: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """The ``Git(config=...)`` settings and ``run(env=...)`` variables that authenticate a
    git call to ``remote_url`` with ``token``.

        config, env = git_credentials(token, remote_url=url)
        Git(git_dir=..., config=config).run("push", url, refspec, env=env)

    Raises ``ValueError`` for a token git's credential protocol could not carry (empty, or with
    whitespace, which would inject credential attributes).
    """
    if not token or any(c.isspace() or c == "\0" for c in token):
        raise ValueError(
            "a git token must be non-empty and have no whitespace; pass the installation token "
            "as GitHub returned it"
        )
    return (f"credential{_context(remote_url)}.helper={CREDENTIAL_HELPER}",), {
        GIT_TOKEN_VARIABLE: token
    }


def _context(remote_url: str) -> str:
    """``.https://host:port`` for an HTTP(S) remote (git matches helpers by scheme and host),
    nothing for other remotes, which never ask for credentials."""
    parts = urlsplit(remote_url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        return ""
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    host = host if parts.port is None else f"{host}:{parts.port}"
    return f".{parts.scheme}://{host}"
