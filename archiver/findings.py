"""What every ``verify`` report of problems and warnings shares (formats/zim.md §7.2): a file is
valid when it has no problem, and ``--strict`` counts the warnings as problems.

The report classes (ZIM, tree, WARC/WACZ) are dataclasses with ``problems`` and ``warnings`` lists;
this mixin gives them ``ok`` and ``strict`` once.
"""

from __future__ import annotations

from typing import Any, Self

__all__ = ["Verdict"]


class Verdict:
    """``ok`` and ``strict()`` over a report's ``problems`` and ``warnings`` lists."""

    problems: list[Any]
    warnings: list[Any]

    @property
    def ok(self) -> bool:
        return not self.problems

    def strict(self) -> Self:
        """This report with its warnings counted as problems (``--strict``)."""
        self.problems += self.warnings
        self.warnings = []
        return self
