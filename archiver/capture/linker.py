"""The change callback of one document being stored: each reference it holds goes through the one
decision (:meth:`archiver.capture.policy.Scope.decide`), gets its tree path, and joins the frontier;
and, when the frontier is empty, the pages skipped for the depth limit that the crawl's final depths
bring within it (:func:`revive_within_depth`); the browser's own requests that were refused
(:func:`note_refused`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver import urls
from archiver.capture.budget import BUDGET_REASON, PageBudget
from archiver.capture.policy import Decision, Hint
from archiver.capture.state import NewURL
from archiver.errors import URLError
from archiver.urls import Kind

if TYPE_CHECKING:
    from archiver.capture.context import Context
    from archiver.capture.crawlstate import CrawlState

__all__ = ["BUDGET_REASON", "Linker", "note_refused", "revive_within_depth"]


class Linker:
    """The change callback of one document: every reference goes through ``Scope.decide``, then gets
    its tree path (local) and joins the list of URLs to enqueue; a page is charged to ``budget``."""

    def __init__(
        self, context: Context, budget: PageBudget, from_path: str, base: str, depth: int, referrer: str
    ) -> None:
        self.context = context
        self.budget = budget
        self.from_path = from_path
        self.base = base
        self.depth = depth
        self.referrer = referrer
        self.new: dict[str, NewURL] = {}
        self.links: dict[str, bool] = {}  # key → written as a local link (True) or absolute (False)

    def decide(self, ref: str, hint: Hint) -> Decision:
        c = self.context
        decision = c.scope.decide(ref, self.base, hint, self.depth, c.fetcher_robots)
        if (
            decision.action == "local"
            and decision.kind == "page"
            and not self.budget.charge(decision.url or "")
        ):
            absolute = c.scope.written_absolute(ref, self.base, hint)  # as beyond the depth limit
            return Decision("absolute", absolute, None, decision.fragment, BUDGET_REASON)
        return decision

    def __call__(self, ref: str, hint: Hint) -> str | None:
        if hint == "link" and not ref.strip(" \t\n\r\f"):
            # an empty link names the document itself (or its <base>): written as the relative link
            # to the file like every other in-scope link, so no checker takes it for a broken one
            return self(self.base, hint) if "://" in self.base else None
        decision = self.decide(ref, hint)
        c = self.context
        if decision.action == "keep":
            return None
        if decision.action == "absolute":
            self._note_skip(ref, hint, decision)
            return decision.url
        key = decision.url
        assert key is not None and decision.kind is not None
        self.links[key] = True
        path, merged_into = c.tree.assign(key, decision.kind)
        if key not in self.new:
            depth = self.depth + 1
            self.new[key] = NewURL(
                key,
                decision.kind,
                depth,
                self.referrer,
                c.scope.priority(key) if decision.kind == "page" else 1,
                stylesheet=hint == "stylesheet",
                path=path,
                state="merged" if merged_into else "pending",
                final_url=merged_into,
                source=self.referrer,
            )
        elif hint == "stylesheet" and not self.new[key].stylesheet:
            old = self.new[key]
            self.new[key] = old._replace(stylesheet=True)
        return c.tree.rel(self.from_path, path) + decision.fragment

    def _note_skip(self, ref: str, hint: Hint, decision: Decision) -> None:
        if decision.reason in ("not fetched", ""):
            return
        try:
            key = urls.dedup_key(urls.canonicalize(ref.strip(), self.base), self.context.scope.hygiene)
        except URLError:
            return
        self.links.setdefault(key, False)
        if key in self.new:
            return
        kind: Kind = urls.guess_kind(key) if hint == "link" else "asset"
        self.new[key] = NewURL(
            key,
            kind,
            self.depth + 1,
            self.referrer,
            1,
            state="skipped",
            reason=decision.reason,
            source=self.referrer,
        )


def note_refused(
    state: CrawlState, key: str, resource_type: str, referrer: str | None, reason: str, source: str | None
) -> None:
    """A request of the browser's own (a script's ``fetch()``, a script or meta refresh moving the
    page on, a script file) that the address guard refused: in the report like any other, found by
    the page rendering (the key ``source``) one step deeper, as its assets and links are (each time,
    so the discovery is recorded whichever page met the URL first)."""
    by = state.row(source) if source else None
    depth, referrer = (by.depth + 1, by.key) if by else (0, referrer)
    kind: Kind = "page" if resource_type == "document" else "asset"
    new = NewURL(key, kind, depth, referrer, state="refused", reason=reason, source=by.key if by else None)
    with state.transaction():
        known = state.row(key) is not None
        state.add([new])
        if not known:
            state.finish(key, state="refused", outcome="refused", reason=reason)


def revive_within_depth(context: Context, budget: PageBudget) -> bool:
    """The frontier is empty: every row takes its final depth and referrer (formats/crawl-state.md
    §2). A page skipped for the depth limit that they bring within it (it was found by a page fetched
    before a shorter path to that page was known) joins the frontier after all, is merged into the
    key holding its path (tree.md §3.3), or waits beyond the page budget. True when it is not empty
    any more."""
    c = context
    rows = c.state.settle_depths(c.options.depth)
    if not rows:
        return False
    new: list[NewURL] = []
    for row in rows:
        # charged before its path is given out (a key with a path counts as charged already)
        if c.tree.alias_of(row.key, "page") is None and not budget.charge(row.key):
            c.state.mark(row.key, state="skipped", outcome="skipped", reason=BUDGET_REASON)
            continue
        path, owner = c.tree.assign(row.key, "page")
        if owner is not None:
            c.state.mark(row.key, state="merged", outcome="merged", final_url=owner)
        else:
            new.append(NewURL(row.key, "page", row.depth, row.referrer, row.priority, path=path))
    with c.state.transaction():
        c.tree.flush()
        return bool(c.state.add(new))
