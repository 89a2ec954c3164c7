"""Property fuzzing (hypothesis) of archiver's parsers of hostile input.

    python tools/fuzz.py [--target NAME ...] [--inputs N] [--seconds S] [--hang S] [--save DIR] [--list]

One target per reader: ``tar`` (ustar/pax header decoding), ``gwtar`` (opening and reading a gwtar
file: a valid one built by the project's own writer, then mutated byte by byte, truncated and
spliced), ``range`` (the Range / conditional-request decision of ``serve``), ``html`` (the capture's
HTML reference walker and rewriter), ``css`` (the CSS reference walker), ``srcset`` and ``urls``
(the URL canonicaliser and the tree mapping). Each runs ``--inputs`` inputs (100,000 by default) or
until ``--seconds`` have passed, whichever comes first.

An input *finds* something when the code under test raises anything but the project's own error
class that the function documents (``archiver.errors.URLError`` from the URL core, ``FormatError``
from the gwtar reader, ``tar.TarError`` from the header decoder; the HTML, CSS, srcset and Range code
never raises), breaks a stated property (a canonical URL is its own canonical form, a dedup key its
own dedup key), or runs longer than ``--hang`` seconds of CPU time (2 by default; a watchdog timer,
``ITIMER_PROF``, interrupts it).
Each finding is printed once per (target, exception type, last frame) with the input as a Python
literal (``--save DIR`` writes it whole; for gwtar also the base file and edits drawn). Per
target: inputs, seconds, findings. Exit status 1 if anything was found, else 0.

The module is importable: :func:`run` fuzzes one target and returns its :class:`Result` (the test
suite's CI-sized run, tests/test_fuzz.py, calls it).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings

ROOT = Path(__file__).resolve().parents[1]
for _folder in (ROOT, ROOT / "tools"):  # archiver, and fuzz_targets beside this file
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from fuzz_targets import TARGETS, PropertyBroken, Target, show_gwtar  # noqa: E402

__all__ = ["DEFAULT_HANG", "DEFAULT_INPUTS", "TARGETS", "Result", "Target", "main", "run"]

DEFAULT_INPUTS = 100_000
DEFAULT_HANG = 2.0


class Hang(BaseException):
    """Raised by the watchdog inside an input that ran too long (a BaseException, so the code under
    test cannot swallow it with ``except Exception``)."""


class _TimeUp(BaseException):
    """Ends a target's run when its seconds are spent (hypothesis lets BaseExceptions through)."""


@dataclass
class Finding:
    target: str
    kind: str  # the exception's type name, "hang" or "property"
    where: str  # the traceback's last frame, file:line in function
    message: str
    data: Any  # the input: what the code under test was given (gwtar: the mutated file's bytes)
    raw: Any = None  # what the strategy drew, when that is not ``data`` (gwtar: base and edits)

    def describe(self, limit: int = 2000) -> str:
        shown = repr(self.data)
        if len(shown) > limit:
            shown = shown[:limit] + "...(cut; --save DIR keeps it whole)"
        text = f"{self.target}: {self.kind} at {self.where}: {self.message}\n    input: {shown}"
        if self.raw is not None:
            text += f"\n    drawn: {self.raw!r}"
        return text

    def save(self, folder: Path, n: int) -> Path:
        """Write the whole input to ``folder`` (a Python literal in a .txt file), and return it."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.target}-{n}.txt"
        path.write_text(self.describe(limit=1 << 62) + "\n", encoding="utf-8")
        return path


@dataclass
class Result:
    target: str
    inputs: int = 0
    seconds: float = 0.0
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)


def _last_frame(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    f = frames[-1]
    return f"{Path(f.filename).name}:{f.lineno} in {f.name}"


@dataclass
class _Alarm:
    fired: bool = False


@contextlib.contextmanager
def _watchdog(seconds: float) -> Iterator[_Alarm]:
    """Interrupt the block with :class:`Hang` once it has used ``seconds`` of CPU time (the
    process's, ``ITIMER_PROF``: a busy machine does not make a fast input look hung, and SIGALRM,
    pytest-timeout's, is left alone). The garbage collector is off meanwhile: two long runs saw the
    alarm go off inside a full collection of hypothesis's own heap (after 100,000 inputs), not in
    the code under test. ``fired`` stays set should the Hang land where Python ignores it (a
    garbage-collector callback), so the input is still reported."""
    alarm = _Alarm()

    def fire(signum: int, frame: object) -> None:
        alarm.fired = True
        raise Hang(f"input ran longer than {seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, fire)
    collecting = gc.isenabled()
    gc.disable()  # a full collection of hypothesis's heap is not the input's time
    delay, interval = signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield alarm
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        if collecting:
            gc.enable()
        if delay > 0:  # someone else's profiling timer: give it back (less what this block used)
            signal.setitimer(signal.ITIMER_PROF, max(delay - seconds, 0.001), interval)


# ----------------------------------------------------------------------------------------- targets


# ------------------------------------------------------------------------------------------- runner


def run(
    name: str, *, inputs: int = DEFAULT_INPUTS, seconds: float | None = None, hang: float = DEFAULT_HANG
) -> Result:
    """Fuzz target ``name`` with up to ``inputs`` inputs, for at most ``seconds``."""
    target = TARGETS[name]
    if target.setup is not None:
        target.setup()
    result = Result(name)
    started = time.monotonic()
    deadline = None if seconds is None else started + seconds

    @settings(
        max_examples=inputs,
        deadline=None,
        database=None,
        derandomize=False,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(target.strategy())
    def one(data: Any) -> None:
        if deadline is not None and time.monotonic() > deadline:
            raise _TimeUp
        result.inputs += 1
        try:
            with _watchdog(hang) as alarm:
                target.check(data)
            if alarm.fired:
                raise Hang(f"input ran longer than {hang} s of CPU time")
        except target.expected:
            return
        except Hang as e:
            _found(result, "hang", "watchdog", str(e), data)
        except PropertyBroken as e:
            _found(result, "property", _last_frame(e), str(e), data)
        except (Exception, RecursionError, MemoryError) as e:
            _found(result, type(e).__name__, _last_frame(e), str(e)[:300], data)

    with contextlib.suppress(_TimeUp), contextlib.redirect_stdout(io.StringIO()):
        one()  # (hypothesis prints a "reproduce with @seed" line when _TimeUp ends the run)
    result.seconds = time.monotonic() - started
    return result


def _found(result: Result, kind: str, where: str, message: str, data: Any) -> None:
    key = (kind, where)
    if key not in result.findings:
        if result.target == "gwtar":
            result.findings[key] = Finding(result.target, kind, where, message, show_gwtar(data), data)
        else:
            result.findings[key] = Finding(result.target, kind, where, message, data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/fuzz.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--target", action="append", choices=sorted(TARGETS), help="(repeatable; default all)"
    )
    parser.add_argument("--inputs", type=int, default=DEFAULT_INPUTS, help="inputs per target (100000)")
    parser.add_argument("--seconds", type=float, help="at most this long per target")
    parser.add_argument("--hang", type=float, default=DEFAULT_HANG, help="per-input CPU time limit (2 s)")
    parser.add_argument("--save", type=Path, metavar="DIR", help="write each finding's whole input here")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(TARGETS))
        return 0
    total = 0
    for name in args.target or list(TARGETS):
        result = run(name, inputs=args.inputs, seconds=args.seconds, hang=args.hang)
        print(
            f"{name}: {result.inputs} inputs, {result.seconds:.1f} s, {len(result.findings)} findings",
            flush=True,
        )
        for finding in result.findings.values():
            total += 1
            print("  " + finding.describe().replace("\n", "\n  "), flush=True)
            if args.save is not None:
                print(f"    saved: {finding.save(args.save, total)}", flush=True)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
