"""Run a test's body in a fork of the test process, which has one thread (a fork copies only the
thread that calls it): for behaviour that depends on the process having no other thread (a search
index's pool, the markup guard's forked child), which an xdist worker that ran other tests before
(their servers' and pools' threads) may not be."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable


def in_one_thread(body: Callable[[], None]) -> None:
    """``body()`` in a fork of this process; its failure (the traceback) is raised here as one."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the fork
        code = 1
        try:
            os.close(read_end)
            body()
            code = 0
        except BaseException:
            os.write(write_end, traceback.format_exc().encode())
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        told = f.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, told or f"the fork ended with status {status}"
