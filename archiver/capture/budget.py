"""The page budget of a single-process capture, ``--max-pages N`` (a shared crawl keeps its budget in
the scripts instead: formats/crawl-state.md §6.8, ``CrawlState.counts_pages``).

A page is *charged* when it is found: the first N pages found join the frontier, the others are
written absolute and recorded skipped ``beyond the page budget`` (:data:`BUDGET_REASON`).
A document's links are charged in priority order (``--prefer`` first, ``--avoid`` last), then in
the order they appear. An alias of a charged page (another URL of the same file, tree.md §3.3) is
not charged: it is never fetched. ``N`` counts stored pages, so a charged page that ends without
storing one (an error status, a failure, robots.txt, not HTML) gives its place to the best page
waiting beyond the budget, whose links the end of the run makes local (tree.md §6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver.capture.state import NewURL

if TYPE_CHECKING:
    from archiver.capture.context import Context
    from archiver.capture.policy import Hint

__all__ = ["BUDGET_REASON", "PageBudget"]

#: Why a page was left out under ``max_pages`` (state._LIMIT_REASONS: a freed place revives it).
BUDGET_REASON = "beyond the page budget"


class PageBudget:
    """The budget of one run over ``context`` (see the module docstring)."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.pages_charged = 0
        self.charged: set[str] = set()

    @property
    def limit(self) -> int | None:
        c = self.context
        return None if c.state.counts_pages else c.options.max_pages

    def start(self) -> None:
        """A run (or a resumed one) begins: the pages stored and those still to fetch are charged
        already (failed ones were requeued when they get another try; the others left it).

        A resumed run may find more pages to fetch than places left: a page that failed gave its
        place to a waiting one, and is requeued now for another try. Then the first places left go
        to the pending pages in frontier order (priority, depth, discovery) and the others wait
        beyond the budget again, so N stored pages stay N across any number of resumes (before, two
        failures retried on a resume made 12 of 10). A page the tree holds and fetches again (a
        re-capture) keeps its place before any other: the same site gives the same pages. The
        pending pages kept are charged to this run: one that fails again gives its place back."""
        limit = self.limit
        if limit is None:  # no budget: charge() and release() count nothing, and no record is decoded
            return  # (a re-capture of 1,000 pages decoded its 1,000 records to count them)
        state = self.context.state
        recorded = {r.path for r in state.records() if r.kind == "page"}
        # a page the tree holds and fetches again (--refresh, --new-version: its row pending, its
        # record there until it is stored anew) comes first: the first run charged its pages in the
        # order it found them, which (priority, depth, discovery) does not always repeat (a link met
        # again on a shorter path, documents parsed while others are written), so a re-capture of an
        # unchanged Python documentation under --max-pages 300 swapped a stored page for a waiting
        # one and a new version took the stored one out of the tree as no longer on the site
        rows = sorted(
            (r for r in state.rows() if r.kind == "page" and r.state == "pending"),
            key=lambda r: (r.path not in recorded, r.priority, r.depth, r.seq),
        )
        # ... and is counted once, as a pending page: counted as stored too, a refreshed capture of
        # N pages had no place left, skipped them all beyond the budget and a new version took them
        # out of the tree as no longer on the site
        again = {r.path for r in rows if r.path is not None}
        stored = sum(1 for path in recorded if path not in again)
        places = max(limit - stored, 0)
        for row in rows[places:]:
            state.mark(row.key, state="skipped", outcome="skipped", reason=BUDGET_REASON)
        self.charged.update(r.key for r in rows[:places])
        self.pages_charged = stored + min(len(rows), places)

    def charge(self, key: str) -> bool:
        """May ``key`` join the frontier as a page?"""
        limit = self.limit
        if limit is None:
            return True
        c = self.context
        if key in self.charged or key in c.tree.paths:
            return True
        if c.tree.alias_of(key, "page") is not None:  # shares a charged page's file: not a page
            return True
        row = c.state.row(key)
        if row is not None and row.state != "skipped":
            return True
        if self.pages_charged >= limit:
            return False
        self.pages_charged += 1
        self.charged.add(key)
        return True

    def release(self, key: str) -> None:
        """The charged page ``key`` ended without storing a page: its place goes to the best page
        waiting beyond the budget (priority, then depth and discovery)."""
        if key not in self.charged:
            return
        self.charged.discard(key)
        c = self.context
        row = c.state.row(key)
        if row is not None and row.state == "merged" and row.final_url:
            heir = c.state.row(row.final_url)
            if heir is not None and heir.state == "pending":  # it handed its path on: same page
                self.charged.add(heir.key)
                return
        self.pages_charged -= 1
        waiting = list(c.state.skipped_for(BUDGET_REASON, "page"))
        if not waiting:
            return
        best = min(waiting, key=lambda r: (c.scope.priority(r.key), r.depth, r.seq))
        if self.charge(best.key):
            c.state.add([NewURL(best.key, "page", best.depth, best.referrer, best.priority)])

    def charge_links(self, doc_text: str, base: str, depth: int) -> None:
        """Charge the pages the document ``doc_text`` (at ``base``, at ``depth``) links to in priority
        order, before its links are written: the budget goes to the pages the user cares about."""
        if self.limit is None:
            return
        from archiver.capture import rewrite_html  # a run without a budget never parses here

        c = self.context
        found: dict[str, int] = {}

        def collect(ref: str, hint: Hint) -> str | None:
            d = c.scope.decide(ref, base, hint, depth, c.fetcher_robots)
            if d.action == "local" and d.kind == "page" and d.url is not None:
                found.setdefault(d.url, len(found))
            return None

        rewrite_html.rewrite(rewrite_html.parse(doc_text), collect)
        for key in sorted(found, key=lambda k: (c.scope.priority(k), found[k])):
            self.charge(key)
