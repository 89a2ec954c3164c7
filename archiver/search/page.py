"""The search page written beside a tree's index (formats/search.md §7): ``index.html`` and
``search.js`` (from the checkout's js/search.js, or the copy a wheel bundles)."""

from __future__ import annotations

from pathlib import Path

from archiver.errors import EnvironmentProblem

__all__ = ["HTML", "files", "script_source"]

_PACKAGE = Path(__file__).resolve().parents[1]
#: Where the page's script is looked for, in order: the checkout's js/, then the wheel's bundled copy.
SEARCH = (_PACKAGE.parent / "js" / "search.js", _PACKAGE / "_bundled" / "js" / "search.js")

HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'none'">
<meta name="referrer" content="no-referrer">
<title>Search this archive</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
form { display: flex; gap: .5rem; } input[type=search] { flex: 1; font-size: 1.1rem; padding: .4rem; }
ol { padding-left: 1.2rem; } li { margin: 1rem 0; } li a { font-size: 1.1rem; }
li small { display: block; color: #555; }
li p { margin: .2rem 0; } mark { background: #ffe36e; } #status.damaged { color: #a00; font-weight: bold; }
a:focus, input:focus, button:focus { outline: 3px solid #1a73e8; }
</style>
<script src="search.js" defer></script>
<script id="search-manifest" src="manifest.js" defer></script>
</head>
<body data-state="idle">
<main>
<h1>Search this archive</h1>
<form id="search-form" role="search" action="" method="get">
<label for="q" class="visually-hidden">Search</label>
<input id="q" name="q" type="search" autofocus autocomplete="off" placeholder="Words, &quot;a phrase&quot; …">
<button type="submit">Search</button>
</form>
<p id="status" role="status" aria-live="polite"></p>
<ol id="results"></ol>
<button id="more" type="button" hidden>More results</button>
<noscript><p>The search needs JavaScript; every page of the archive is still reachable by its
links.</p></noscript>
</main>
</body>
</html>
"""


def script_source() -> bytes:
    """js/search.js. Raises :class:`EnvironmentProblem` when no copy exists."""
    for path in SEARCH:
        if path.is_file():
            return path.read_bytes()
    raise EnvironmentProblem(
        "the search page's script is missing: expected js/search.js in the checkout or "
        "archiver/_bundled/js/search.js in the installed package (reinstall archiver)",
        subject=str(SEARCH[0]),
    )


def files() -> dict[str, bytes]:
    """The page's files by name inside ``_archiver/search/``."""
    return {"index.html": HTML.encode("utf-8"), "search.js": script_source()}
