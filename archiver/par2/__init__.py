"""Forward error correction with PAR2 2.0: FEC tails for gwtar (and any file), sidecars for ZIM.

Spec: ``formats/fec.md``. Modules: ``packets`` (pure: the PAR2 packets), ``layout`` (pure: the plan
and the canonical tail), ``engine`` (the par2 program), ``scan`` and ``build`` (reading and writing
PAR2 data), ``fec`` (add and check), ``repair``, ``sidecar`` (ZIM), ``results`` (what they return).

    >>> from archiver.par2 import add_fec, check, repair
    >>> add_fec(path, total_archive_size)            # doctest: +SKIP
    >>> check(path).ok                               # doctest: +SKIP
    >>> repair(path).exit_code                       # doctest: +SKIP
"""

from __future__ import annotations

from archiver.par2.engine import Engine, find_engine
from archiver.par2.fec import add_fec, append_fec, check, check_tail, find_protected_length, gwtar_total_size
from archiver.par2.layout import DEFAULT_REDUNDANCY, Plan, plan
from archiver.par2.repair import repair, repair_main
from archiver.par2.results import DamagedSlice, FecReport, FecResult, RepairResult, TailDamage
from archiver.par2.sidecar import add_sidecar, sidecar_files

__all__ = [
    "DEFAULT_REDUNDANCY",
    "DamagedSlice",
    "Engine",
    "FecReport",
    "FecResult",
    "Plan",
    "RepairResult",
    "TailDamage",
    "add_fec",
    "add_sidecar",
    "append_fec",
    "check",
    "check_tail",
    "find_engine",
    "find_protected_length",
    "gwtar_total_size",
    "plan",
    "repair",
    "repair_main",
    "sidecar_files",
]
