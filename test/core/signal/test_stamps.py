"""What a stream makes of each stamp (:mod:`~dynamic_identification.core.signal.stamps`)."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_array_equal

from dynamic_identification.core.signal.stamps import Stamp, accepted_samples, classify_stamp, stream_chunks


def test_a_repeated_stamp_is_a_sample_when_its_values_are_new_and_a_duplicate_when_they_repeat() -> None:
    time = np.array([0.0, 0.001, 0.001, 0.001, 0.0005, 0.002, 0.002])
    q = np.array([0.0, 0.1, 0.2, 0.2, 0.3, 0.4, 0.5])
    # Row 2: new positions under row 1's stamp (a sample); row 3 repeats row 2 (a message sent twice); row 4 is late;
    # row 6 is stamped again after row 5.
    assert_array_equal(accepted_samples(time, q), [True, True, True, False, False, True, True])
    assert_array_equal(accepted_samples(time), [True, True, False, False, False, True, False])
    # After a sample accepted before: its stamp with other positions is a sample, with the same a duplicate.
    assert_array_equal(accepted_samples(time[:2], q[:2], latest_s=0.0, latest_values=np.array([0.05])), [True, True])
    assert_array_equal(accepted_samples(time[:2], q[:2], latest_s=0.0, latest_values=np.array([0.0])), [False, True])


def test_the_rows_of_a_recording_are_judged_as_a_stream_judges_each_sample() -> None:
    rng = np.random.default_rng(5)
    time = np.round(np.cumsum(rng.choice([-2e-3, 0.0, 1e-3, 1e-3, 1e-3], 400)), 6)
    q = np.where(rng.random(400) < 0.5, 0.0, rng.normal(size=400))
    latest, latest_q, one_by_one = -np.inf, None, []
    for stamp, position in zip(time.tolist(), q.tolist(), strict=True):
        kind = classify_stamp(stamp, latest, new_values=latest_q is not None and position != latest_q)
        one_by_one.append(kind in (Stamp.NEW, Stamp.AGAIN))
        if one_by_one[-1]:
            latest, latest_q = stamp, position
    assert not any(classify_stamp(t, latest) is Stamp.RESTART for t in time)  # one run: no jump back by 1 s
    assert_array_equal(accepted_samples(time, q), one_by_one)
    assert_array_equal(np.concatenate([chunk for chunk, _ in stream_chunks(time, 0.05, q)]), np.flatnonzero(one_by_one))
