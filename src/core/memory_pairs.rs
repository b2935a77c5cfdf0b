//! All near pairs of a table whose fingerprints fit in memory, found in memory: how
//! `simhash_pairs` reads every table on one server that fits its memory budget
//! (`maintenance_work_mem`), instead of one SQL hash join per key.
//!
//! Two ways, chosen by cost ([`choose`]): compare every pair ([`Method::Compare`], about 2 ns a
//! pair, for small tables crowded into few keys, where the keys find nearly every pair anyway),
//! or sort the rows by each key of [`pass_keys`] in turn and compare the rows within each
//! run of equal keys ([`Method::Sort`], Manku et al.'s permuted tables, one at a time). Both
//! return exactly the pairs the SQL joins return: rows `i < j` that some same-position pair of
//! fingerprints puts within k, once, with the smallest such distance.

use crate::batch::{best_keys, KeyPlan};
use crate::distance::hamming;
use crate::memory::{room, Meter, MemoryError};

/// The fingerprints of a table, row by row: `width` of them a row (the elements of a set
/// column, 1 for a fingerprint column), each present or not (a set's NULL element).
#[derive(Debug, Clone, Default)]
pub struct Rows {
    fps: Vec<u64>,
    /// Empty when every fingerprint is present ([`Rows::single`]): a byte a row saved.
    present: Vec<bool>,
    width: usize,
}

impl Rows {
    /// Rows of `width` fingerprints from the flat sequence `fps`, row after row; a last,
    /// incomplete row is dropped. A `width` of 0 is taken as 1.
    pub fn new(fps: impl IntoIterator<Item = Option<u64>>, width: usize) -> Self {
        let width = width.max(1);
        let (mut values, mut present) = (Vec::new(), Vec::new());
        for fp in fps {
            values.push(fp.unwrap_or(0));
            present.push(fp.is_some());
        }
        let whole = values.len() / width * width;
        values.truncate(whole);
        present.truncate(whole);
        Rows { fps: values, present, width }
    }

    /// One fingerprint a row, every one present: a table read row by row (`simhash_pairs` on
    /// a big table), which takes no more memory than the vector it is given.
    pub fn single(fps: Vec<u64>) -> Self {
        Rows { fps, present: Vec::new(), width: 1 }
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.fps.len() / self.width
    }

    pub fn is_empty(&self) -> bool {
        self.fps.is_empty()
    }

    fn get(&self, row: usize, element: usize) -> Option<u64> {
        let at = row * self.width + element;
        (self.present.is_empty() || self.present[at]).then_some(self.fps[at])
    }

    /// The distance of two rows: the smallest over the positions where both have a fingerprint.
    fn distance(&self, x: usize, y: usize) -> Option<u32> {
        (0..self.width).filter_map(|e| Some(hamming(self.get(x, e)?, self.get(y, e)?))).min()
    }

    /// Whether some position before `element` already puts the two rows within `k`: the pair
    /// then belongs to that position's pass.
    fn near_before(&self, x: usize, y: usize, element: usize, k: u32) -> bool {
        (0..element).any(|e| matches!((self.get(x, e), self.get(y, e)), (Some(a), Some(b)) if hamming(a, b) <= k))
    }
}

/// How the pairs are found in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Every pair compared.
    Compare,
    /// Rows sorted by each key, runs of equal keys compared.
    Sort,
}

/// The keys a sorted pass over `rows` rows uses to find every pair within `k` bits, with the
/// least expected time: each key costs a sort of every row ([`SORT_ROW_NS`]), each candidate a
/// distance ([`CANDIDATE_NS`]), so the keys are fewer and shorter than the joins'
/// (`batch::pair_keys`). `None` for `k` >= 64.
pub fn pass_keys(k: u32, rows: f64) -> Option<KeyPlan> {
    let rows = rows.max(1.0);
    best_keys(k, rows * SORT_ROW_NS / CANDIDATE_NS, rows * rows / 2.0)
}

/// Nanoseconds one pair compared costs when every pair is ([`Method::Compare`]): 5,000
/// fingerprints (12.5M pairs) in 65 ms (`cargo run --release --example memory_pairs`).
pub const COMPARE_PAIR_NS: f64 = 5.0;

/// Nanoseconds one row costs in one sorted pass (its entry made, sorted by the key, and read
/// for runs): 1M random fingerprints through 4 keys of 16 bits in 200 ms, candidates included
/// (the same example).
pub const SORT_ROW_NS: f64 = 50.0;

/// Nanoseconds one candidate (two rows sharing a key) costs in a sorted pass: its distance,
/// and for the few within k, the earlier keys and positions: 2.5 ns on random fingerprints,
/// 4.4 ns on crowded ones, where most candidates are pairs (the same example).
pub const CANDIDATE_NS: f64 = 4.0;

/// Largest table compared pair by pair: 100,000 rows take about 10 s.
pub const COMPARE_MAX_ROWS: usize = 100_000;

/// Rows of a sample that [`choose`] counts shared keys on.
const SAMPLE_ROWS: usize = 2_000;

/// The cheaper way to find the pairs of these rows within `k` bits: comparing every pair, or
/// the sorted passes over the keys of [`pass_keys`], whose candidates are counted on a sample of
/// about 2,000 rows and scaled to the table (random fingerprints share few keys; fingerprints
/// crowded by a shared template share most). For `k` >= 64 every pair is near: compared.
pub fn choose(rows: &Rows, k: u32) -> Method {
    let n = rows.len();
    let Some(plan) = pass_keys(k, n as f64) else {
        return Method::Compare;
    };
    if n > COMPARE_MAX_ROWS {
        return Method::Sort;
    }
    let step = n.div_ceil(SAMPLE_ROWS).max(1);
    let sampled = n.div_ceil(step);
    let mut candidates = 0.0;
    for e in 0..rows.width {
        let fps: Vec<u64> = (0..n).step_by(step).filter_map(|r| rows.get(r, e)).collect();
        candidates += shared_key_pairs(&fps, &plan.masks);
    }
    let scale = (n as f64 / sampled.max(1) as f64).powi(2);
    let compare = COMPARE_PAIR_NS * rows.width as f64 * (n as f64) * (n as f64 - 1.0).max(0.0) / 2.0;
    let sort = SORT_ROW_NS * rows.width as f64 * plan.masks.len() as f64 * n as f64 + CANDIDATE_NS * candidates * scale;
    if compare <= sort {
        Method::Compare
    } else {
        Method::Sort
    }
}

/// Pairs of `fps` that share `fp & mask`, summed over `masks` (a pair sharing several keys
/// counts once per key): the candidates a sorted pass over these keys compares.
pub fn shared_key_pairs(fps: &[u64], masks: &[u64]) -> f64 {
    let mut keys = Vec::with_capacity(fps.len());
    let mut total = 0.0;
    for &mask in masks {
        keys.clear();
        keys.extend(fps.iter().map(|&fp| fp & mask));
        keys.sort_unstable();
        for run in keys.chunk_by(|a, b| a == b) {
            let n = run.len() as f64;
            total += n * (n - 1.0) / 2.0;
        }
    }
    total
}

/// Bytes of memory `simhash_pairs` takes to read `rows` rows of `width` fingerprints and keys
/// of `key_bytes` bytes each into memory, or `None` where PostgreSQL could not build the arrays
/// at all ([`MAX_ELEMENTS`], [`MAX_ROW_BYTES`]). About 120 bytes a row for one fingerprint and
/// an 8-byte key, 50 more for each further fingerprint of a set, and three copies of a longer
/// key: the most the backend's private memory (RssAnon) grew while `simhash_pairs` ran on 1M
/// and 10M rows with int8 keys (104-133 MB and 1,130 MB; sets of four, 244 MB at 1M). Counted
/// there: the arrays PostgreSQL builds (fingerprints and keys, while built and once more as the
/// query's intermediate result), this module's copy, and a row's entry in the sorted pass.
pub fn memory_bytes(rows: f64, width: usize, key_bytes: f64) -> Option<f64> {
    let (rows, width, key_bytes) = (rows.max(0.0), width.max(1) as f64, key_bytes.max(0.0));
    let fits = rows * width <= MAX_ELEMENTS && rows * (8.0 * width + key_bytes) <= MAX_ROW_BYTES;
    fits.then(|| rows * (50.0 * width + 70.0 + 3.0 * (key_bytes - 8.0).max(0.0)))
}

/// Most fingerprints (or keys) one array may carry: `array_agg` doubles its buffer of 8-byte
/// slots and stops short of PostgreSQL's 1 GB allocation limit, at 2^26 = 67M elements.
pub const MAX_ELEMENTS: f64 = 6.0e7;

/// Most bytes the two arrays (fingerprints and keys) may take together: they travel in one row,
/// which PostgreSQL keeps under 1 GB.
pub const MAX_ROW_BYTES: f64 = 9.0e8;

/// Bytes a sorted pass takes per row, on top of the rows: its entry (fingerprint, row number).
pub const SORT_ENTRY_BYTES: usize = std::mem::size_of::<(u64, u32)>();

/// Bytes per row of `simhash_pairs` reading a big table row by row
/// (`_simhash_scan_pairs`): the fingerprint, an 8-byte key, the sorted pass's entry. Its
/// vectors are sized by the table's row estimate; one that outgrows it doubles, which a
/// quarter more covers.
pub const SCAN_ROW_BYTES: f64 = 1.25 * (8.0 + 8.0 + SORT_ENTRY_BYTES as f64);

/// Most rows a sorted pass numbers: row numbers are `u32`.
pub const MAX_SORTED_ROWS: usize = u32::MAX as usize;

/// Pairs `(i, j, distance)` as [`pairs`] yields them, one at a time.
pub type PairIter<'a> = Box<dyn Iterator<Item = (usize, usize, u32)> + 'a>;

/// Every pair `(i, j, distance)`, `i < j`, of `rows` within `k` bits, lazily (a table whose every
/// pair is near never holds its pairs in memory): by `method`, through the keys of
/// [`pass_keys`] when sorting. `check` runs every few thousand steps (cancels, reports
/// progress), with how far the work is: `(done, total)` rows compared, or passes sorted. `k` of 64
/// or more makes every pair near. The sorted passes' entries are counted on `meter` and
/// allocated at once, fallibly; more than [`MAX_SORTED_ROWS`] rows are over any budget.
pub fn pairs<'a>(
    rows: Rows,
    k: u32,
    method: Method,
    meter: &mut Meter,
    check: impl FnMut(Progress) + 'a,
) -> Result<PairIter<'a>, MemoryError> {
    Ok(match (method, pass_keys(k, rows.len() as f64)) {
        (Method::Sort, Some(plan)) => {
            if rows.len() > MAX_SORTED_ROWS {
                return Err(MemoryError::OverBudget { what: "a sorted pass of more than 2^32 rows", limit: meter.limit() });
            }
            meter.add(rows.len().saturating_mul(SORT_ENTRY_BYTES))?;
            let mut entries = Vec::new();
            room(&mut entries, rows.len())?;
            Box::new(SortedPairs::new(rows, k, plan.masks, entries, check))
        }
        _ => Box::new(ComparedPairs { rows, k, i: 0, j: 0, check }),
    })
}

/// How far [`pairs`] is, for progress reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Rows compared with every later row, of all rows.
    Compared(usize, usize),
    /// Sorted passes begun (one per key and position), of all passes.
    Sorted(usize, usize),
}

/// How many steps between two calls of `check`.
const CHECK_EVERY: u32 = 1 << 16;

/// Every pair compared, row `i` against each later row `j`.
struct ComparedPairs<F> {
    rows: Rows,
    k: u32,
    i: usize,
    j: usize,
    check: F,
}

impl<F: FnMut(Progress)> Iterator for ComparedPairs<F> {
    type Item = (usize, usize, u32);

    fn next(&mut self) -> Option<Self::Item> {
        let n = self.rows.len();
        loop {
            if self.j >= n || self.j == 0 {
                if self.j > 0 {
                    self.i += 1;
                }
                if self.i + 1 >= n {
                    return None;
                }
                (self.check)(Progress::Compared(self.i, n));
                self.j = self.i + 1;
            }
            let (i, j) = (self.i, self.j);
            self.j += 1;
            if let Some(d) = self.rows.distance(i, j).filter(|&d| d <= self.k) {
                return Some((i, j, d));
            }
        }
    }
}

/// The sorted passes: for each position of the set, for each key mask in turn, the rows that
/// have a fingerprint there sorted by `fp & mask`; within each run of equal keys every pair is
/// a candidate, returned when within k, unless an earlier mask of the same position or an
/// earlier position already found it.
struct SortedPairs<F> {
    rows: Rows,
    k: u32,
    masks: Vec<u64>,
    /// The position and the mask `entries` is sorted for; `None` before the first.
    pass: Option<(usize, usize)>,
    /// (fingerprint at the position, row), sorted by the key.
    entries: Vec<(u64, u32)>,
    run_end: usize,
    a: usize,
    b: usize,
    steps: u32,
    check: F,
}

impl<F: FnMut(Progress)> SortedPairs<F> {
    /// `entries` has room for a row each: the passes never grow it.
    fn new(rows: Rows, k: u32, masks: Vec<u64>, entries: Vec<(u64, u32)>, check: F) -> Self {
        SortedPairs { rows, k, masks, pass: None, entries, run_end: 0, a: 0, b: 0, steps: 0, check }
    }

    /// Moves to the next pass and sorts for it; false after the last.
    fn next_pass(&mut self) -> bool {
        let (element, mask) = match self.pass {
            None => (0, 0),
            Some((e, m)) if m + 1 < self.masks.len() => (e, m + 1),
            Some((e, _)) => (e + 1, 0),
        };
        if element >= self.rows.width || self.masks.is_empty() {
            return false;
        }
        let progress = self.progress(element, mask);
        (self.check)(progress);
        if mask == 0 {
            self.entries.clear();
            let rows = &self.rows;
            // Row numbers fit in u32 (MAX_SORTED_ROWS); within the room made in `pairs`.
            self.entries.extend((0..rows.len()).filter_map(|r| Some((rows.get(r, element)?, r as u32))));
        }
        let m = self.masks[mask];
        self.entries.sort_unstable_by_key(|&(fp, _)| fp & m);
        self.pass = Some((element, mask));
        (self.run_end, self.a, self.b) = (0, 0, 0);
        true
    }

    fn progress(&self, element: usize, mask: usize) -> Progress {
        Progress::Sorted(element * self.masks.len() + mask, self.rows.width * self.masks.len())
    }

    fn tick(&mut self) {
        self.steps += 1;
        if self.steps >= CHECK_EVERY {
            self.steps = 0;
            let (element, mask) = self.pass.unwrap_or((0, 0));
            let progress = self.progress(element, mask);
            (self.check)(progress);
        }
    }
}

impl<F: FnMut(Progress)> Iterator for SortedPairs<F> {
    type Item = (usize, usize, u32);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.b < self.run_end {
                let ((x, rx), (y, ry)) = (self.entries[self.a], self.entries[self.b]);
                self.b += 1;
                self.tick();
                if hamming(x, y) > self.k {
                    continue;
                }
                let (element, mask) = self.pass?;
                if self.masks[..mask].iter().any(|&m| (x ^ y) & m == 0) {
                    continue; // an earlier key of this position found it
                }
                let (rx, ry) = (rx.min(ry) as usize, rx.max(ry) as usize);
                if self.rows.near_before(rx, ry, element, self.k) {
                    continue; // an earlier position found it
                }
                let d = self.rows.distance(rx, ry)?;
                return Some((rx, ry, d));
            }
            if self.a + 2 < self.run_end {
                self.a += 1;
                self.b = self.a + 1;
                continue;
            }
            // The next run of equal keys; the next pass after the last run.
            if self.pass.is_none() || self.run_end >= self.entries.len() {
                if !self.next_pass() {
                    return None;
                }
                continue;
            }
            let m = self.pass.map_or(0, |(_, mask)| self.masks[mask]);
            let start = self.run_end;
            let key = self.entries[start].0 & m;
            let mut end = start + 1;
            while end < self.entries.len() && self.entries[end].0 & m == key {
                end += 1;
            }
            (self.run_end, self.a, self.b) = (end, start, start + 1);
            self.tick();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pair within k by comparing every pair, as the SQL brute force does.
    fn brute(fps: &[Option<u64>], width: usize, k: u32) -> Vec<(usize, usize, u32)> {
        let rows = fps.len() / width;
        let mut want = Vec::new();
        for i in 0..rows {
            for j in i + 1..rows {
                let d = (0..width).filter_map(|p| Some((fps[i * width + p]? ^ fps[j * width + p]?).count_ones())).min();
                if let Some(d) = d.filter(|&d| d <= k) {
                    want.push((i, j, d));
                }
            }
        }
        want
    }

    fn found(fps: &[Option<u64>], width: usize, k: u32, method: Method) -> Vec<(usize, usize, u32)> {
        let mut meter = Meter::unlimited("pairs");
        let mut got: Vec<_> = pairs(Rows::new(fps.iter().copied(), width), k, method, &mut meter, |_| ()).unwrap().collect();
        got.sort_unstable();
        got
    }

    #[test]
    fn both_methods_find_every_pair_within_k_once() {
        let mut rng = crate::testing::Rng::new(7);
        let base = rng.next();
        // Crowded: every value a few bits from one base, some equal; sets of 3 with holes.
        let crowded: Vec<Option<u64>> = (0..600)
            .map(|i| (i % 7 != 0).then(|| base ^ (rng.next() & rng.next() & rng.next() & rng.next()) ^ (i % 3)))
            .collect();
        // Random, with planted near copies a few bits away.
        let mut spread: Vec<Option<u64>> = Vec::new();
        for i in 0..900 {
            let fp = if i % 4 == 3 {
                spread[i - 3].map(|fp: u64| fp ^ (1 << (rng.next() % 64)) ^ (1 << (rng.next() % 64)) ^ (1 << (rng.next() % 64)))
            } else {
                (i % 11 != 0).then(|| rng.next())
            };
            spread.push(fp);
        }
        for fps in [&crowded, &spread] {
            for width in [1usize, 3] {
                for k in [0u32, 3, 8, 20, 64] {
                    let want = brute(fps, width, k);
                    assert_eq!(found(fps, width, k, Method::Compare), want, "compare, width {width} k {k}");
                    assert_eq!(found(fps, width, k, Method::Sort), want, "sort, width {width} k {k}");
                }
            }
        }
        assert_eq!(found(&[], 4, 3, Method::Sort), vec![]);
        assert_eq!(found(&[Some(1)], 1, 3, Method::Sort), vec![]);
        assert_eq!(found(&[None, None], 1, 3, Method::Compare), vec![]);
    }

    #[test]
    fn single_rows_find_what_rows_with_every_fingerprint_present_find() {
        let mut rng = crate::testing::Rng::new(5);
        let mut fps: Vec<u64> = Vec::new();
        for i in 0..2000 {
            let fp = if i % 5 == 4 { fps[i - 4] ^ (1 << (rng.next() % 64)) ^ (1 << (rng.next() % 64)) } else { rng.next() };
            fps.push(fp);
        }
        let present: Vec<Option<u64>> = fps.iter().map(|&fp| Some(fp)).collect();
        for k in [0u32, 2, 3, 9] {
            let mut meter = Meter::unlimited("pairs");
            let mut got: Vec<_> = pairs(Rows::single(fps.clone()), k, Method::Sort, &mut meter, |_| ()).unwrap().collect();
            got.sort_unstable();
            assert_eq!(got, brute(&present, 1, k), "k {k}");
        }
    }

    #[test]
    fn the_sorted_entries_count_against_the_budget() {
        let rows = || Rows::single((0..1000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect());
        let mut small = Meter::new("pairs", 1000 * SORT_ENTRY_BYTES - 1);
        assert!(matches!(pairs(rows(), 3, Method::Sort, &mut small, |_| ()), Err(MemoryError::OverBudget { .. })));
        let mut enough = Meter::new("pairs", 1000 * SORT_ENTRY_BYTES);
        assert!(pairs(rows(), 3, Method::Sort, &mut enough, |_| ()).is_ok());
        // Comparing every pair takes no entries.
        let mut none = Meter::new("pairs", 0);
        assert!(pairs(rows(), 3, Method::Compare, &mut none, |_| ()).is_ok());
    }

    #[test]
    fn compared_pairs_come_row_by_row() {
        let fps: Vec<Option<u64>> = (0..50).map(|i| Some(i as u64 & 1)).collect();
        let mut checks = Vec::new();
        let mut meter = Meter::unlimited("pairs");
        let got: Vec<_> = pairs(Rows::new(fps.clone(), 1), 64, Method::Compare, &mut meter, |p| checks.push(p)).unwrap().collect();
        assert_eq!(got.len(), 50 * 49 / 2);
        assert!(got.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(checks, (0..49).map(|i| Progress::Compared(i, 50)).collect::<Vec<_>>());
        // Sorted: one report as each pass begins (4 keys at k = 3, 2 positions).
        let mut checks = Vec::new();
        let _ = pairs(Rows::new(fps, 2), 3, Method::Sort, &mut meter, |p| checks.push(p)).unwrap().count();
        assert_eq!(checks, (0..8).map(|i| Progress::Sorted(i, 8)).collect::<Vec<_>>());
    }

    #[test]
    fn crowded_small_tables_are_compared_and_others_sorted() {
        let mut rng = crate::testing::Rng::new(11);
        let base = rng.next();
        let crowded = Rows::new((0..3000).map(|_| Some(base ^ (rng.next() & rng.next() & rng.next()))), 1);
        let random = Rows::new((0..50_000).map(|_| Some(rng.next())), 1);
        assert_eq!(choose(&crowded, 8), Method::Compare);
        assert_eq!(choose(&random, 3), Method::Sort);
        assert_eq!(choose(&random, 64), Method::Compare);
        // Even a few thousand random rows at a large k: 11 keys of 5 bits took 9 ms, every
        // pair compared 65 ms.
        let few = Rows::new((0..5000).map(|_| Some(rng.next())), 1);
        assert_eq!(choose(&few, 10), Method::Sort);
    }

    #[test]
    fn shared_keys_count_the_candidates() {
        let masks = [0xffff_u64, 0xffff_0000];
        // 1 and 3 share the low key, 1 and 2 and 3 the high one: 1 + 3 candidates.
        let fps = [0x0001_0001_u64, 0x0001_0002, 0x0001_0001, 0x0002_0005];
        assert_eq!(shared_key_pairs(&fps, &masks), 4.0);
        assert_eq!(shared_key_pairs(&[], &masks), 0.0);
        assert_eq!(shared_key_pairs(&fps, &[]), 0.0);
    }

    #[test]
    fn the_memory_counts_every_copy() {
        assert_eq!(memory_bytes(1e6, 1, 8.0), Some(120e6));
        assert_eq!(memory_bytes(1e6, 4, 8.0), Some(270e6));
        assert_eq!(memory_bytes(1e6, 1, 40.0), Some(216e6));
        assert_eq!(memory_bytes(0.0, 8, 8.0), Some(0.0));
        // array_agg's limit: 67M elements; sets of four past 15M rows.
        assert_eq!(memory_bytes(7e7, 1, 8.0), None);
        assert_eq!(memory_bytes(1.6e7, 4, 8.0), None);
        // Both arrays in one row under 1 GB: 10M text keys of 100 bytes do not fit.
        assert_eq!(memory_bytes(1e7, 1, 104.0), None);
    }
}
