//! Where a value starts in a sorted run of 64-bit keys read one by one (a B-tree leaf page).
//!
//! A lookup at k = 7 starts a range on a leaf page 68 times, and on a page that is not in the
//! CPU's cache each key read is two cache misses (the line pointer, then the tuple). A binary
//! search of a 360-entry page is nine such reads in a row, one after the other: in a profile of
//! k = 7 at 10M rows it was a fifth of the lookup. The keys of a permuted block index are
//! fingerprints, spread evenly, so interpolating between two known keys lands within a few
//! entries of the answer: three or four reads instead of nine. Keys that repeat (a covering
//! index's block values) or bunch up leave interpolation no better than halving; a few steps
//! of it are tried, then the search halves as before, so it is never much worse than binary.

/// Interpolation steps tried before halving.
const INTERPOLATIONS: usize = 3;
/// Entries walked one by one from an interpolated guess (neighbouring entries share cache
/// lines), and the window below which the search only walks.
const WALK: usize = 8;

/// The first position in `lo..hi` whose key is not below `value`, or `hi` when there is none.
/// `key(i)` reads position i; keys ascend, and None (a NULL key) sorts after every value.
pub fn lower_bound<F: FnMut(usize) -> Option<i64>>(mut lo: usize, mut hi: usize, value: i64, mut key: F) -> usize {
    if lo >= hi {
        return lo;
    }
    // The keys just outside the window lo..hi: `below` at lo - 1 (< value), `above` at hi
    // (>= value; None for a NULL key).
    let mut below = match key(lo) {
        Some(k) if k < value => k,
        _ => return lo,
    };
    lo += 1;
    if lo >= hi {
        return lo;
    }
    let mut above = match key(hi - 1) {
        Some(k) if k < value => return hi,
        other => other,
    };
    hi -= 1;
    let mut interpolations = 0;
    while hi - lo > WALK {
        // Between position lo - 1 (key below) and hi (key a), the value sits at the fraction
        // (value - below) / (a - below) of the way. A NULL bound, or one equal to the value
        // (repeated keys), says nothing about where the value starts: halve instead.
        let guess = above.filter(|&a| a > value && interpolations < INTERPOLATIONS).map(|a| {
            interpolations += 1;
            let span = i128::from(a) - i128::from(below);
            let step = (i128::from(value) - i128::from(below)) * (hi - lo + 1) as i128 / span;
            (lo - 1 + step as usize).clamp(lo, hi - 1)
        });
        let pos = guess.unwrap_or(lo + (hi - lo) / 2);
        match key(pos) {
            Some(k) if k < value => {
                below = k;
                lo = pos + 1;
                // A guess is usually a few entries short: walk on up from it.
                for _ in 0..WALK * usize::from(guess.is_some()) {
                    if lo >= hi {
                        return lo;
                    }
                    match key(lo) {
                        Some(k) if k < value => {
                            below = k;
                            lo += 1;
                        }
                        _ => return lo,
                    }
                }
            }
            other => {
                above = other;
                hi = pos;
                // Or a few entries past: walk back down from it.
                for _ in 0..WALK * usize::from(guess.is_some()) {
                    if hi <= lo {
                        return hi;
                    }
                    match key(hi - 1) {
                        Some(k) if k < value => return hi,
                        other => {
                            above = other;
                            hi -= 1;
                        }
                    }
                }
            }
        }
    }
    while lo < hi && key(lo).is_some_and(|k| k < value) {
        lo += 1;
    }
    lo
}

/// Unsigned key ranges (`low..=high`, as `Block::permuted_range` gives them) as the signed
/// ranges a B-tree of int8 keys holds them in: a range across 2^63 in two halves, all sorted
/// and overlapping or adjacent ones merged. Read in this order, each range starts at or right
/// of where the one before ended, so a reader can go on from the leaf page it is on instead of
/// descending again.
pub fn signed_ranges<I: IntoIterator<Item = (u64, u64)>>(ranges: I) -> Vec<(i64, i64)> {
    let mut signed = Vec::new();
    for (low, high) in ranges {
        if low > high {
            continue;
        }
        if low < 1 << 63 && high >= 1 << 63 {
            signed.push((low as i64, i64::MAX));
            signed.push((i64::MIN, high as i64));
        } else {
            signed.push((low as i64, high as i64));
        }
    }
    signed.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(signed.len());
    for (low, high) in signed {
        match merged.last_mut() {
            Some(last) if last.1.checked_add(1).is_none_or(|next| low <= next) => last.1 = last.1.max(high),
            _ => merged.push((low, high)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer by definition, and how many keys `lower_bound` read far (over two positions)
    /// from the key it read before: the reads that miss the CPU's cache.
    fn check(keys: &[Option<i64>], value: i64) -> usize {
        let want = keys.iter().position(|k| k.is_none_or(|k| k >= value)).unwrap_or(keys.len());
        let (mut reads, mut last) = (0, usize::MAX);
        let got = lower_bound(0, keys.len(), value, |i| {
            reads += usize::from(i.abs_diff(last) > 2);
            last = i;
            keys[i]
        });
        assert_eq!(got, want, "value {value} in {keys:?}");
        reads
    }

    fn sorted_random(n: usize, seed: u64, nulls: usize) -> Vec<Option<i64>> {
        let mut x = seed | 1;
        let mut keys: Vec<i64> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as i64
            })
            .collect();
        keys.sort_unstable();
        keys.into_iter().map(Some).chain(std::iter::repeat_n(None, nulls)).collect()
    }

    #[test]
    fn every_value_and_its_neighbours_in_small_runs() {
        for n in 0..20 {
            for nulls in 0..3 {
                let keys: Vec<Option<i64>> =
                    (0..n as i64).map(|i| Some(i * 3 - 10)).chain(std::iter::repeat_n(None, nulls)).collect();
                for value in -14..(n as i64 * 3) {
                    check(&keys, value);
                }
                check(&keys, i64::MIN);
                check(&keys, i64::MAX);
            }
        }
    }

    #[test]
    fn signed_ranges_split_sort_and_merge() {
        let top = 1u64 << 63;
        assert_eq!(signed_ranges([(5, 9), (0, 2), (3, 4), (12, 12)]), vec![(0, 9), (12, 12)]);
        assert_eq!(signed_ranges([(top - 2, top + 1)]), vec![(i64::MIN, i64::MIN + 1), (i64::MAX - 1, i64::MAX)]);
        assert_eq!(signed_ranges([(u64::MAX, u64::MAX), (top, top)]), vec![(i64::MIN, i64::MIN), (-1, -1)]);
        assert_eq!(signed_ranges([(0, u64::MAX), (7, 8)]), vec![(i64::MIN, i64::MAX)]);
        assert_eq!(signed_ranges([(9, 3)]), vec![]);
        // Every unsigned key lies in exactly one signed range when it lay in one unsigned.
        let input = [(10u64, 20u64), (15, 30), (top - 1, top), (u64::MAX - 3, u64::MAX)];
        let out = signed_ranges(input);
        for probe in [9u64, 10, 20, 25, 30, 31, top - 2, top - 1, top, top + 1, u64::MAX - 4, u64::MAX] {
            let want = input.iter().any(|&(l, h)| (l..=h).contains(&probe));
            let got = out.iter().filter(|&&(l, h)| (l..=h).contains(&(probe as i64))).count();
            assert_eq!(got, usize::from(want), "{probe}");
        }
        assert!(out.windows(2).all(|w| w[0].1 < w[1].0));
    }

    #[test]
    fn repeated_keys_find_the_first_of_a_run() {
        // A covering index's page: a few block values, ~150 entries each.
        let keys: Vec<Option<i64>> = [7i64, 8, 9].iter().flat_map(|&v| std::iter::repeat_n(Some(v), 150)).collect();
        for value in 6..11 {
            check(&keys, value);
        }
        let extremes = vec![Some(i64::MIN), Some(i64::MIN), Some(0), Some(i64::MAX), Some(i64::MAX), None];
        for value in [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX] {
            check(&extremes, value);
        }
    }

    #[test]
    fn uniform_keys_take_fewer_far_reads_than_halving() {
        // A permuted index's page: 360 fingerprints.
        let (mut ours, mut halving, mut lookups) = (0, 0, 0);
        for seed in 1..50u64 {
            let keys = sorted_random(360, seed * 7919, 0);
            let (lo, hi) = (keys[0].unwrap(), keys[359].unwrap());
            for j in 0..40 {
                let value = (i128::from(lo) + (i128::from(hi) - i128::from(lo)) * j / 40) as i64;
                ours += check(&keys, value);
                let (mut a, mut b, mut last) = (0, keys.len(), usize::MAX);
                while a < b {
                    let mid = a + (b - a) / 2;
                    halving += usize::from(mid.abs_diff(last) > 2);
                    last = mid;
                    if keys[mid].is_some_and(|k| k < value) { a = mid + 1 } else { b = mid }
                }
                lookups += 1;
            }
            for value in [i64::MIN, lo, hi, i64::MAX] {
                check(&keys, value);
            }
            check(&sorted_random(360, seed, 3), lo);
        }
        let (ours, halving) = (ours as f64 / lookups as f64, halving as f64 / lookups as f64);
        assert!(ours < 0.6 * halving, "{ours} far reads per lookup, halving {halving}");
    }

    #[test]
    fn a_leaf_map_of_a_large_index_takes_a_few_far_reads() {
        // The lowest keys of 270,000 leaf pages (a permuted index of 100M rows, `leaf_map`): the
        // first page's is i64::MIN; each read of this array far from the one before is a miss.
        let mut keys = sorted_random(270_000, 0x5EED, 0);
        keys[0] = Some(i64::MIN);
        let (mut ours, mut lookups) = (0, 0);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ours += check(&keys, x as i64);
            lookups += 1;
        }
        for value in [i64::MIN, i64::MIN + 1, -1, 0, i64::MAX] {
            check(&keys, value);
        }
        // Halving takes 18.
        assert!(ours < 8 * lookups, "{ours} far reads in {lookups} lookups");
    }
}
