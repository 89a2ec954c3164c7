"""The change callback of one document being stored: each reference it holds goes through the one
decision (:meth:`archiver.capture.policy.Scope.decide`), gets its tree path, and joins the frontier."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver import urls
from archiver.capture.policy import Decision, Hint
from archiver.capture.state import NewURL
from archiver.errors import URLError
from archiver.urls import Kind

if TYPE_CHECKING:
    from archiver.capture.crawl import Crawler

__all__ = ["BUDGET_REASON", "Linker"]

#: Why a page was left out under ``max_pages`` (state._LIMIT_REASONS: a freed place revives it).
BUDGET_REASON = "beyond the page budget"


class Linker:
    """The change callback of one document: every reference goes through ``Scope.decide``, then gets
    its tree path (local) and joins the list of URLs to enqueue."""

    def __init__(self, crawler: Crawler, from_path: str, base: str, depth: int, referrer: str) -> None:
        self.crawler = crawler
        self.from_path = from_path
        self.base = base
        self.depth = depth
        self.referrer = referrer
        self.new: dict[str, NewURL] = {}
        self.links: dict[str, bool] = {}  # key → written as a local link (True) or absolute (False)

    def decide(self, ref: str, hint: Hint) -> Decision:
        c = self.crawler
        decision = c.scope.decide(ref, self.base, hint, self.depth, c.fetcher_robots)
        if decision.action == "local" and decision.kind == "page" and not c.charge_page(decision.url or ""):
            return Decision(
                "absolute",
                None if "://" in ref else decision.url,
                None,
                decision.fragment,
                BUDGET_REASON,
            )
        return decision

    def __call__(self, ref: str, hint: Hint) -> str | None:
        if hint == "link" and not ref.strip(" \t\n\r\f"):
            # an empty link names the document itself (or its <base>): written as the relative link
            # to the file like every other in-scope link, so no checker takes it for a broken one
            return self(self.base, hint) if "://" in self.base else None
        decision = self.decide(ref, hint)
        c = self.crawler
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
            )
        elif hint == "stylesheet" and not self.new[key].stylesheet:
            old = self.new[key]
            self.new[key] = NewURL(**{**old.__dict__, "stylesheet": True})
        return c.tree.rel(self.from_path, path) + decision.fragment

    def _note_skip(self, ref: str, hint: Hint, decision: Decision) -> None:
        if decision.reason in ("not fetched", ""):
            return
        try:
            key = urls.dedup_key(urls.canonicalize(ref.strip(), self.base), self.crawler.scope.hygiene)
        except URLError:
            return
        self.links.setdefault(key, False)
        if key in self.new:
            return
        kind: Kind = urls.guess_kind(key) if hint == "link" else "asset"
        self.new[key] = NewURL(
            key, kind, self.depth + 1, self.referrer, 1, state="skipped", reason=decision.reason
        )
