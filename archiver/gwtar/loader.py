"""The loader script embedded in every gwtar header (formats/gwtar.md §7): ``js/loader.js`` from a
checkout, or the copy a wheel bundles as ``archiver/_bundled/js/loader.js``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from archiver.errors import EnvironmentProblem

__all__ = ["SEARCH", "loader_source"]

_PACKAGE = Path(__file__).resolve().parents[1]
#: Where the loader is looked for, in order: the checkout's js/, then the wheel's bundled copy.
SEARCH: tuple[Path, ...] = (
    _PACKAGE.parent / "js" / "loader.js",
    _PACKAGE / "_bundled" / "js" / "loader.js",
)


def loader_source(search: Sequence[Path] = SEARCH) -> str:
    """The loader's text. Raises :class:`EnvironmentProblem` when no copy exists (a checkout without
    ``js/loader.js``, or a broken install)."""
    for path in search:
        if path.is_file():
            try:
                return path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise EnvironmentProblem(f"cannot read the gwtar loader: {e}", subject=str(path)) from None
    raise EnvironmentProblem(
        "the gwtar loader is missing: expected js/loader.js in the checkout or "
        "archiver/_bundled/js/loader.js in the installed package (reinstall archiver)",
        subject=str(search[0]) if search else "js/loader.js",
    )
