"""Jinja2 templates from the repository's top-level templates/ folder (ibtool/templates links to it;
a wheel carries them there)."""

from __future__ import annotations

import re
from functools import lru_cache
from html import escape
from pathlib import Path

import jinja2
from markupsafe import Markup

TEMPLATES = Path(__file__).resolve().parent / "templates"


# what a technician reads as one word: a place in a rack, a device's port, a cable ID
_DEVICE = r"(?:[^\s,;:()\[\]]|\[[^\]\s]*\])+"  # R[0,0], S-ib5, a GUID ...
_IDENT = re.compile(rf"[\w.-]+ U\d+ (?:front|back)|{_DEVICE} (?:port |P)\d+\b|\bC\d{{4,}}\b")


def nobreak(text: str) -> Markup:
    """`text` escaped, with every identifier in it (C0 U42 front, R[0,0] port 2, C0043) kept on
    one line when printed (<span class="id">, white-space: nowrap in the sheets' CSS)."""
    return Markup(_IDENT.sub(lambda m: f'<span class="id">{m.group(0)}</span>', escape(str(text), quote=False)))


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters["nobreak"] = nobreak
    return env


def render(name: str, **context) -> str:
    return _env().get_template(name).render(**context)
