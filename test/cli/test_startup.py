"""What ``dynid`` loads before it answers, the BLAS threads it runs its linear algebra on, and how it gives memory back.

The tests of what is loaded run ``dynid`` in a child process (a fresh interpreter: the test process
has imported everything already) and look at the modules it loaded or at its BLAS libraries.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dynamic_identification import cli

NUMERICS = ("numpy", "scipy", "pinocchio", "cvxpy", "matplotlib")
"""Libraries whose import takes a second or more of CPU together; ``dynid --help`` needs none of them."""


def _run(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("argv", [["--help"], ["identify", "--help"], ["identify", "--urdf", "x.urdf"]])
def test_help_and_a_refused_argument_load_no_numerics(argv: list[str]) -> None:
    code = (
        "import json, sys\n"
        "from dynamic_identification import cli\n"
        "try:\n"
        f"    cli.main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(json.dumps(sorted(name for name in {NUMERICS!r} if name in sys.modules)), file=sys.stderr)\n"
    )
    result = _run(code)
    loaded = json.loads(result.stderr.strip().splitlines()[-1])
    assert loaded == []


def test_the_library_interface_loads_the_excitation_planner_and_the_payload_estimator_only_for_their_verbs() -> None:
    # The planner and its Latin hypercube (scipy.stats: half a second of CPU with the planner's modules) were
    # imported by every verb through dynamic_identification.api, and so was the payload estimator (dynid payload).
    code = (
        "import json, sys\n"
        "import dynamic_identification.api\n"
        "names = ('dynamic_identification.core.excitation.plan', 'scipy.stats',"
        " 'dynamic_identification.core.identification.payload')\n"
        "print(json.dumps([name for name in names if name in sys.modules]), file=sys.stderr)\n"
    )
    result = _run(code)
    assert json.loads(result.stderr.strip().splitlines()[-1]) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
@pytest.mark.parametrize("fixed", [True, False])
def test_a_freed_array_goes_back_to_the_system_only_with_the_threshold_fixed(fixed: bool) -> None:
    # glibc raises its mmap threshold to the size of a freed mapped array (24 MB here), so the next smaller array came
    # from the heap and stayed resident when freed: an identification's peak memory grew by 130 MB (600 k samples).
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from dynamic_identification.memory import return_freed_memory\n"
        "def resident(): return int(open('/proc/self/statm').read().split()[1]) * 4096\n"
        f"if {fixed}:\n"
        "    assert return_freed_memory()\n"
        "first = np.ones(3 * 2**20); del first\n"
        "before = resident()\n"
        "second = np.ones(5 * 2**19); del second\n"
        "print((resident() - before) / 2**20, file=sys.stderr)\n"
    )
    kept_mb = float(_run(code).stderr.strip().splitlines()[-1])
    assert (kept_mb < 1.0) if fixed else (kept_mb > 10.0)


def test_the_verbs_that_hold_a_whole_recording_fix_the_threshold_and_the_stream_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixed: list[str] = []
    monkeypatch.setattr(cli, "return_freed_memory", lambda: fixed.append("fixed") or True)
    missing = ["--urdf", str(tmp_path / "arm.urdf"), "--data", str(tmp_path / "recording.csv")]
    assert cli.main(["identify", *missing, "--out", str(tmp_path / "parameters.yaml")]) == cli.BAD_INPUT
    assert fixed == ["fixed"]
    assert cli.main(["stream", *missing, "--out", str(tmp_path / "updates.jsonl")]) == cli.BAD_INPUT
    assert fixed == ["fixed"]


def test_dynid_runs_blas_on_one_thread_unless_the_user_chose_a_count() -> None:
    code = (
        "import json, sys\n"
        "from dynamic_identification import cli\n"
        "cli.main(['predict', '--params', 'missing.yaml', '--data', 'missing.csv', '--out', 'out.csv'])\n"
        "from threadpoolctl import threadpool_info\n"
        "print(json.dumps([i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas']))\n"
    )
    env_one = {key: value for key, value in os.environ.items() if not key.endswith("_NUM_THREADS")}
    threads = json.loads(_run(code, env_one).stdout.strip().splitlines()[-1])
    assert threads and all(count == 1 for count in threads)
    chosen = json.loads(_run(code, {**env_one, "OPENBLAS_NUM_THREADS": "2"}).stdout.strip().splitlines()[-1])
    assert chosen and all(count == 2 for count in chosen)
