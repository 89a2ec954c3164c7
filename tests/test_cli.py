"""The command line, called as users call it (a subprocess) and through main(argv)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.cli import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_map_prints_tree_paths(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["map", "--home", "https://ex.com/", "/docs", "/img/logo.png?v=3&utm_source=x"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "docs/index.html\thttps://ex.com/docs",
        "_archiver/ex.com/img/logo__q-951eba.png\thttps://ex.com/img/logo.png?v=3",
    ]


def test_map_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["map", "--json", "--kind", "page", "EX.com/a?b=1"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row == {
        "input": "EX.com/a?b=1",
        "canonical": "https://ex.com/a?b=1",
        "dedup_key": "https://ex.com/a?b=1",
        "kind": "page",
        "path": "a/index__q-cbe78b.html",
    }


def test_bad_url_is_one_line_and_exit_2() -> None:
    result = run("map", "http://[::1")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == "archiver: 'http://[::1': IPv6 host without its closing ']'\n"


def test_debug_adds_the_traceback() -> None:
    result = run("--debug", "map", "http://")
    assert result.returncode == 2
    assert "Traceback" in result.stderr and result.stderr.endswith("archiver: 'http://': no host in URL\n")


MINI = Path(__file__).resolve().parents[1] / "testdata" / "trees" / "mini"


def test_pack_verify_ls_extract_gwtar(tmp_path: Path) -> None:
    out = tmp_path / "mini.gwtar.html"
    result = run("pack", str(MINI), "--format", "gwtar", "-o", str(out), "--add-fec-data", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["format"] == "gwtar" and doc["main"] == "index.html" and doc["pages"] == 7
    verified = run("verify", str(out))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    listing = run("ls", str(out)).stdout
    assert "what?.html" in listing and "_archiver/mini.example/css/base.css" in listing
    assert run("extract", str(out), "-o", str(tmp_path / "x")).returncode == 0
    assert (tmp_path / "x" / "caf\u00e9 menu" / "index.html").read_bytes() == (
        MINI / "caf\u00e9 menu" / "index.html"
    ).read_bytes()
    again = run("extract", str(out), "-o", str(tmp_path / "x"))
    assert again.returncode == 2 and "Traceback" not in again.stderr
    damaged = bytearray(out.read_bytes())
    damaged[len(damaged) // 3] ^= 0xFF
    out.write_bytes(damaged)
    assert run("verify", str(out)).returncode == 1
    assert run("repair", str(out)).returncode == 0
    assert run("verify", str(out)).returncode == 0


def test_pack_and_verify_zim(tmp_path: Path) -> None:
    out = tmp_path / "mini.zim"
    result = run("pack", str(MINI), "--format", "zim", "-o", str(out))
    assert result.returncode == 0, result.stderr
    verified = run("verify", "--json", str(out))
    assert verified.returncode == 0, verified.stdout
    assert json.loads(verified.stdout)["ok"] is True
    assert "docs/intro/index.html" in run("ls", str(out)).stdout


def test_unknown_input_is_a_usage_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01 not an archive")
    result = run("ls", str(junk))
    assert result.returncode == 2
    assert result.stderr == f"archiver: {junk}: not a tree, gwtar, ZIM or HTML file\n"
    missing = run("extract", str(tmp_path / "nope.zim"), "-o", str(tmp_path / "o"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_version_and_help() -> None:
    assert run("--version").stdout.startswith("archiver ")
    helptext = run("--help").stdout
    for command in ("demo", "capture", "pack", "verify", "ls", "extract", "repair", "serve", "map"):
        assert command in helptext


def test_a_run_builds_its_own_command_only_and_parses_as_the_whole_parser_does() -> None:
    """A command line naming its command (after ``--debug`` at most) is parsed by a parser holding
    that command alone: the same arguments as the whole parser gives, the same help and usage
    errors; anything else (``--help``, ``--version``, an abbreviation, an unknown command) gets the
    whole parser."""
    import shlex

    from archiver.cli.parser import EXAMPLES, _parser, command_of

    assert command_of(["--debug", "capture", "--help"]) == "capture"
    assert [command_of(w) for w in ([], ["--help", "ls"], ["--deb", "ls"], ["nope"], ["--", "ls"])] == [
        None
    ] * 5
    whole = _parser()
    for name, lines in EXAMPLES.items():
        for line in lines:
            words = shlex.split(line.split("#", 1)[0].split(">", 1)[0])[1:]
            for argv in (words, ["--debug", *words]):
                assert command_of(argv) == name
                mine, theirs = vars(_parser(name).parse_args(argv)), vars(whole.parse_args(argv))
                cells = [[c.cell_contents for c in d.pop("func").__closure__] for d in (mine, theirs)]
                assert mine == theirs and cells[0] == cells[1], line
        helps = [
            parser._subparsers._group_actions[0].choices[name].format_help()
            for parser in (_parser(name), whole)
        ]
        assert helps[0] == helps[1]
    helptext = run("--help").stdout
    assert all(f"    {name}" in helptext for name in EXAMPLES)
    bad = run("capture", "http://x/", "-o", "o", "--depth", "x")
    assert bad.returncode == 2 and bad.stderr == (
        "archiver: capture --depth: expected a whole number, got 'x' (see archiver capture --help)\n"
    )


def _on_a_terminal(*args: str) -> tuple[int, str, str]:
    """Run the CLI with standard error on a 24x100 pseudo-terminal; return (exit, stdout, what the
    terminal showed)."""
    import fcntl
    import os
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "archiver", *args], stdout=subprocess.PIPE, stderr=slave, text=True
    )
    os.close(slave)
    shown = b""
    while True:
        ready = select.select([master], [], [], 0.1)[0]
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its end
                chunk = b""
            if chunk:
                shown += chunk
                continue
        if proc.poll() is not None and not ready:
            break
        if ready and not chunk:
            break
    stdout = proc.stdout.read() if proc.stdout else ""
    proc.wait(timeout=120)
    os.close(master)
    return proc.returncode, stdout, shown.decode("utf-8", "replace")


def test_pack_and_verify_show_progress_on_a_terminal_only(tmp_path: Path) -> None:
    out = tmp_path / "mini.gwtar.html"
    code, stdout, shown = _on_a_terminal("pack", str(MINI), "--format", "gwtar", "-o", str(out))
    assert code == 0 and stdout.startswith(str(out))
    assert "pack mini.gwtar.html" in shown and "B/s" in shown  # label, byte counts and rate
    code, stdout, shown = _on_a_terminal("verify", str(out))
    assert code == 0 and "verify mini.gwtar.html" in shown
    code, stdout, shown = _on_a_terminal("verify", "--json", str(out))
    assert code == 0 and json.loads(stdout)["ok"] and shown == ""
    piped = run("verify", str(out))  # standard error is a pipe: no meter
    assert piped.returncode == 0 and piped.stderr == ""
    code, stdout, shown = _on_a_terminal(
        "pack", str(MINI), "--format", "zim", "-o", str(tmp_path / "mini.zim")
    )
    assert code == 0 and "pack mini.zim" in shown and "B/s" in shown


def test_serve_rejects_zero_workers() -> None:
    result = run("serve", "--workers", "0", str(MINI))
    assert result.returncode == 2 and result.stderr == "archiver: workers=0: must be at least 1\n"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["capture", "-o", "t", "--depth", "-1", "http://x.test/"],
         "archiver: capture --depth: must be at least 0, got -1 (see archiver capture --help)"),
        (["verify"], "archiver: verify: missing ARCHIVE (see archiver verify --help)"),
        (["pack", "x", "--format", "tar", "-o", "y"],
         "archiver: pack --format: invalid choice: 'tar' (choose from 'gwtar', 'zim', 'wacz')"
         " (see archiver pack --help)"),
        ([], "archiver: missing COMMAND (see archiver --help)"),
        (["serve", "x", "--port", "99999"],
         "archiver: serve --port: a port is 0 to 65535, got 99999 (see archiver serve --help)"),
    ],
)  # fmt: skip
def test_usage_errors_are_one_line_naming_the_option(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # not argparse's usage block and "error: argument --depth: …": the error form of every other
    # archiver error, naming the command and the option
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == line + "\n" and captured.out == ""


def test_verify_says_why_a_file_is_unreadable_on_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "gone.gwtar.html"
    assert main(["verify", str(missing)]) == 2
    out, err = capfd.readouterr()
    assert out == f"{missing}: UNREADABLE\n"  # the verdict: stdout stays a list of verdicts
    assert err == f"archiver: {missing}: cannot read: No such file or directory\n"


def test_every_command_shows_examples_that_parse() -> None:
    """Every command's --help ends with examples, and each example is a command line the parser
    accepts (so no example names a flag that does not exist)."""
    import shlex

    from archiver.cli.parser import EXAMPLES, _parser

    parser = _parser()
    for name, lines in EXAMPLES.items():
        shown = run(name, "--help").stdout
        assert "examples:\n" in shown, name
        for line in lines:
            assert f"  {line}" in shown
            words = shlex.split(line.split("#", 1)[0].split(">", 1)[0])
            assert words[:2] == ["archiver", name]
            args = parser.parse_args(words[1:])  # exits 2 on a flag that does not exist
            assert args.command == name


def test_capture_shows_out_as_required_and_pack_explains_its_formats() -> None:
    usage = run("capture", "--help").stdout.split("\n\n", 1)[0]
    assert "archiver capture URL... -o DIR [options]" in usage and "[-o" not in usage
    pack = " ".join(run("pack", "--help").stdout.split())
    for word in ("gwtar: one .gwtar.html", "zim: a ZIM file for Kiwix", "wacz: the WARC records"):
        assert word in pack


_SIGNAL_AT_START = """
import os, signal, sys
import archiver.cli.{module} as m
real = m.{func}
def hit(args):
    os.kill(os.getpid(), signal.{sig})
    return real(args)
m.{func} = hit
from archiver.cli import main
sys.exit(main({argv!r}))
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize(
    ("module", "func", "argv"),
    [
        ("readers", "_cmd_ls", ["ls", str(MINI)]),
        ("readers", "_cmd_verify", ["verify", str(MINI)]),
        ("serve", "_cmd_map", ["map", "http://a.example/"]),
        ("search", "_cmd_search", ["search", str(MINI), "-q", "x"]),
    ],
)
def test_sigterm_or_sighup_before_a_commands_own_handling_is_an_interruption(
    sig: str, module: str, func: str, argv: list[str]
) -> None:
    """A signal that lands as a command starts (before any block of its own that handles signals)
    ends it as Ctrl-C does: exit 130 and one line, not the default action's silent death (-15, -1)."""
    code = _SIGNAL_AT_START.format(module=module, func=func, sig=sig, argv=argv)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, (done.returncode, done.stderr[-500:])
    assert done.stderr.strip().splitlines() == ["archiver: interrupted"], done.stderr[-500:]


def test_a_signal_after_the_command_is_over_keeps_its_exit_code() -> None:
    """A signal landing while the process exits (the command's output in place) ends it with the
    command's own code, not by the signal (-2, no line: a KeyboardInterrupt with nothing to catch it)."""
    for sig in ("SIGINT", "SIGTERM", "SIGHUP"):
        code = (
            "import os, signal, archiver.cli as c\n"
            "c.main = lambda argv=None: print('done') or 3\n"
            f"code = c.entry()\nos.kill(os.getpid(), signal.{sig})\nraise SystemExit(code)\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (3, "done\n", ""), (sig, done)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["capture", "-o", "t", "--depth", "99999999999999999999999", "http://x.test/"],
         "archiver: capture --depth: must be at most 4611686018427387904, got 99999999999999999999999"
         " (see archiver capture --help)"),
        (["capture", "-o", "t", "--retries", "1" + "0" * 40, "http://x.test/"],
         "archiver: capture --retries: must be at most 4611686018427387904, got "
         "100000000000000000000000000... (see archiver capture --help)"),
        (["serve", "x", "--workers", "100000"],
         "archiver: serve --workers: must be at most 256, got 100000 (see archiver serve --help)"),
    ],
)  # fmt: skip
def test_numbers_too_large_for_what_keeps_them_are_usage_errors(argv: list[str], line: str) -> None:
    """A whole number beyond what SQLite or the system can hold is refused as a usage error (before,
    --depth 10**23 ended in an internal error from SQLite, --workers 100,000 from running out of
    file descriptors)."""
    result = run(*argv)
    assert (result.returncode, result.stderr) == (2, line + "\n"), result.stderr


def test_a_server_out_of_file_descriptors_is_one_line_not_a_bug(tmp_path: Path) -> None:
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))\n"
        "from archiver.cli import main\n"
        f"sys.exit(main(['serve', {str(MINI)!r}, '--workers', '64']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr[-800:]
    assert done.stderr.startswith("archiver: 127.0.0.1:") and "cannot listen" in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_a_command_under_nohup_keeps_sighup_ignored() -> None:
    """``nohup archiver …``: SIGHUP ignored stays ignored, through the command and its blocks
    (archiver.stopsignals); before, the command's handler took its place and a hang-up ended it."""
    argv = ["verify", str(MINI)]
    code = _SIGNAL_AT_START.format(module="readers", func="_cmd_verify", sig="SIGHUP", argv=argv)
    code = "import signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n" + code
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]


_SIGNAL_IN_IMPORT = """
import os, signal, sys
{before}
class Finder:
    def find_spec(self, name, path, target=None):
        if name == "archiver.cli":
            os.kill(os.getpid(), signal.{sig})
        return None
sys.meta_path.insert(0, Finder())
sys.argv = ["archiver", "verify", {tree!r}]
import archiver.start
sys.exit({call})
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_while_the_command_line_is_imported_is_an_interruption(sig: str) -> None:
    """archiver.start holds SIGTERM and SIGHUP as Ctrl-C from the command's first step: a signal
    while archiver.cli is imported exits 130 with one line (the default action killed the process,
    exit -15 or -1, with no line; SIGINT printed an import traceback)."""
    code = _SIGNAL_IN_IMPORT.format(before="", sig=sig, tree=str(MINI), call="archiver.start.run()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, "archiver: interrupted\n"), done.stderr[-500:]
    # the same without the first step: what every command did before
    direct = code.replace("archiver.start.run()", "__import__('archiver.cli').cli.entry()")
    before = subprocess.run([sys.executable, "-c", direct], capture_output=True, text=True, timeout=60)
    assert before.returncode != 130


def test_nohup_keeps_sighup_ignored_from_the_first_step() -> None:
    code = _SIGNAL_IN_IMPORT.format(
        before="signal.signal(signal.SIGHUP, signal.SIG_IGN)", sig="SIGHUP", tree=str(MINI),
        call="archiver.start.run()",
    )  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]


def test_an_interruption_python_wrapped_is_an_interruption() -> None:
    """A Ctrl-C landing while a class is made (its fields' ``__set_name__``) reaches the command as
    ``RuntimeError: Error calling __set_name__``, its cause the KeyboardInterrupt: exit 130 and one
    line, not an internal error (70, random-signal stress of pack)."""
    code = _SIGNAL_AT_START.replace(
        "    os.kill(os.getpid(), signal.{sig})\n",
        "    class Field:\n        def __set_name__(self, owner, name):\n"
        "            raise KeyboardInterrupt\n    type('C', (), {{'f': Field()}})\n",
    ).format(module="readers", func="_cmd_verify", sig="SIGINT", argv=["verify", str(MINI)])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, "archiver: interrupted\n"), done.stderr[-800:]


def test_an_interruption_out_of_an_exec_of_a_string_still_exits_130(tmp_path: Path) -> None:
    """CPython 3.11 marks a KeyboardInterrupt leaving the code of an ``exec()``/``eval()`` of a string
    as unhandled (a dataclass's methods, a namedtuple, a string annotation: made as a command imports
    its modules), and ``python -m`` then killed itself with SIGINT at exit, caught or not: exit -2
    after 'archiver: interrupted' (random-signal stress of extract: 15 of 200). archiver.start
    clears the mark when the command was interrupted. Run as a module, as ``python -m archiver``
    is (a script or ``-c`` ends through another path, which never looks at the mark)."""
    (tmp_path / "interrupted_in_exec.py").write_text(
        "import sys\n"
        f"sys.argv = ['archiver', 'verify', {str(MINI)!r}]\n"
        "import archiver.cli.readers as readers\n"
        "def interrupted(args):\n"
        "    exec('raise KeyboardInterrupt')\n"
        "readers._cmd_verify = interrupted\n"
        "import archiver.start\n"
        "sys.exit(archiver.start.run())\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parents[1])]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "interrupted_in_exec"], capture_output=True, text=True, timeout=60, env=env
    )
    assert (done.returncode, done.stderr) == (130, "archiver: interrupted\n"), (done.returncode, done.stderr)


def test_a_signal_while_datetime_is_first_imported_is_an_interruption_not_a_crash() -> None:
    """msgspec's C part takes datetime's C API as it is initialised, unchecked: a Ctrl-C landing
    while that imported datetime was swallowed and the import went on with the API pointer NULL,
    and archiver.tree's module-level Decoder then crashed the process (exit -11, 20 of 1,800 runs
    of extract stopped 20-120 ms in). archiver imports datetime just before msgspec: the Ctrl-C is
    a KeyboardInterrupt out of that import, and the next import works."""
    code = (
        "import os, signal, sys\n"
        "class Finder:\n"
        "    sent = False\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'datetime' and not Finder.sent:\n"
        "            Finder.sent = True\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Finder())\n"
        "try:\n"
        "    import archiver.tree\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "import archiver.tree\n"
        'print(archiver.tree._header_decoder.decode(b\'{"home": "h", "created": "c"}\').home)\n'
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "interrupted\nh\n"), (done.returncode, done.stderr[-800:])


def test_datetime_waits_for_msgspec_and_the_finder_then_leaves() -> None:
    """The import of datetime before msgspec's (archiver/__init__.py) is not made as archiver is
    imported: it would lengthen the time before a command holds its stop signals, and cost the
    commands that use neither. Once msgspec is imported, nothing of archiver's is left in
    sys.meta_path."""
    code = (
        "import sys\n"
        "before = list(sys.meta_path)\n"
        "import archiver\n"
        "print('datetime' in sys.modules)\n"
        "import msgspec\n"
        "print('datetime' in sys.modules, sys.meta_path == before)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "False\nTrue True\n"), done.stderr[-800:]


#: what ``import archiver.start`` may add to a bare interpreter's modules
_FIRST_STEP_MODULES = frozenset(
    "__future__ archiver archiver.start archiver.stopsignals signal enum functools _functools "
    "operator _operator keyword reprlib collections _collections itertools types heapq _heapq "
    "threading _weakrefset".split()
)


def test_the_first_step_imports_little_before_it_holds_the_stop_signals() -> None:
    """Until archiver.start has taken the handlers, a stop signal kills the process by its default
    action (exit -15 or -1, no line): that window is the interpreter's start plus what archiver.start
    imports. It imports signal and threading only (typing, with re, and contextlib were ~7 ms of it,
    a third of the window); the annotations are strings, and installed() is a plain class."""
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import archiver.start\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    new = set(done.stdout.split())
    assert {"typing", "re", "contextlib", "collections.abc"} & new == set(), sorted(new)
    assert new <= _FIRST_STEP_MODULES, sorted(new - _FIRST_STEP_MODULES)


def test_installed_gives_back_the_handlers_it_took() -> None:
    import signal

    from archiver import stopsignals

    def mine(signum: int, frame: object) -> None:
        pass

    before = signal.getsignal(signal.SIGTERM)
    with stopsignals.installed(mine, (signal.SIGTERM,)) as taken:
        assert taken == [signal.SIGTERM] and signal.getsignal(signal.SIGTERM) is mine
    assert signal.getsignal(signal.SIGTERM) is before
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # ignored (nohup): left alone
    try:
        with stopsignals.installed(mine, (signal.SIGHUP,)) as taken:
            assert taken == [] and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
