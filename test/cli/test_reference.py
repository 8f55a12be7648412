"""``dynid`` reproduces, to 1e-9, what it wrote for a fixed recording before the identification seam.

``test/data/reference/`` holds a deterministic simulated recording of the shipped arm and
the outputs ``dynid identify`` (default configuration, sensitivity and essential
reductions, every other regression model), ``dynid predict`` and ``dynid stream`` wrote
for it when the reference was made (``generate.py`` there). Every number they hold must
come out again: parameter values and ``%σ``, quality figures, removed names, predicted
torques, stream updates (the wall time of an update aside). New outputs may say more than
the reference; nothing the reference said may change.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from numpy.testing import assert_allclose

from dynamic_identification import cli

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference"
INPUTS = REFERENCE / "inputs"
OUTPUTS = REFERENCE / "outputs"
REPO_ROOT = Path(__file__).resolve().parents[2]
URDF = REPO_ROOT / "urdf" / "dynid_arm6.urdf"
CONFIG = INPUTS / "config_default.yaml"
"""The shipped configuration with the stamps as recorded, the unconstrained estimate and the σ of independent
residuals: the reference predates the recovery of jittered stamps, the physically consistent estimate and the HAC σ
by default, deliberate changes of the defaults (bench/bench_realistic.py measures them;
test/core/identification/test_physical_consistency.py and test/core/estimation/test_uncertainty.py test them)."""
DATA = INPUTS / "recording.csv"
RTOL = 1e-9
ATOL = 1e-12
PREDICT_STEP = 8
"""The reference keeps every 8th row of the predicted torques (the first included)."""

IGNORED = {"stamp", "urdf", "seconds"}
"""Wall-clock stamps, the URDF path (where the file was written) and update timings."""

IDENTIFY_CASES = {
    "identify_default": ["--config", CONFIG],
    "identify_sensitivity": ["--config", INPUTS / "config_sensitivity.yaml"],
    "identify_essential": ["--config", INPUTS / "config_essential.yaml"],
    **{
        f"identify_{model}": ["--config", CONFIG, "--model", model, "--accept-implausible"]
        for model in ("filtered_dynamic", "supplied_energy", "power", "filtered_power")
    },
}


def dynid(*argv: str | Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(arg) for arg in argv])
    assert code == 0, err.getvalue()


def assert_same(actual: Any, expected: Any, where: str = "") -> None:
    """Everything in ``expected`` is in ``actual``: numbers to ``RTOL``, the rest equal."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        for key, value in expected.items():
            if key in IGNORED:
                continue
            assert key in actual, f"{where}.{key} is missing"
            assert_same(actual[key], value, f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for k, (got, want) in enumerate(zip(actual, expected, strict=True)):
            assert_same(got, want, f"{where}[{k}]")
    elif isinstance(expected, float) and not isinstance(expected, bool):
        assert isinstance(actual, int | float), where
        if math.isinf(expected):
            assert actual == expected, where
        else:
            assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=where)
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reference")


@pytest.mark.parametrize("case", sorted(IDENTIFY_CASES))
def test_identify_writes_the_reference_parameters(case: str, folder: Path) -> None:
    out = folder / f"{case}.yaml"
    dynid("identify", "--urdf", URDF, "--data", DATA, "--out", out, *IDENTIFY_CASES[case])
    assert_same(yaml.safe_load(out.read_text(encoding="utf-8")), _yaml(OUTPUTS / f"{case}.yaml"), case)


def test_predict_writes_the_reference_torques(folder: Path) -> None:
    params, out = folder / "params.yaml", folder / "predict.csv"
    dynid("identify", "--urdf", URDF, "--data", DATA, "--config", CONFIG, "--out", params)
    dynid("predict", "--params", params, "--data", DATA, "--config", CONFIG, "--out", out)
    header, rows = _table(out)
    reference_header, reference_rows = _table(OUTPUTS / "predict_every_8th_row.csv")
    assert header == reference_header
    # One row per recorded row now; the reference holds the rows with a prediction.
    assert rows.shape[0] == 12000
    predicted = rows[np.isfinite(rows).all(axis=1)]
    assert predicted.shape[0] == 11798
    assert_allclose(predicted[::PREDICT_STEP], reference_rows, rtol=RTOL, atol=ATOL)


def test_stream_writes_the_reference_updates(folder: Path) -> None:
    out, params = folder / "stream.jsonl", folder / "stream_params.yaml"
    dynid("stream", "--urdf", URDF, "--data", DATA, "--config", CONFIG, "--out", out, "--params-out", params)
    assert_same(_lines(out), _lines(OUTPUTS / "stream.jsonl"), "stream")
    assert_same(_yaml(params), _yaml(OUTPUTS / "stream_params.yaml"), "stream_params")


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _table(path: Path) -> tuple[Sequence[str], np.ndarray]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines[0].split(","), np.array([[float(cell) for cell in line.split(",")] for line in lines[1:]])
