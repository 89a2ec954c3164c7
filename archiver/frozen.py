"""Immutable value classes without :mod:`dataclasses`' start-up cost.

Pure: no network, no filesystem, no clock.

A frozen dataclass compiles its generated methods from source (``exec``) when its module is
imported: the four a capture imported (the scope, robots.txt rules, the URL hygiene) were ~20 M
instructions of every ``archiver capture``'s start-up, and the ``dataclasses`` module ~4 M more. A
:class:`Frozen` subclass declares its ``__slots__``, the names that its equality, hash and repr use
(``_fields``, in the order of its ``__init__``'s parameters) and writes its ``__init__``, which
sets them with :meth:`Frozen._init`; it then behaves as the frozen dataclass did: equal to an
instance of the same class with equal fields, hashed on them, shown as ``Name(field=value, ...)``,
assignment and deletion refused with :class:`dataclasses.FrozenInstanceError`.
"""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn

__all__ = ["Frozen"]


class Frozen:
    """Base of an immutable slotted value class (see the module's docstring)."""

    __slots__ = ()
    #: the fields compared, hashed and shown, in the order of ``__init__``'s parameters
    _fields: ClassVar[tuple[str, ...]] = ()

    def _init(self, *values: Any) -> None:
        """Set the fields (``_fields``, in order) to ``values``: the one way to write them."""
        for name, value in zip(self._fields, values, strict=True):
            object.__setattr__(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{self.__class__.__qualname__}({shown})"

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return self.__class__, self._values()

    def __setattr__(self, name: str, value: object) -> NoReturn:
        _refuse(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        _refuse(f"cannot delete field {name!r}")


def _refuse(message: str) -> NoReturn:
    from dataclasses import FrozenInstanceError  # only on this error: not at start-up

    raise FrozenInstanceError(message)
