"""Jinja2 templates from the repository's top-level templates/ folder."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def render(name: str, **context) -> str:
    return _env().get_template(name).render(**context)
