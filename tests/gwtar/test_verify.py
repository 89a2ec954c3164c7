"""archiver.gwtar.verify and verify_main: our files, reference-layout v1 files, the broken corpus."""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver.gwtar import PackResult, verify, verify_main
from tests.gwtar.corpus import Case, build

COMMITTED = Path(__file__).resolve().parents[2] / "testdata" / "gwtar"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Case]]:
    out = tmp_path_factory.mktemp("corpus")
    return out, build(out, big=True)


def test_ours_is_valid(mini_gwtar: PackResult) -> None:
    report = verify(mini_gwtar.path)
    assert report.ok and report.problems == [] and report.members == 15 and report.listed == 8
    assert report.extension == 1 and not report.fec
    assert report.lines() == [f"{mini_gwtar.path}: OK (15 members; archiver extension 1)"]


def test_reference_layout_files_are_valid(corpus: tuple[Path, list[Case]]) -> None:
    names = sorted(p.name for p in (corpus[0] / "v1").iterdir())
    assert names == ["array-manifest.gwtar.html", "in-folder.gwtar.html", "reference.gwtar.html",
                     "zero-not-first.gwtar.html"]  # fmt: skip
    for path in (corpus[0] / "v1").iterdir():
        report = verify(path)
        assert report.ok, report.lines()
        assert report.extension is None


def _check(path: Path, case: Case) -> None:
    report = verify(path)
    text = "\n".join(report.lines())
    assert report.exit_code == case.exit, text
    assert case.phrase in text, text
    for p in report.problems:
        assert "\n" not in p.message and "Traceback" not in p.message


def test_broken_corpus(corpus: tuple[Path, list[Case]]) -> None:
    out, cases = corpus
    assert len(cases) >= 45
    for case in cases:
        _check(out / "broken" / f"{case.name}.gwtar.html", case)


def test_committed_corpus_still_holds() -> None:
    expected = json.loads((COMMITTED / "broken" / "expected.json").read_text(encoding="utf-8"))
    assert len(expected) >= 44
    for name, row in expected.items():
        _check(COMMITTED / "broken" / f"{name}.gwtar.html", Case(name, row["exit"], row["phrase"]))
    for path in (COMMITTED / "v1").glob("*.gwtar.html"):
        assert verify(path).ok


def test_verify_main_exit_codes_and_json(
    tmp_path: Path,
    mini_gwtar: PackResult,
    corpus: tuple[Path, list[Case]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    good = mini_gwtar.path
    bad = corpus[0] / "broken" / "lie-hash.gwtar.html"
    assert verify_main([good], recursive=False, as_json=False) == 0
    assert capsys.readouterr().out.strip().endswith("OK (15 members; archiver extension 1)")
    assert verify_main([good, bad], recursive=False, as_json=False) == 1
    out = capsys.readouterr().out.splitlines()
    assert any(str(bad) in line and "offset 3288" in line and 'member "index.html"' in line for line in out)
    assert verify_main([good, bad, tmp_path / "missing.gwtar.html"], recursive=False, as_json=False) == 2
    assert "cannot read" in capsys.readouterr().err  # an error: stderr (the verdict stays on stdout)
    assert verify_main([corpus[0] / "v1"], recursive=False, as_json=False) == 2
    assert "use -r" in capsys.readouterr().err
    assert verify_main([corpus[0] / "v1"], recursive=True, as_json=True) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and len(doc["files"]) == 4
    assert verify_main([corpus[0] / "broken"], recursive=True, as_json=True) == 1
    doc = json.loads(capsys.readouterr().out)
    entry = next(f for f in doc["files"] if f["path"].endswith("lie-hash.gwtar.html"))
    assert entry["ok"] is False and entry["problems"][0]["member"] == "index.html"
    assert entry["problems"][0]["offset"] == 2776 + 512 and "SHA-256" in entry["problems"][0]["message"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert verify_main([empty], recursive=True, as_json=False) == 2
    assert verify_main([], recursive=False, as_json=False) == 2


def test_unreadable_file(tmp_path: Path) -> None:
    report = verify(tmp_path)
    assert report.unreadable and report.exit_code == 2


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damage_anywhere_never_raises(mini_gwtar: PackResult, tmp_path: Path, data: st.DataObject) -> None:
    """Random flips, cuts and splices: verify always returns a report (and flags the damage)."""
    original = mini_gwtar.path.read_bytes()
    damaged = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "zero"]))
        at = data.draw(st.integers(0, max(0, len(damaged) - 1)))
        if kind == "flip" and damaged:
            damaged[at] ^= data.draw(st.integers(1, 255))
        elif kind == "cut":
            del damaged[at : at + data.draw(st.integers(1, 3000))]
        elif kind == "insert":
            damaged[at:at] = data.draw(st.binary(min_size=1, max_size=600))
        else:
            damaged[at : at + 512] = bytes(len(damaged[at : at + 512]))
    path = tmp_path / "damaged.gwtar.html"
    path.write_bytes(bytes(damaged))
    report = verify(path)
    if bytes(damaged) != original and not bytes(damaged).startswith(original):
        # the only undetectable change is to bytes nothing covers: padding inside the header's text
        assert not report.ok or _only_uncovered_bytes_changed(original, bytes(damaged))


def _only_uncovered_bytes_changed(original: bytes, damaged: bytes) -> bool:
    if len(original) != len(damaged):
        return False
    diffs = [i for i in range(len(original)) if original[i] != damaged[i]]
    overhead = original.index(b"<!-- GWTAR END\n") + 15
    # header text outside the fields we read (the noscript text, the loader) and zero padding
    return all(i < overhead or original[i] == 0 for i in diffs)


def test_trailing_fec_like_tar_is_recognised(
    tmp_path: Path, mini_gwtar: PackResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archiver import tar

    verify_module = importlib.import_module("archiver.gwtar.verify")

    path = tmp_path / "with-tail.gwtar.html"
    shutil.copy(mini_gwtar.path, path)
    payload = b"PAR2\x00PKT" + bytes(100)
    tail = tar.encode_header("with-tail.gwtar.html.par2", len(payload), mtime=0) + payload
    tail += bytes(tar.padding(len(payload)))
    with path.open("ab") as f:
        f.write(tail + tar.end_of_archive(len(tail)))
    monkeypatch.setattr(verify_module, "fec_hook", lambda: None)  # without the FEC module: recognised only
    report = verify(path)
    assert report.ok and report.fec
    assert "FEC tail present (1 PAR2 file, 10240 bytes; slices not checked)" in report.notes

    seen: list[tuple[Path, int, list]] = []

    class Found:
        problems = ("slice 3 (bytes 4096-6143, member 'index.html') is damaged",)

    def hook(p: Path, protected_length: int, spans: list | None = None) -> Found:
        seen.append((p, protected_length, spans or []))
        return Found()

    monkeypatch.setattr(verify_module, "fec_hook", lambda: hook)
    report = verify(path)
    assert seen[0][:2] == (path, mini_gwtar.total_archive_size)
    assert ("index.html", mini_gwtar.overhead + 512, mini_gwtar.overhead + 512 + 1062) in seen[0][2]
    assert report.exit_code == 1 and report.lines()[0] == f"{path}: FEC: {Found.problems[0]}"
