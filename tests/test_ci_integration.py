"""archiver in other projects' CI: the pre-commit hook (.pre-commit-hooks.yaml), run by pre-commit
itself (it installs archiver into an environment of its own from this checkout), and the GitHub
Actions composite action (action.yml), whose verify step is tools/action-verify, run here with the
environment the action gives it, hostile input included."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml

from archiver.cli import main

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "testdata" / "trees" / "mini"
ARCHIVER = str(Path(sys.executable).with_name("archiver"))


@pytest.fixture(scope="module")
def good_and_bad(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("ci")
    good, bad = d / "good.gwtar.html", d / "bad.gwtar.html"
    assert main(["pack", str(MINI), "--format", "gwtar", "-o", str(good)]) == 0
    data = bytearray(good.read_bytes())
    data[-2000] ^= 0xFF
    bad.write_bytes(bytes(data))
    return good, bad


def test_the_pre_commit_hook_verifies_staged_archives(
    tmp_path: Path, good_and_bad: tuple[Path, Path]
) -> None:
    if shutil.which("git") is None:
        pytest.fail("git is needed")
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["archiver-verify"]
    repo = tmp_path / "project"
    repo.mkdir()
    for src in good_and_bad:
        shutil.copy(src, repo / src.name)
    (repo / "notes.txt").write_text("not an archive: the hook leaves it alone")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=repo, check=True, env=env)
    pre_commit = Path(sys.executable).with_name("pre-commit")
    proc = subprocess.run(
        [str(pre_commit), "try-repo", str(ROOT), "archiver-verify", "--all-files", "--verbose"],
        cwd=repo, capture_output=True, text=True, timeout=900, env=env,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out  # the damaged archive fails the commit
    assert "archiver verify" in out and "Failed" in out
    assert "bad.gwtar.html: INVALID" in out and "good.gwtar.html: OK" in out
    assert "notes.txt" not in out


def _action_step(name: str) -> dict[str, object]:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    return next(s for s in action["runs"]["steps"] if s.get("name") == name)


def _run_step(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The action's verify step as GitHub runs it: bash, the step's env, GITHUB_ACTION_PATH."""
    step = _action_step("archiver verify")
    assert step["shell"] == "bash" and "${{" not in str(step["run"])  # inputs never spliced into shell text
    full = {"PATH": os.environ["PATH"], "GITHUB_ACTION_PATH": str(ROOT), "ARCHIVER": ARCHIVER, **env}
    return subprocess.run(["bash", "-c", str(step["run"])], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def test_the_action_verifies_and_writes_junit(tmp_path: Path, good_and_bad: tuple[Path, Path]) -> None:
    good, bad = good_and_bad
    step = _action_step("archiver verify")
    assert set(step["env"]) == {"ARCHIVER_PATHS", "ARCHIVER_RECURSIVE", "ARCHIVER_STRICT", "ARCHIVER_JUNIT"}  # type: ignore[arg-type]
    ok = _run_step({"ARCHIVER_PATHS": f"{good}\n{MINI}", "ARCHIVER_JUNIT": "report.xml"}, tmp_path)
    assert ok.returncode == 0, ok.stderr
    cases = ET.parse(tmp_path / "report.xml").getroot().findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == [str(good), str(MINI)]
    folder = tmp_path / "archives"
    folder.mkdir()
    shutil.copy(bad, folder)
    failed = _run_step(
        {"ARCHIVER_PATHS": str(folder), "ARCHIVER_RECURSIVE": "true", "ARCHIVER_JUNIT": ""}, tmp_path
    )
    assert failed.returncode == 1 and "bad.gwtar.html: INVALID" in failed.stdout
    none = _run_step({"ARCHIVER_PATHS": "  \n "}, tmp_path)
    assert (
        none.returncode == 2 and none.stderr.strip() == "archiver: action: no paths given (with: paths: ...)"
    )


def test_the_actions_inputs_are_data_not_shell(tmp_path: Path, good_and_bad: tuple[Path, Path]) -> None:
    hostile = f"{good_and_bad[0]} $(touch pwned1) `touch pwned2`;touch pwned3 --junit=x.xml"
    proc = _run_step({"ARCHIVER_PATHS": hostile, "ARCHIVER_JUNIT": "j.xml; touch pwned4"}, tmp_path)
    assert proc.returncode == 2  # the extra words are paths that do not exist
    assert not list(tmp_path.glob("pwned*")) and not (tmp_path / "x.xml").exists()
    assert (tmp_path / "j.xml; touch pwned4").is_file()  # the report's name taken as it was written
