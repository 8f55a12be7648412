"""The README's configuration table, generated from the settings schema.

One row per setting of :data:`~dynamic_identification.core.settings_schema.SETTINGS`: key,
who reads it, type, default, range or choices, unit and description. The README holds the
table between two marker lines; ``test/test_settings_table.py`` fails when it differs from
the schema::

    python -m dynamic_identification.settings_table                    # print the table
    python -m dynamic_identification.settings_table --write README.md  # replace it in the README
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from dynamic_identification.core.settings_schema import DYNID, DYNID_EXCITE, SETTINGS, Kind, Setting

BEGIN = "<!-- settings table: python -m dynamic_identification.settings_table --write README.md -->"
END = "<!-- end of the settings table -->"

_HEADER = (
    "| key | read by | type | default | range | unit | description |",
    "|---|---|---|---|---|---|---|",
)


def _default(item: Setting) -> str:
    value = item.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        return f"`[{', '.join(str(entry) if isinstance(entry, str) else item.number(entry) for entry in value)}]`"
    if isinstance(value, str):
        return f"`{value}`" if value else "empty"
    return f"`{item.number(float(value))}`"


def _readers(item: Setting) -> str:
    names = {DYNID: "`dynid`", DYNID_EXCITE: "`dynid excite`"}
    return ", ".join(names.get(node, node) for node in item.nodes)


def _range(item: Setting) -> str:
    if item.choices:
        return ", ".join(f"`{choice}`" for choice in item.choices)
    return item.range_text()


def _row(item: Setting) -> str:
    cells = (
        f"`{item.key}`",
        _readers(item),
        "double[] n×n" if item.kind is Kind.MATRIX else item.kind.value,
        _default(item),
        _range(item),
        item.unit,
        item.description,
    )
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def markdown() -> str:
    """The configuration table, with its marker lines."""
    return "\n".join([BEGIN, *_HEADER, *(_row(item) for item in SETTINGS), END])


def replace_table(text: str) -> str:
    """``text`` (the README) with the table between its markers replaced by :func:`markdown`.

    Raises
    ------
    ValueError
        When the markers are missing or out of order.
    """
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the README must hold the marker lines {BEGIN!r} and {END!r}, in that order")
    return text[:start] + markdown() + text[end + len(END) :]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table, or write it into the README named by ``--write``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="README whose table is replaced")
    arguments = parser.parse_args(argv)
    if arguments.write is None:
        print(markdown())
        return 0
    text = arguments.write.read_text(encoding="utf-8")
    arguments.write.write_text(replace_table(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
