"""Hamming distances of many fingerprint pairs at once (numpy), for the quality benchmarks."""
import numpy as np

_LUT = np.array([bin(i).count("1") for i in range(1 << 16)], dtype=np.uint8)


def popcount(x):
    """Set bits of each element of a uint64 array (as int32, so sums do not wrap)."""
    v = x.view(np.uint16).reshape(-1, 4)
    return _LUT[v[:, 0]].astype(np.int32) + _LUT[v[:, 1]] + _LUT[v[:, 2]] + _LUT[v[:, 3]]


def min_distances(fp, a, b, bs):
    """For each b in bs, min over seeds 0..b-1 of the distance between fp[a] and fp[b] (fp: rows
    of fingerprints, one column a seed): a set's distance, as simhash_set_distance."""
    out, cur = {}, None
    for s in range(max(bs)):
        col = np.ascontiguousarray(fp[:, s])
        d = popcount(col[a] ^ col[b])
        cur = d if cur is None else np.minimum(cur, d)
        if s + 1 in bs:
            out[s + 1] = cur.copy()
    return out
