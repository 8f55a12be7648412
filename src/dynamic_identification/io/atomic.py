"""Atomic file writes, and the checks an output path passes before any work is done.

Every file the package writes as a whole (parameter YAML, predicted torques,
trajectories, ``dynid stream`` updates) goes through :func:`atomic_output`: the text
goes to a temporary file next to the target (``.NAME.PID.RANDOM.tmp``), which is
flushed, synced and renamed over the target, so a reader sees the old file or the
new one, never half of either, and a symlink at the target is replaced, not followed.
An interrupted write (an exception, SIGINT, SIGTERM in ``dynid``) removes its
temporary file; one left by a killed process (SIGKILL, a power loss) is removed by
the next write of the same target once its process is gone.

:func:`check_output_path` refuses, with one line naming the option, an output that
is empty, a directory, in a missing or read-only folder, or one of the inputs.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from dynamic_identification.core.errors import DataError

_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]+\.tmp$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def remove_stale_temporaries(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files of ``target`` left by processes that no longer exist; the ones removed."""
    file = Path(target)
    removed = []
    with contextlib.suppress(OSError):
        for candidate in file.parent.glob(f".{file.name}.*.tmp"):
            match = _TEMPORARY.match(candidate.name)
            if match is None or match["name"] != file.name or _alive(int(match["pid"])):
                continue
            with contextlib.suppress(OSError):
                candidate.unlink()
                removed.append(candidate)
    return removed


def _mode_for(target: Path) -> int:
    if target.exists():
        return target.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """A text stream whose content replaces ``path`` atomically when the ``with`` block ends without error."""
    target = Path(path)
    remove_stale_temporaries(target)
    descriptor, name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    temporary = Path(name)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, _mode_for(target))
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_output`."""
    with atomic_output(path) as stream:
        stream.write(text)


def check_output_path(
    path: str | os.PathLike[str] | None, *, option: str = "--out", inputs: Iterable[str | os.PathLike[str] | None] = ()
) -> Path:
    """``path`` when a file can be written there without destroying an input; else ``DataError``.

    Refused: an empty path, a directory, a path whose folder is missing or not
    writable, and a path that is (or links to) one of ``inputs`` (a recording, a
    URDF, a configuration, a parameter file). An existing other file is replaced.
    """
    text = "" if path is None else os.fspath(path)
    if not text.strip():
        raise DataError(f"{option} is empty: give the file to write")
    out = Path(text)
    if out.is_dir():
        raise DataError(f"{option} {out} is a directory: give the file to write in it")
    folder = out.parent
    if not folder.is_dir():
        raise DataError(f"{option} {out}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DataError(f"{option} {out}: the folder {folder} is not writable")
    resolved = out.resolve()
    for given in inputs:
        if given is None:
            continue
        source = Path(given)
        same = source.resolve() == resolved
        if not same and out.exists() and source.exists():
            with contextlib.suppress(OSError):
                same = os.path.samefile(out, source)
        if same:
            raise DataError(f"{option} {out} is an input of this command ({source}): refusing to overwrite it")
        if source.is_dir() and source.resolve() in resolved.parents:
            raise DataError(f"{option} {out} lies inside the input directory {source}: refusing to write there")
    return out
