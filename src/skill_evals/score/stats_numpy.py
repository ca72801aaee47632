"""Optional NumPy fast path for the bootstrap's resample sums (n = 1000, B = 10000).

NumPy is not a dependency: when it is importable (e.g. ``pip install 'skill-evals[fast]'``) the
B × n mulberry32 draws are computed as vectors, bit-exact with the pure-Python loop in stats.py,
which stays the reference and the fallback. Exactness holds because:

* the state before draw k (1-based) is ``seed + k × 0x6D2B79F5 mod 2**32``; uint64 arithmetic
  wraps mod 2**64, which preserves the value mod 2**32;
* uint32 multiplication wraps mod 2**32, which is exactly JavaScript's ``Math.imul`` bit pattern;
* the index ``floor(u / 2**32 × n)`` is ``(u × n) >> 32`` (exact for n < 2**21, as in stats.py);
* the sums stay integers (int64), and this path declines (returns None) when they could overflow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_INCREMENT = 0x6D2B79F5
_CHUNK_DRAWS = 1 << 21  # bounded memory: ~50 MB of temporaries per chunk


def resample_sums(numerators: Sequence[int], samples: int, seed: int) -> list[int] | None:
    """The B resample sums of ``numerators`` in draw order, or None when NumPy is unavailable
    or int64 could overflow (the caller then runs the pure-Python loop)."""
    try:
        import numpy as np
    except ImportError:
        return None
    n = len(numerators)
    biggest = max(abs(x) for x in numerators)
    if n == 0 or n >= 1 << 21 or biggest * n >= 1 << 62:
        return None
    values = np.asarray(numerators, dtype=np.int64)
    sums = np.empty(samples, dtype=np.int64)
    rows_per_chunk = max(1, _CHUNK_DRAWS // n)
    for first_row in range(0, samples, rows_per_chunk):
        rows = min(rows_per_chunk, samples - first_row)
        index = _indices(first_row, rows, n, seed)
        sums[first_row : first_row + rows] = values[index].reshape(rows, n).sum(axis=1)
    return [int(x) for x in sums.tolist()]


def _indices(first_row: int, rows: int, n: int, seed: int) -> Any:
    """The unit indices of resamples ``first_row`` .. ``first_row + rows − 1`` (rows × n, flat)."""
    import numpy as np

    k = np.arange(first_row * n + 1, (first_row + rows) * n + 1, dtype=np.uint64)
    s = ((k * np.uint64(_INCREMENT) + np.uint64(seed)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    t = (s ^ (s >> np.uint32(15))) * (s | np.uint32(1))
    t = t ^ (t + (t ^ (t >> np.uint32(7))) * (t | np.uint32(61)))
    u = (t ^ (t >> np.uint32(14))).astype(np.uint64)
    return ((u * np.uint64(n)) >> np.uint64(32)).astype(np.intp)


def resample_sums_many(
    vectors: Sequence[Sequence[int]], samples: int, seed: int
) -> list[tuple[int, ...]] | None:
    """Per resample, the sums of each of the k ``vectors`` (all of one length n) over the
    resample's units — the same draws as :func:`resample_sums`. None when NumPy is
    unavailable or int64 could overflow."""
    try:
        import numpy as np
    except ImportError:
        return None
    k = len(vectors)
    n = len(vectors[0]) if k else 0
    biggest = max((abs(x) for vector in vectors for x in vector), default=0)
    if k == 0 or n == 0 or n >= 1 << 21 or biggest * n >= 1 << 62:
        return None
    values = np.asarray(vectors, dtype=np.int64).T  # n × k
    sums = np.empty((samples, k), dtype=np.int64)
    rows_per_chunk = max(1, _CHUNK_DRAWS // (n * k))
    for first_row in range(0, samples, rows_per_chunk):
        rows = min(rows_per_chunk, samples - first_row)
        index = _indices(first_row, rows, n, seed)
        sums[first_row : first_row + rows] = values[index].reshape(rows, n, k).sum(axis=1)
    return [tuple(int(x) for x in row) for row in sums.tolist()]
