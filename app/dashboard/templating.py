"""The pages' Jinja2 environment: autoescaping everywhere, and a few filters for time and
hashes. Templates live in ``templates/``; nothing in them runs a script or carries a style."""

from __future__ import annotations

import re
import time
from pathlib import Path

import jinja2
from markupsafe import Markup, escape
from starlette.templating import Jinja2Templates

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
HASH_PREFIX = 12  # how much of a sha256 a page shows (the title attribute holds all of it)
_CODE = re.compile(r"`([^`]+)`")


def make_templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )
    env.filters.update(when=when, duration=duration, short=short, code=code)
    return Jinja2Templates(env=env)


def when(epoch: float | None) -> str:
    """An instant in UTC, to the second."""
    if epoch is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    minutes, secs = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def short(sha: str | None) -> str:
    return (sha or "")[:HASH_PREFIX]


def code(text: str) -> Markup:
    """Escape ``text``, then show its `backquoted` spans as code (the runner's sentences
    quote the commands that act on a run that way)."""
    return Markup(_CODE.sub(lambda m: f"<code>{m.group(1)}</code>", str(escape(text))))
