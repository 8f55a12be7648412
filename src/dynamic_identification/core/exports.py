"""Lazy re-exports of a package's public names (PEP 562), so importing one module does not import its siblings.

A package's ``__init__`` re-exports the names users reach for (``from dynamic_identification.core.excitation
import optimise_fourier``). Imported eagerly, those re-exports make every import of any module of the package
import all of it: the recorder node, which needs the excitation *settings*, would load the optimiser and with it
``scipy.optimize`` and ``scipy.stats`` (0.5 s of a 1.3 s start). With :func:`lazy_exports` a name's module is
imported when the name is first read; the package lists its names once more under ``typing.TYPE_CHECKING`` for
type checkers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``, exporting ``exports`` (submodule -> names).

    Raises
    ------
    ValueError
        When two submodules export the same name.
    """
    owner: dict[str, str] = {}
    for module, names in exports.items():
        for name in names:
            if name in owner:
                raise ValueError(f"{package}: {name} is exported by both .{owner[name]} and .{module}")
            owner[name] = module

    def __getattr__(name: str) -> object:
        module = owner.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(owner)

    return __getattr__, __dir__, sorted(owner)
