"""Random-signal stress: every writing command stopped at a random moment, then checked.

    python tools/signal_stress.py [--site DIR] [--pages N] [--runs N] [--only NAME ...] [--work DIR]

A folder of HTML (``--site``: default Debian's python3-doc when installed, else the repository's demo
site) is served by Debian's nginx on 127.0.0.1 and captured once as the *reference* (``--max-pages``
unless ``--pages 0``, no rendering, with ``--warc``); then, for each command below, ``--runs`` times:
the command is started, sent SIGINT, SIGTERM or SIGHUP (at random) after a random delay within its
own undisturbed run time, and judged:

- it exits 130 with ``archiver: interrupted`` as its last line and no traceback, or 0 (it finished
  before the signal), never anything else (a death by the signal, an internal error);
- nothing temporary is left (``.archiver-tmp-*`` beside an output, ``*.part``, ``*.tmp`` or
  ``_archiver/tmp/*`` in a tree);
- a command that writes a file or folder: after exit 130 it is absent, after 0 it is whole
  (``archiver verify`` passes);
- a capture (live, or ``--from-warc``): run again, it finishes (exit 0) and its tree holds the
  reference's files with the same SHA-256 (``manifest.jsonl``) and ``verify`` passes: an interrupted
  capture is resumable, never damaged.

A signal landing in the interpreter's own start, before archiver's first line (a few ms: ``site``,
``runpy``), ends the process as Python does (exit 1 or -2, a traceback through ``<frozen ...>``
modules): reported as bad like any other, recognisable by that traceback. One crash seen so far
(SIGSEGV, 1 in ~450 early SIGINTs) was a KeyboardInterrupt inside msgspec building a decoder at
import (``archiver/tree.py``'s module level).

Commands (``--only``): ``capture``, ``import``, ``gwtar``, ``zim``, ``wacz``, ``extract``, ``index``,
``recapture`` (``--new-version`` of a copy of the reference: resumed by the same command, it ends
with recorded versions only, each after the first adding no bytes), ``repair`` (a copy of the
reference's gwtar with PAR2 data, 4 KiB zeroed, repaired to ``-o``) and ``repair-in-place`` (the same
file repaired where it is: after exit 130 it is byte for byte the damaged file or the repaired one).
It prints one line per bad run (what was wrong, the signal, stderr's end) and a tally per command;
exit 1 when a run was bad. This is how this session's signal bugs were found (a manifest naming other
bytes after a stopped relink, a spool file left by an import, exit -2 after a finished pack); it
takes minutes, so it is a tool, not a test. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from nginx_static import serve_folder  # noqa: E402

PYTHON_DOCS = Path("/usr/share/doc/python3-doc/html")
DEMO = REPO / "testdata" / "site"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
COMMANDS = (
    "capture",
    "import",
    "gwtar",
    "zim",
    "wacz",
    "extract",
    "index",
    "recapture",
    "repair",
    "repair-in-place",
)
TEMP_MARKS = (".archiver-tmp-",)
TEMP_ENDS = (".part", ".tmp")


def archiver(*args: str) -> list[str]:
    return [sys.executable, "-m", "archiver", *args]


def temporaries(root: Path) -> list[str]:
    """Files a stopped command must not leave under ``root`` (see the module docstring)."""
    if not root.exists():
        return []
    left = []
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        temporary = any(m in path.name for m in TEMP_MARKS) or path.name.endswith(TEMP_ENDS)
        if temporary or rel.startswith("_archiver/tmp/") or "/_archiver/tmp/" in rel:
            left.append(rel)
    return left


def files_of(tree: Path) -> dict[str, str]:
    """The tree's manifest: path → SHA-256 (the header line skipped)."""
    lines = (tree / "_archiver" / "manifest.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    return {r["path"]: r["sha256"] for r in map(json.loads, lines)}


def verified(path: Path) -> bool:
    return subprocess.run(archiver("verify", str(path)), capture_output=True, check=False).returncode == 0


class Case:
    """One command: ``argv(out)`` runs it writing ``output(out)``; ``resumable``: an interrupted run
    is finished by the same command (a capture), not removed."""

    def __init__(
        self,
        name: str,
        argv: Callable[[Path], list[str]],
        output: Callable[[Path], Path],
        resumable: bool,
        prepare: Callable[[Path], None] | None = None,
        check: Callable[[Path, int], str | None] | None = None,
    ) -> None:
        self.name, self.argv, self.output, self.resumable = name, argv, output, resumable
        self.prepare = prepare  # sets up a run's folder before the command starts
        self.check = check  # what else is wrong after the run (exit code given), beside judge's rules
        self.duration = 1.0


def judge(case: Case, out: Path, code: int, stderr: str, reference: dict[str, str] | None) -> str | None:
    """What is wrong with a stopped run (None: nothing)."""
    lines = stderr.strip().splitlines()
    if code not in (0, 130):
        return f"exit {code}"
    if code == 130 and (lines[-1:] != ["archiver: interrupted"] or "Traceback" in stderr):
        return "exit 130 without exactly 'archiver: interrupted' last"
    left = temporaries(out)
    if left:
        return f"left {left[:3]}"
    if case.check is not None and (wrong := case.check(out, code)):
        return wrong
    target = case.output(out)
    if case.resumable:
        again = subprocess.run(case.argv(out), capture_output=True, text=True, check=False)
        if again.returncode != 0:
            return f"the resume exits {again.returncode}: {again.stderr.strip()[-200:]}"
        if temporaries(out):
            return f"the resume left {temporaries(out)[:3]}"
        if reference is not None and files_of(target) != reference:
            got = files_of(target)
            differ = sorted(k for k in set(got) | set(reference) if got.get(k) != reference.get(k))
            return f"the resumed tree differs from the reference: {differ[:3]}"
        if not verified(target):
            return "the resumed tree does not verify"
        if case.check is not None and (wrong := case.check(out, 0)):
            return f"after the resume: {wrong}"
        return None
    if case.check is not None:  # its own rules for what is left (a file repaired in place)
        return None
    if code == 130 and target.exists():
        return f"exit 130 but {target.name} exists"
    if code == 0 and not (target.exists() and (case.name in ("extract", "index") or verified(target))):
        return f"exit 0 but {target.name} is missing or does not verify"
    return None


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def damaged_copy(packed: Path, to: Path) -> None:
    """``packed`` (a gwtar with PAR2 data) copied to ``to`` with 4 KiB zeroed at 40 % of its length."""
    shutil.copyfile(packed, to)
    with to.open("r+b") as f:
        f.seek(int(to.stat().st_size * 0.4))
        f.write(bytes(4096))


def versions_of(tree: Path) -> list[dict[str, object]]:
    listed = subprocess.run(archiver("ls", str(tree), "--versions", "--json"), capture_output=True, text=True)
    return [json.loads(line) for line in listed.stdout.splitlines() if line.startswith("{")]


def cases_for(
    seed: str, tree: Path, warcs: list[Path], packed: Path, fec: Path, capture: list[str]
) -> dict[str, Case]:
    """The commands stressed (see the module docstring), each writing under a run's folder."""
    from_warc = ["--from-warc", *map(str, warcs), "--no-render"]
    whole, broken = sha256_of(fec), fec.with_name("damaged.gwtar.html")
    damaged_copy(fec, broken)
    damaged = sha256_of(broken)

    def copy_tree(out: Path) -> None:  # a copy: a re-capture writes its state in place
        subprocess.run(["cp", "-a", str(tree), str(out / "t")], check=True)

    def two_versions(out: Path, code: int) -> str | None:
        if code != 0:  # interrupted: the earlier version is whole whatever else (resumed next)
            return None
        got = versions_of(out / "t")  # two, or three when the stopped run had finished before the
        # signal (its "resume" is then another re-capture): each new one adds no bytes
        if (
            len(got) < 2
            or not all(v.get("recorded") for v in got)
            or any(v.get("new_bytes") for v in got[1:])
        ):
            return f"versions after the re-capture: {got}"
        return None

    def in_place(out: Path, code: int) -> str | None:
        now = sha256_of(out / "a.gwtar.html")
        if code == 0 and now != whole:
            return "exit 0 but the file is not the undamaged archive"
        if code == 130 and now not in (whole, damaged):
            return "exit 130 and the file is neither the damaged one nor the repaired one"
        return None

    def pack(fmt: str, name: str, *more: str) -> Case:
        return Case(fmt, lambda o: archiver("pack", str(tree), "--format", fmt, *more, "-o", str(o / name)),
                    lambda o: o / name, False)  # fmt: skip

    return {
        "capture": Case("capture", lambda o: archiver("capture", seed, "-o", str(o / "t"), *capture),
                        lambda o: o / "t", True),
        "import": Case("import", lambda o: archiver("capture", *from_warc, "-o", str(o / "t")),
                       lambda o: o / "t", True),
        "gwtar": pack("gwtar", "a.gwtar.html", "--add-fec-data"),
        "zim": pack("zim", "a.zim"),
        "wacz": pack("wacz", "a.wacz"),
        "extract": Case("extract", lambda o: archiver("extract", str(packed), "-o", str(o / "x")),
                        lambda o: o / "x", False),
        "index": Case("index", lambda o: archiver("index", str(o / "t")),
                      lambda o: o / "t" / "_archiver" / "search", False),
        "recapture": Case("recapture",
                          lambda o: archiver("capture", seed, "-o", str(o / "t"), *capture, "--new-version"),
                          lambda o: o / "t", True, copy_tree, two_versions),
        "repair": Case("repair", lambda o: archiver("repair", str(broken), "-o", str(o / "r.gwtar.html")),
                       lambda o: o / "r.gwtar.html", False),
        "repair-in-place": Case("repair-in-place", lambda o: archiver("repair", str(o / "a.gwtar.html")),
                                lambda o: o / "a.gwtar.html", False,
                                lambda o: shutil.copyfile(broken, o / "a.gwtar.html"), in_place),
    }  # fmt: skip


def stress(
    case: Case, tree: Path, work: Path, runs: int, rng: random.Random, reference: dict[str, str] | None
) -> int:
    """``runs`` stopped runs of ``case`` after one undisturbed (its time bounds the delays); the bad ones."""
    tally: dict[str, int] = {}
    bad = 0
    for i in range(runs + 1):
        out = work / "runs" / case.name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        if case.name == "index":  # a copy of the reference (hard links) without its index
            subprocess.run(["cp", "-al", str(tree), str(out / "t")], check=True)
            shutil.rmtree(out / "t" / "_archiver" / "search", ignore_errors=True)
        if case.prepare is not None:
            case.prepare(out)
        started = time.monotonic()
        proc = subprocess.Popen(case.argv(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sig = rng.choice(SIGNALS)
        if i > 0:  # run 0 is undisturbed: how long the command takes
            time.sleep(rng.uniform(0.0, case.duration))
            if proc.poll() is None:
                proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=600)
        if i == 0:
            case.duration = time.monotonic() - started
            if proc.returncode != 0:
                print(f"{case.name}: the undisturbed run exits {proc.returncode}: {stderr.strip()[-300:]}")
                return 1
            continue
        wrong = judge(case, out, proc.returncode, stderr, reference)
        key = "bad" if wrong else ("finished" if proc.returncode == 0 else "interrupted")
        tally[key] = tally.get(key, 0) + 1
        if wrong:
            bad += 1
            print(f"{case.name} run {i} {sig.name}: {wrong}; stderr: {stderr.strip()[-200:]!r}", flush=True)
    print(f"{case.name}: {case.duration:.1f} s undisturbed; {tally}", flush=True)
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=PYTHON_DOCS if PYTHON_DOCS.is_dir() else DEMO)
    parser.add_argument(
        "--pages",
        type=int,
        default=300,
        help="pages of the site captured (300; 0: the whole site, no page budget)",
    )
    parser.add_argument("--runs", type=int, default=10, help="stopped runs per command (10)")
    parser.add_argument("--only", nargs="+", choices=COMMANDS, default=list(COMMANDS))
    parser.add_argument("--work", type=Path, default=None, help="where the temporary folder goes")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="signal-stress-", dir=args.work))
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; site {args.site}; work {work}")
    try:
        with serve_folder(args.site, work / "nginx") as base:
            seed = base + ("index.html" if (args.site / "index.html").is_file() else "")
            capture = ["--no-render", "--delay", "0"]
            capture += ["--max-pages", str(args.pages)] if args.pages else []  # 0: the whole site
            tree, packed, imported = work / "reference", work / "packed.gwtar.html", work / "imported"
            made = subprocess.run(
                archiver("capture", seed, "-o", str(tree), *capture, "--warc"), capture_output=True
            )
            if made.returncode != 0:
                print(f"the reference capture exits {made.returncode}: {made.stderr.decode()[-300:]}")
                return 2
            warcs = sorted((tree / "_archiver" / "warc").glob("*.warc.gz"))
            subprocess.run(archiver("pack", str(tree), "--format", "gwtar", "-o", str(packed)), check=True)
            fec = work / "fec.gwtar.html"
            subprocess.run(
                archiver("pack", str(tree), "--format", "gwtar", "--add-fec-data", "-o", str(fec)), check=True
            )
            from_warc = ["--from-warc", *map(str, warcs), "--no-render"]
            subprocess.run(
                archiver("capture", *from_warc, "-o", str(imported)), check=True, capture_output=True
            )
            references = {"capture": files_of(tree), "import": files_of(imported)}
            cases = cases_for(seed, tree, warcs, packed, fec, capture)
            bad = sum(stress(cases[n], tree, work, args.runs, rng, references.get(n)) for n in args.only)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
