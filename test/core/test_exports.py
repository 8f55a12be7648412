"""The lazy packages export what they list for type checkers, and importing one of their modules imports no other."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from dynamic_identification.core.exports import lazy_exports

LAZY_PACKAGES = ("dynamic_identification.core.excitation", "dynamic_identification.core.identification")


def _type_checking_imports(package: str) -> dict[str, str]:
    """Name -> submodule of the ``if TYPE_CHECKING:`` imports of ``package``'s ``__init__``."""
    source = Path(importlib.import_module(package).__file__ or "").read_text(encoding="utf-8")
    names: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module is not None
                names.update({alias.name: statement.module for alias in statement.names})
    return names


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_name_a_type_checker_sees_is_exported_from_its_module(package: str) -> None:
    module = importlib.import_module(package)
    listed = _type_checking_imports(package)
    assert sorted(listed) == module.__all__ == dir(module)
    for name, submodule in listed.items():
        assert getattr(module, name) is getattr(importlib.import_module(submodule), name), name


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    with pytest.raises(AttributeError, match="core.excitation' has no attribute 'optimize'"):
        importlib.import_module("dynamic_identification.core.excitation").optimize  # noqa: B018


def test_a_name_exported_by_two_modules_is_refused() -> None:
    with pytest.raises(ValueError, match="pkg: x is exported by both .a and .b"):
        lazy_exports("pkg", {"a": ("x",), "b": ("x", "y")})


def test_the_excitation_settings_do_not_import_the_optimiser() -> None:
    # The recorder and sim_robot read the excitation settings through io.config; the optimiser is the excite verb's.
    code = (
        "import sys, dynamic_identification.core.excitation.settings;"
        " print('dynamic_identification.core.excitation.optimisation' in sys.modules)"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert completed.stdout.strip() == "False"
