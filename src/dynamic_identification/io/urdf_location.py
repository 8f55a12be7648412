"""How a parameter file names its URDF, and how the name is resolved and checked.

A parameter file is moved between machines (identified on a laptop, used on the robot),
so it never names the URDF by an absolute path of the machine it was written on when it
can avoid it:

* ``package://<pkg>/<path>`` when the URDF lies in the share folder of an installed ROS
  package (``<prefix>/share/<pkg>/…``) **and** the reader's rules find it under that name in
  this environment: it resolves through ``AMENT_PREFIX_PATH`` (or ``ament_index_python``)
  on the machine that reads it, as ``package://`` URIs do for ``robot_state_publisher`` and
  RViz. A share folder the reader would not find — a pip wheel's ``cmeel.prefix/share/<pkg>``
  (``example-robot-data``), a workspace that is not sourced — is not named so: a file
  written here would not read back here;
* otherwise a path relative to the parameter file's folder, when the two share a folder
  below the file-system root (``../urdf/robot.urdf``): the pair moves together;
* otherwise the absolute path.

The file also stores ``robot.urdf_sha256``, the SHA-256 of the URDF's bytes. Whoever
loads the model checks it (:func:`resolve_urdf`): parameters identified on one URDF are
meaningless on an edited one (base parameters regroup the URDF's kinematics), so a
changed URDF is refused on one line naming both hashes. A file without the hash (written
before it existed) is loaded without the check.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from dynamic_identification.core.errors import DataError
from dynamic_identification.resources import PACKAGE, SOURCE_ROOT

PACKAGE_SCHEME = "package://"
"""Prefix of a URDF named inside a ROS package's share folder."""

HASH_SHOWN = 16
"""Hex digits of a SHA-256 shown in messages (enough to tell two files apart)."""


def urdf_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of the file's bytes, hex.

    Raises
    ------
    DataError
        When the file cannot be read.
    """
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as error:
        raise DataError(f"cannot read URDF {path}: {error.strerror or error}") from error


def _prefixes() -> list[Path]:
    return [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]


def package_uri(path: str | os.PathLike[str]) -> str | None:
    """``package://<pkg>/<rest>`` for a file inside a ROS package's share folder that this environment
    resolves back to the file (:func:`resolve_urdf`'s rules), else ``None``.

    A share folder is ``<prefix>/share/<pkg>`` of a prefix on ``AMENT_PREFIX_PATH``, or a
    ``…/share/<pkg>`` folder holding ``package.xml`` (what ``colcon build`` installs, and
    what a cmeel wheel such as ``example-robot-data`` ships). Only a name the reader finds
    is returned: the file must be the one ``package://`` resolves to, not merely look like
    part of a package (a wheel's share folder is not on ``AMENT_PREFIX_PATH``).
    """
    file = Path(path).resolve()
    for uri in _share_names(file):
        found, _ = _package_file(uri)
        if found is not None and found.resolve() == file:
            return uri
    return None


def _share_names(file: Path) -> list[str]:
    """``package://`` names a resolved ``file`` would have as part of a package's share folder, most likely first."""
    names = []
    for prefix in _prefixes():
        share = (prefix / "share").resolve()
        if file.is_relative_to(share):
            parts = file.relative_to(share).parts
            if len(parts) >= 2:
                names.append(PACKAGE_SCHEME + "/".join(parts))
    parts = file.parts
    for index in range(len(parts) - 3, -1, -1):
        if parts[index] == "share" and (Path(*parts[: index + 2]) / "package.xml").is_file():
            names.append(PACKAGE_SCHEME + "/".join(parts[index + 1 :]))
    return names


def urdf_name(path: str | os.PathLike[str], *, folder: str | os.PathLike[str] | None = None) -> str:
    """How a parameter file in ``folder`` names the URDF at ``path`` (module docstring).

    ``folder`` ``None`` (a parameter text published on a topic, with no file): the
    ``package://`` URI, or the absolute path.
    """
    file = Path(path).resolve()
    uri = package_uri(file)
    if uri is not None:
        return uri
    if folder is not None:
        base = Path(folder).resolve()
        common = Path(os.path.commonpath([file, base]))
        if common != Path(common.anchor):
            return Path(os.path.relpath(file, base)).as_posix()
    return str(file)


def _package_share(package: str) -> list[Path]:
    """Candidate share folders of ``package``: each prefix of ``AMENT_PREFIX_PATH``, the ament index,
    and for this package its source tree (an editable install without ``colcon build``)."""
    candidates = [prefix / "share" / package for prefix in _prefixes()]
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            candidates.append(Path(get_package_share_directory(package)))
        except (PackageNotFoundError, OSError, ValueError):
            pass
    except ImportError:
        pass
    if package == PACKAGE:
        candidates.append(SOURCE_ROOT)
    return candidates


def _package_file(uri: str) -> tuple[Path | None, list[Path]]:
    """The file a ``package://<package>/<rest>`` name resolves to here (``None``: none), and the share
    folders looked in (:func:`_package_share`)."""
    package, _, rest = uri[len(PACKAGE_SCHEME) :].partition("/")
    if not package or not rest:
        return None, []
    shares = _package_share(package)
    return next((share / rest for share in shares if (share / rest).is_file()), None), shares


def resolve_urdf(
    name: str,
    *,
    folder: str | os.PathLike[str] | None = None,
    sha256: str | None = None,
    source: str = "the parameter file",
) -> Path:
    """The URDF file a parameter file names, checked against its content hash.

    Parameters
    ----------
    name
        ``robot.urdf`` of the file: ``package://…``, a path relative to ``folder`` (or,
        for files written before names were relative, to the working directory), or
        an absolute path.
    folder
        The parameter file's folder; ``None`` for a parameter text (a topic).
    sha256
        ``robot.urdf_sha256`` of the file; ``None`` skips the check (older files).
    source
        Names the parameter file in messages.

    Raises
    ------
    DataError
        One line: the package or the file cannot be found, or the URDF's content
        changed since the identification (both hashes named).
    """
    if name.startswith(PACKAGE_SCHEME):
        package, _, rest = name[len(PACKAGE_SCHEME) :].partition("/")
        if not package or not rest:
            raise DataError(f"{source} names the URDF {name!r}: expected package://<package>/<path>")
        found, shares = _package_file(name)
        if found is None:
            where = "; ".join(str(share) for share in shares) or "no AMENT_PREFIX_PATH set"
            raise DataError(
                f"{source} names the URDF {name} but package {package!r} has no such file (looked in: {where});"
                " source the workspace that installs it (AMENT_PREFIX_PATH), or give the URDF's path instead"
                " (dynid predict --urdf, FeedforwardModel.from_yaml(urdf=…), the feedforward node's urdf)"
            )
        path = found
    else:
        given = Path(name)
        candidates = [given] if given.is_absolute() else [Path(folder) / given] if folder is not None else []
        if not given.is_absolute():
            candidates.append(given)
        path = next((candidate for candidate in candidates if candidate.is_file()), candidates[0])
        if not path.is_file():
            raise DataError(f"URDF file not found: {path} ({source} names it {name!r})")
    return checked_urdf(path, sha256=sha256, source=source)


def checked_urdf(path: str | os.PathLike[str], *, sha256: str | None, source: str) -> Path:
    """``path`` resolved, when its content is the URDF ``source`` was identified from.

    The base parameters regroup the standard ones through the URDF's kinematics, so a
    model is only valid with the URDF it was identified from; ``sha256`` (the file's
    ``robot.urdf_sha256``) is compared with the content, ``None`` skips the check.

    Raises
    ------
    DataError
        One line: the file is missing, or its content is not the one identified (both hashes named).
    """
    given = Path(path)
    if not given.is_file():
        raise DataError(f"URDF file not found: {given} (for {source})")
    resolved = given.resolve()
    if sha256 is not None:
        actual = urdf_sha256(resolved)
        if actual != sha256:
            raise DataError(
                f"the URDF {resolved} is not the one {source} was identified from (it changed since, or it is"
                f" another file): its sha256 is"
                f" {actual[:HASH_SHOWN]}…, the file records {sha256[:HASH_SHOWN]}…; identify again with this URDF"
                " or restore the one identified"
            )
    return resolved


__all__ = ["PACKAGE_SCHEME", "checked_urdf", "package_uri", "resolve_urdf", "urdf_name", "urdf_sha256"]
