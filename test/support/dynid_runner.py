"""``dynid`` run in the test process, as the CLI tests call it."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from dynamic_identification import cli


def dynid(*argv: str | Path) -> tuple[int, str, str]:
    """Run ``dynid`` in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(arg) for arg in argv])
    return code, out.getvalue(), err.getvalue()
