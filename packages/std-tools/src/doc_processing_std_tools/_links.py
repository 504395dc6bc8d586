"""Where the documentation lives, for messages that send a reader to a page of it.

The address is the ``Documentation`` Project-URL of the installed distribution, so the
one place that sets it is ``[project.urls]`` in the package's ``pyproject.toml``; a message
never names a path of the source repository, which an installed user does not have.
"""

from __future__ import annotations

import functools
from importlib import metadata

__all__ = ["docs_page", "docs_url"]

_DISTRIBUTION = "doc-processing-std-tools"


@functools.cache
def docs_url() -> str | None:
    """The documentation site's address, ending in ``/``; None when the distribution's
    metadata names none (a copy of the sources that was never installed)."""
    try:
        urls: list[str] = metadata.metadata(_DISTRIBUTION).get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = str(entry).partition(",")
        if label.strip().lower() == "documentation" and url.strip():
            return url.strip().rstrip("/") + "/"
    return None


def docs_page(page: str) -> str:
    """A phrase that sends the reader to `page` of the documentation site, such as
    ``troubleshooting/#no-workspace``: its full address when the site is known."""
    base = docs_url()
    if base is None:
        return f"the page {page} of the documentation"
    return f"the documentation ({base}{page})"
