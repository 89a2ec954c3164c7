"""A CI-sized run of tools/fuzz.py (issue 14 point 8): each clean target fuzzed for a few seconds,
with zero findings tolerated (no unexpected exception, no broken property, no hang); and the tool's
own machinery (a finding is reported with its input, a hang is caught by the watchdog, the command
line exits 1 on a finding).

CLEAN lists the targets run here: every target with no known finding. A target with a finding in
code another change must fix (the tar and gwtar readers, the Range parser) leaves the list until
that fix has landed."""

from __future__ import annotations

import importlib.util
import signal
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "fuzz.py"
CLEAN = ["tar", "gwtar", "range", "html", "css", "srcset", "urls"]
SECONDS = 7.0  # per target: about 50 s in all


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("archiver_fuzz_tool", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fuzz = _load()


@pytest.mark.parametrize("target", CLEAN)
def test_clean_target_has_no_findings(target: str) -> None:
    result = fuzz.run(target, inputs=fuzz.DEFAULT_INPUTS, seconds=SECONDS)
    assert result.inputs > 50  # it did run
    found = "\n".join(f.describe() for f in result.findings.values())
    assert not result.findings, found


def test_every_reader_of_the_issue_has_a_target() -> None:
    assert set(fuzz.TARGETS) == {"tar", "gwtar", "range", "html", "css", "srcset", "urls"}
    assert set(CLEAN) <= set(fuzz.TARGETS)


def _target(check, strategy=None):  # type: ignore[no-untyped-def]
    from hypothesis import strategies as st

    return fuzz.Target("probe", strategy or (lambda: st.binary(max_size=8)), check)


def test_an_unexpected_exception_is_a_finding_with_its_input(monkeypatch: pytest.MonkeyPatch) -> None:
    def check(data: bytes) -> None:
        if len(data) > 2:
            raise IndexError("boom")

    monkeypatch.setitem(fuzz.TARGETS, "probe", _target(check))
    result = fuzz.run("probe", inputs=300)
    line = check.__code__.co_firstlineno + 2
    assert list(result.findings) == [("IndexError", f"test_fuzz.py:{line} in check")]
    finding = next(iter(result.findings.values()))
    assert isinstance(finding.data, bytes) and len(finding.data) > 2
    assert "IndexError" in finding.describe() and "input: b" in finding.describe()


def test_a_hang_is_caught_by_the_watchdog(monkeypatch: pytest.MonkeyPatch) -> None:
    def check(data: bytes) -> None:
        if data:
            while True:  # a parser stuck in a loop
                sum(range(1000))

    monkeypatch.setitem(fuzz.TARGETS, "probe", _target(check))
    outer = signal.getsignal(signal.SIGALRM)
    delay, interval = signal.setitimer(signal.ITIMER_REAL, 250.0)  # as pytest-timeout's would be
    try:
        result = fuzz.run("probe", inputs=3, hang=0.2)
        assert ("hang", "watchdog") in result.findings
        # the wall-clock alarm (pytest-timeout's) is left alone
        assert signal.getsignal(signal.SIGALRM) == outer
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0  # still armed
    finally:
        signal.setitimer(signal.ITIMER_REAL, delay, interval)


def test_the_command_line_exits_1_on_a_finding(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def check(data: bytes) -> None:
        raise RecursionError("deep")

    monkeypatch.setitem(fuzz.TARGETS, "probe", _target(check))
    assert fuzz.main(["--target", "probe", "--inputs", "5", "--save", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "probe: 5 inputs" in out and "1 findings" in out and "RecursionError" in out
    saved = tmp_path / "probe-1.txt"
    assert f"saved: {saved}" in out and "input: b" in saved.read_text(encoding="utf-8")
    assert fuzz.main(["--target", "srcset", "--inputs", "20"]) == 0
    assert "srcset: 20 inputs" in capsys.readouterr().out


@pytest.mark.parametrize("url", ["http://a../", "http://0x__q-../x", "//h..", "http://EXAMPLE.com../"])
def test_found_by_fuzzing_a_host_ending_in_two_dots_is_refused(url: str) -> None:
    """Found by tools/fuzz.py (urls): one trailing dot was stripped and 'a.' was kept, whose canonical
    form is 'a': canonicalize was not idempotent. A host ending in '..' has an empty label."""
    from archiver import urls
    from archiver.errors import URLError

    with pytest.raises(URLError, match="invalid host"):
        urls.canonicalize(url, "https://example.com/")
    assert urls.canonicalize("http://example.com./") == "http://example.com/"
