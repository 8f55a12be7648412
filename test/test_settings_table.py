"""The README's configuration table is the settings schema's: one definition of every setting."""

from __future__ import annotations

from pathlib import Path

from dynamic_identification.core.settings_schema import SETTINGS
from dynamic_identification.settings_table import BEGIN, END, markdown, replace_table

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_table_is_the_schema() -> None:
    text = README.read_text(encoding="utf-8")
    table = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert table == markdown(), (
        "README.md's configuration table differs from core/settings_schema.py:"
        " run `python -m dynamic_identification.settings_table --write README.md`"
    )


def test_the_table_has_one_row_per_setting() -> None:
    rows = [line for line in markdown().splitlines() if line.startswith("| `")]
    assert len(rows) == len(SETTINGS)


def test_writing_replaces_only_the_table() -> None:
    text = f"before\n{BEGIN}\n| stale |\n{END}\nafter\n"
    assert replace_table(text) == f"before\n{markdown()}\nafter\n"
