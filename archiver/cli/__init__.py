"""The ``archiver`` command line: one thin function per command (parse, call the library, print).

Exit codes (also in README.md): 0 success; 1 an archive, tree or manifest that is invalid, damaged
or hostile, not repairable, or another archiver error; 2 a usage error, a bad URL, an unreadable file,
or no FEC data; 4 a capture failure; 5 a missing outside program; 70 a bug (with a traceback);
130 interrupted. Without ``--debug`` an error is one line on stderr: ``archiver: <input>: <what>``.

The package, a module a job: ``parser`` (the argparse parser, archiver's usage errors, the argument
types), the commands by what they do (``capture``: capture and merge; ``pack``: gwtar, ZIM and WACZ;
``readers``: verify, ls, extract, repair; ``serve``: serve, demo, map) and ``output`` (printing and
writing helpers the commands share). A command's module is imported when the command runs, so
``archiver --help`` imports none of them, nor the capture, zim or warc packages behind them.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

from archiver import __version__, stopsignals
from archiver.cli import stdout
from archiver.cli.parser import _parser, command_of
from archiver.errors import EXIT_BUG, ArchiverError, out_of_descriptors

if TYPE_CHECKING:
    from archiver.cli.capture import capture_options as capture_options

__all__ = ["entry", "main"]


def __getattr__(name: str) -> Any:
    """``archiver.cli.capture_options``, from its command's module on first use (not at start-up)."""
    if name == "capture_options":
        from archiver.cli import capture

        return capture.capture_options
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The collector's first threshold in a command's process (Python's default: 700 allocations, as
#: :data:`archiver.serve.server.GC_THRESHOLD` for a serving one).
GC_THRESHOLD = 50_000


def entry() -> int:
    """The ``archiver`` command (and ``python -m archiver``): :func:`main`, then what the process
    still holds is frozen out of the garbage collector, since the process ends next: the
    interpreter's last collection at exit walked every object a run left alive (a quarter of an
    unchanged re-capture's CPU, py-spy), for memory the exit gives back anyway. Nothing is skipped:
    atexit handlers, finalizers and buffered output run as before. The collector's first threshold
    is :data:`GC_THRESHOLD` for the whole run: a command imports its modules first (some 200, every
    one a burst of objects that live to the end), and at 700 allocations the collector walked them
    again and again, ~26 M instructions of an unchanged re-capture's 1,278 M (2 %), for no garbage."""
    _, second, third = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, second, third)
    code = main()
    _exit_on_signals(code)
    gc.freeze()
    return code


def _exit_on_signals(code: int) -> None:
    """The command is over and ``code`` is its outcome: a SIGINT, SIGTERM or SIGHUP from now on
    (while the interpreter exits: its threads joined, atexit handlers) ends the process at once with
    that code, output flushed. Before, it raised a KeyboardInterrupt no code was left to catch and
    the process died of the signal (exit -2) after `pack` had put its whole output in place."""

    def handler(signum: int, frame: FrameType | None) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)

    stopsignals.take(handler, (signal.SIGINT, *stopsignals.STOP_SIGNALS))  # not one ignored (nohup)


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP end a command as Ctrl-C does (exit 130, ``archiver: interrupted``,
    README's exit codes), wherever they land: before a command's own interruptible block (the
    imports, the opening of its inputs) their default action killed the process (exit -15, no
    line). Blocks that handle signals themselves (safefs.interruptible and deferred, capture's
    loop, serve's server) put their own handlers in place and this one back; a signal the process
    was told to ignore (nohup) stays ignored (:mod:`archiver.stopsignals`). Main thread only."""
    with stopsignals.installed(stopsignals.as_interrupt, stopsignals.STOP_SIGNALS):
        yield


def _limit_said(e: ArchiverError) -> str:
    """``e``'s line; when it came of the limit on open files (``cannot read: Too many open files``),
    followed by what that limit is and how to raise it."""
    if not out_of_descriptors(e):
        return str(e)
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return str(e)
    return f"{e}; the process may hold {soft:,} open files at once (raise it with ulimit -n)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    words = sys.argv[1:] if argv is None else argv
    args = _parser(command_of(words)).parse_args(words)
    stdout.guarded()  # a refused write to stdout: one line, exit 1 (cli/stdout.py)
    try:
        with _signals_interrupt():
            code = int(args.func(args))
            sys.stdout.flush()  # what is still buffered fails here, not at the interpreter's exit
            return code
    except ArchiverError as e:
        if args.debug:
            traceback.print_exc()
        print(f"archiver: {_limit_said(e)}", file=sys.stderr)
        return e.exit_code
    except BrokenPipeError:
        return 0
    except (KeyboardInterrupt, Exception) as e:
        if stopsignals.interrupted(e):  # or one Python wrapped (a class made as it landed)
            print("archiver: interrupted", file=sys.stderr)
            return 130
        traceback.print_exc()
        print(f"archiver {__version__}: internal error, a bug: please report it with the traceback above",
              file=sys.stderr)  # fmt: skip
        return EXIT_BUG
