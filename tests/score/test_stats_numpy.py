"""The optional NumPy bootstrap path is bit-exact with the pure-Python reference loop."""

from __future__ import annotations

import random
import sys
from fractions import Fraction

import pytest

from skill_evals.score import stats_numpy
from skill_evals.score.stats import bootstrap_interval

pytest.importorskip("numpy")


@pytest.mark.parametrize("case", range(25))
def test_numpy_path_equals_the_reference(case: int) -> None:
    rng = random.Random(case)
    n = rng.choice([1, 2, 3, 10, 37, 128])
    samples = rng.choice([1000, 1001, 1999, 2048])
    seed = rng.choice([0, 42, 2**32 - 1, rng.randrange(2**32)])
    values = [Fraction(rng.randint(-6, 6), rng.choice([1, 2, 3, 6])) for _ in range(n)]
    fast = bootstrap_interval(values, samples, seed, accelerate=True)
    reference = bootstrap_interval(values, samples, seed, accelerate=False)
    assert fast == reference


def test_chunk_boundaries_do_not_change_the_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    numerators = [3, -1, 0, 2, 5, -4, 1]
    whole = stats_numpy.resample_sums(numerators, 1000, 7)
    monkeypatch.setattr(stats_numpy, "_CHUNK_DRAWS", 10)  # 1 row per chunk
    assert stats_numpy.resample_sums(numerators, 1000, 7) == whole


def test_declines_when_int64_could_overflow() -> None:
    assert stats_numpy.resample_sums([2**61, 1], 1000, 42) is None


def test_falls_back_without_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy → ImportError
    assert stats_numpy.resample_sums([1, 2, 3], 1000, 42) is None
    values = [1, 0, -1, 1, 1, 0, 0, 1, -1, 1]
    assert bootstrap_interval(values, 1000, 42) == bootstrap_interval(
        values, 1000, 42, accelerate=False
    )
