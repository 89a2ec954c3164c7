"""Fixtures shared by the version store's tests."""

from __future__ import annotations

import pytest

from archiver.versions import held


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every tree file the store hashes (its own hash function, counting)."""
    seen: list[int] = []
    real = held.hash_fd

    def counting(fd: int) -> tuple[int, str]:
        got = real(fd)
        seen.append(got[0])
        return got

    monkeypatch.setattr(held, "hash_fd", counting)
    return seen
