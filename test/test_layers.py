"""The package's layers import downwards only, and no module imports itself back through others.

Layers, top to bottom (DESIGN.md): ``cli``, ``demo`` → ``api`` → ``nodes`` → ``io`` → ``core``.
``testing`` (simulated robot logs and ground truths for tests and benches) sits beside the
product: it may use ``core`` and ``io``, and no product module imports it.
``core`` imports nothing from ``io``, ``nodes``, ``api``, ``cli`` or ``demo`` and no ROS
package; ``io`` nothing from ``nodes``, ``api``, ``cli`` or ``demo``; ``nodes`` nothing from
``api``, ``cli`` or ``demo``. Inside the core, estimation (least squares, normal equations,
reduction, quality) does not import the identification seam built on it. Every import
counts, also one inside a function.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from pathlib import Path

import pytest

PACKAGE = "dynamic_identification"
SOURCE = Path(__file__).resolve().parents[1] / "src" / PACKAGE
ROS_PACKAGES = (
    "rclpy",
    "sensor_msgs",
    "std_msgs",
    "trajectory_msgs",
    "std_srvs",
    "diagnostic_msgs",
    "builtin_interfaces",
)

FORBIDDEN = {
    "core": ("io", "nodes", "api", "cli", "demo", "testing"),
    "io": ("nodes", "api", "cli", "demo", "testing"),
    "nodes": ("api", "cli", "demo", "testing"),
    "api": ("testing",),
    "cli": ("testing",),
    "demo": ("testing",),
    "testing": ("nodes", "api", "cli", "demo"),
    "core.estimation": ("core.identification",),
}
"""Per (sub)package: the (sub)packages of ``dynamic_identification`` it must not import."""


def _modules() -> dict[str, Path]:
    """Dotted module name → file, for every module of the package."""
    modules = {}
    for path in SOURCE.rglob("*.py"):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


@functools.cache
def _imports(path: Path) -> tuple[str, ...]:
    """Every module ``path`` imports (absolute names; ``from a import b`` gives ``a`` and ``a.b``), parsed once."""
    imported: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.append(node.module)
            imported.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return tuple(imported)


MODULES = _modules()
GRAPH = {name: sorted({i for i in _imports(path) if i in MODULES and i != name}) for name, path in MODULES.items()}


def _inside(module: str, package: str) -> bool:
    full = f"{PACKAGE}.{package}"
    return module == full or module.startswith(full + ".")


def _offending(layer: str, forbidden: Callable[[str], bool]) -> list[str]:
    """``module imports name`` for every import of a module of ``layer`` that ``forbidden`` refuses."""
    return [
        f"{module} imports {imported}"
        for module, path in MODULES.items()
        if _inside(module, layer)
        for imported in _imports(path)
        if forbidden(imported)
    ]


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(layer: str) -> None:
    offending = _offending(layer, lambda imported: any(_inside(imported, above) for above in FORBIDDEN[layer]))
    assert not offending, offending


@pytest.mark.parametrize("layer", ["core", "io"])
def test_core_and_io_import_no_ros_package(layer: str) -> None:
    offending = _offending(layer, lambda imported: imported.split(".")[0] in ROS_PACKAGES)
    assert not offending, offending


def test_no_module_imports_itself_back_through_others() -> None:
    """Tarjan's strongly connected components of the module graph are all single modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in GRAPH[module]:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    # A package's __init__ re-exporting its submodules is not a circle: drop package → own submodule edges.
    real = [cycle for cycle in cycles if not _only_package_reexports(cycle)]
    assert not real, real


def _only_package_reexports(cycle: list[str]) -> bool:
    """Whether a cycle closes only through a package and the submodules its ``__init__`` re-exports."""
    members = set(cycle)
    for module in cycle:
        for imported in GRAPH[module]:
            if imported in members and not (imported.startswith(module + ".") or module.startswith(imported + ".")):
                return False
    return True


def test_only_the_command_line_draws_progress_bars() -> None:
    """The core reports progress through a callback (``core.progress``); tqdm, a display, is the CLI adapter's."""
    drawing = sorted(
        module for module, path in MODULES.items() if any(i.split(".")[0] == "tqdm" for i in _imports(path))
    )
    assert drawing == [f"{PACKAGE}.progress_display"], drawing
