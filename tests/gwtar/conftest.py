from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from archiver.gwtar import PackResult, pack
from tests.gwtar.corpus import MINI, STUB_LOADER


@pytest.fixture(scope="session")
def mini_gwtar(tmp_path_factory: pytest.TempPathFactory) -> PackResult:
    """testdata/trees/mini packed once (with the stand-in loader); tests must not modify it."""
    out = tmp_path_factory.mktemp("mini") / "mini.gwtar.html"
    return pack(MINI, out, loader=STUB_LOADER)


@pytest.fixture
def mini_tree(tmp_path: Path) -> Path:
    """A writable copy of testdata/trees/mini."""
    dst = tmp_path / "tree"
    shutil.copytree(MINI, dst)
    return dst
