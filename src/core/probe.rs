//! Which block values to look up so that a block index finds every fingerprint within k bits.
//!
//! Cut into m blocks, two fingerprints within k bits of each other have at least one block in
//! which they differ by at most floor(k / m) bits (pigeonhole; Norouzi, Punjani and Fleet, CVPR
//! 2012). Sharper, with k = r m + a (0 <= a < m): one of the first a + 1 blocks differs by at
//! most r bits, or one of the others by at most r - 1 (else the blocks would differ by at least
//! (a + 1)(r + 1) + (m - a - 1) r = k + 1 bits). So probing the first a + 1 blocks with every
//! value within r bits of the query's block, and the others within r - 1 (not at all when r = 0),
//! finds every candidate: with m = k + 1, one equality probe per block.
//! This module plans those probes; the index layer turns them into `= ANY(...)` conditions.

use std::fmt;

use crate::blocks::{Block, BlockError, MAX_BLOCKS, MIN_BLOCKS};
use crate::distance::{check_threshold, BadThreshold};

/// Most block values one lookup may probe: past this, more blocks are the better plan.
pub const MAX_PROBES: u64 = 1 << 16;

/// Why a lookup cannot be planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanError {
    Threshold(BadThreshold),
    Blocks(BlockError),
    /// The probes would exceed [`MAX_PROBES`]; `needed` is how many there would be.
    TooManyProbes { needed: u64, k: u32, m: u32 },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Threshold(e) => e.fmt(f),
            PlanError::Blocks(e) => e.fmt(f),
            PlanError::TooManyProbes { needed, k, m } => write!(
                f,
                "k = {k} with {m} blocks needs {needed} probes per lookup (at most {MAX_PROBES}); index with more blocks"
            ),
        }
    }
}

impl std::error::Error for PlanError {}

/// The probe radius of each of `m` blocks for distance bound `k`: r = floor(k / m) for the
/// first k mod m + 1 blocks, r - 1 for the others, `None` (no probe) where that is negative.
/// No blocks, no radii.
pub fn radii(k: u32, m: u32) -> Vec<Option<u32>> {
    if m == 0 {
        return Vec::new();
    }
    let (r, a) = (k / m, k % m);
    (0..m).map(|i| if i <= a { Some(r) } else { r.checked_sub(1) }).collect()
}

/// Number of values within Hamming distance `r` of a `width`-bit value: sum of C(width, i), i ≤ r.
pub fn ball_size(width: u32, r: u32) -> u64 {
    let mut total = 0u64;
    let mut c = 1u64; // C(width, 0)
    for i in 0..=r.min(width) {
        total = total.saturating_add(c);
        c = c.saturating_mul(u64::from(width - i)) / u64::from(i + 1);
    }
    total
}

/// The block values a lookup at `k` probes over `m` blocks, every block's ball together (what the
/// equality arrays of the planner's BitmapOr form hold).
pub fn probed_values(k: u32, m: u32) -> u64 {
    radii(k, m)
        .into_iter()
        .enumerate()
        .filter_map(|(i, r)| Some(ball_size(Block::new(i as i64, i64::from(m)).ok()?.width, r?)))
        .fold(0, u64::saturating_add)
}

/// Most block values the block comparisons beside a join's probe may test. They are a cheap
/// test per joined row that lets the probe run only for rows sharing a block; but a row's
/// arrays are computed again for every row, and at a k far past the layout's (k = 64 on four
/// blocks: 262,141 values) a join of 20 rows by 240 took 10 s where the probe alone takes
/// milliseconds (issue 63, found by tests/hostile/query_shapes.py). Past this, the probe alone:
/// k = 7 on four blocks (68 values, 17 a block), the most a layout needs at its own max_k, keeps
/// them.
pub const MAX_PREFILTER_VALUES: u64 = 68;

/// The largest radius a `width`-bit block can be probed with in at most [`MAX_PROBES`] values.
pub fn max_radius(width: u32) -> u32 {
    (0..=width).take_while(|&r| ball_size(width, r) <= MAX_PROBES).last().unwrap_or(0)
}

/// Every value within Hamming distance `r` of `value` in a `width`-bit block, `value` first,
/// then by distance.
pub fn ball(value: u64, width: u32, r: u32) -> Vec<u64> {
    let mut out = vec![value];
    let mut frontier = vec![(value, 0u32)]; // (value, lowest bit that may still flip)
    for _ in 0..r.min(width) {
        let mut next = Vec::new();
        for &(v, from) in &frontier {
            for bit in from..width {
                next.push((v ^ (1 << bit), bit + 1));
            }
        }
        out.extend(next.iter().map(|&(v, _)| v));
        frontier = next;
    }
    out
}

/// One block's probes: its index, the bits probed (the block, or a window of blocks from it on:
/// `Block::window`) and their values to look up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockProbe {
    pub index: u32,
    pub window: Block,
    pub values: Vec<u64>,
}

/// The probes that find every fingerprint within `k` bits of `query` in an index on `m` blocks.
pub fn plan(query: u64, k: i64, m: i64) -> Result<Vec<BlockProbe>, PlanError> {
    plan_windows(query, k, m, 1)
}

/// The radius of each of the `m` windows of `len` blocks for distance bound `k`. Each bit lies in
/// `len` windows, so the windows' differing bits add up to at most `len * k`: some window differs
/// by at most floor(len k / m) bits, and with the sharper count of `radii`, one of the first
/// a + 1 windows by at most r or another by at most r - 1 (len k = r m + a). With `len` = 1 these
/// are the blocks' radii; with len <= (m - k) / k every radius is 0: keys of several blocks,
/// probed exactly.
pub fn window_radii(k: u32, m: u32, len: u32) -> Vec<Option<u32>> {
    radii(k.saturating_mul(len), m)
}

/// The probes that find every fingerprint within `k` bits of `query` through `m` permuted block
/// indexes, each probed on its window of `len` blocks (`Block::window`; 1: the block alone,
/// which block-column indexes can serve too).
pub fn plan_windows(query: u64, k: i64, m: i64, len: u32) -> Result<Vec<BlockProbe>, PlanError> {
    let k = check_threshold(k).map_err(PlanError::Threshold)?;
    // Checked first: with m = 0 there is no block to construct, hence no check in Block::new
    // (found by the probe_plan fuzzer).
    if !(i64::from(MIN_BLOCKS)..=i64::from(MAX_BLOCKS)).contains(&m) {
        return Err(PlanError::Blocks(BlockError::BadCount(m)));
    }
    let windows: Vec<Block> = (0..m)
        .map(|i| Block::window(i, m, len))
        .collect::<Result<_, _>>()
        .map_err(PlanError::Blocks)?;
    let m = windows.len() as u32;
    let probed: Vec<(u32, Block, u32)> = windows
        .iter()
        .zip(window_radii(k, m, len))
        .zip(0u32..)
        .filter_map(|((b, r), index)| r.map(|r| (index, *b, r)))
        .collect();
    let needed: u64 = probed.iter().map(|(_, b, r)| ball_size(b.width, *r)).sum();
    if needed > MAX_PROBES {
        return Err(PlanError::TooManyProbes { needed, k, m });
    }
    Ok(probed
        .into_iter()
        .map(|(index, window, r)| BlockProbe { index, window, values: ball(window.extract(query), window.width, r) })
        .collect())
}

/// What one lookup through an m-block index costs: B-tree descents and expected rechecks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LookupCost {
    /// Block values probed, one B-tree descent each.
    pub probes: u64,
    /// Expected rows fetched and rechecked among `rows` random fingerprints.
    pub candidates: f64,
}

impl LookupCost {
    /// One number to rank layouts by: a descent and a recheck cost about the same (both touch
    /// one page that is usually cached).
    pub fn score(&self) -> f64 {
        self.probes as f64 + self.candidates
    }

    /// The same for covering block indexes (`INCLUDE (fp)`), where a candidate is checked on
    /// the index tuple already in hand instead of on a heap page: about twenty times cheaper,
    /// as measured on 10M rows (a popcount filter in an index-only scan against a heap recheck).
    pub fn covering_score(&self) -> f64 {
        self.probes as f64 + self.candidates / 20.0
    }
}

/// The cost of finding everything within `k` bits among `rows` fingerprints with an index on
/// `m` blocks, or `None` when that index cannot serve `k` (bad k or m, or too many probes).
pub fn lookup_cost(k: i64, m: i64, rows: f64) -> Option<LookupCost> {
    lookup_cost_windows(k, m, 1, rows)
}

/// The same through `m` permuted indexes probed on windows of `len` blocks (`plan_windows`).
pub fn lookup_cost_windows(k: i64, m: i64, len: u32, rows: f64) -> Option<LookupCost> {
    let k = check_threshold(k).ok()?;
    let mut probes = 0u64;
    let mut share = 0.0f64;
    Block::window(0, m, len).ok()?;
    for (i, r) in window_radii(k, m as u32, len).into_iter().enumerate() {
        let window = Block::window(i as i64, m, len).ok()?;
        let Some(r) = r else { continue };
        let values = ball_size(window.width, r);
        probes = probes.saturating_add(values);
        share += values as f64 / 2f64.powi(window.width as i32);
    }
    (probes <= MAX_PROBES).then_some(LookupCost { probes, candidates: share * rows.max(0.0) })
}

/// The score of a lookup within `k` through `blocks` block indexes on a table of `rows` rows
/// (covering indexes check candidates on their own leaf pages: `covering_score`), or None when
/// those blocks cannot serve `k`. The planner, the nearest-first scan and the batch helpers
/// rank a table's layouts by it.
pub fn layout_score(k: i64, blocks: u32, rows: f64, covering: bool) -> Option<f64> {
    let cost = lookup_cost(k, i64::from(blocks), rows)?;
    Some(if covering { cost.covering_score() } else { cost.score() })
}

/// The best of `layouts` (block count, covering) for `k` on `rows` rows: its position and
/// score; the first of equals wins.
pub fn best_layout(layouts: &[(u32, bool)], k: i64, rows: f64) -> Option<(usize, f64)> {
    layouts
        .iter()
        .enumerate()
        .filter_map(|(i, &(blocks, covering))| Some((i, layout_score(k, blocks, rows, covering)?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::hamming;

    #[test]
    fn layouts_are_ranked_by_descents_and_candidates() {
        // At k = 3 on 10M rows: 4 covering 16-bit blocks (4 descents, ~610 entries) beat 8
        // covering 8-bit ones (4 descents, ~156,000 entries), and covering beats plain.
        let layouts = [(8, true), (4, false), (4, true)];
        assert_eq!(best_layout(&layouts, 3, 1e7).map(|(i, _)| i), Some(2));
        // At k = 7 the 4-block layout needs radius-1 probes (68 descents, ~100 entries at 100k
        // rows); 8 blocks need 8 descents but read 3,125 entries: the 4 blocks win.
        assert_eq!(best_layout(&[(4, true), (8, true)], 7, 1e5).map(|(i, _)| i), Some(0));
        // A k the blocks cannot serve within MAX_PROBES is no layout; the first of equals wins.
        assert_eq!(best_layout(&[(2, true)], 40, 1e6), None);
        assert_eq!(best_layout(&[(4, true), (4, true)], 3, 1e6).map(|(i, _)| i), Some(0));
        assert!(layout_score(3, 4, 1e6, true) < layout_score(3, 4, 1e6, false));
    }

    #[test]
    fn probed_values_add_up_every_block_ball() {
        // k = 3 on four 16-bit blocks: one value each; k = 7: 17 each (68, MAX_RANGE_ARMS);
        // k = 64: every value of the first block, all but one of the others (radius 15).
        assert_eq!(probed_values(3, 4), 4);
        assert_eq!(probed_values(7, 4), 68);
        assert_eq!(probed_values(64, 4), 65_536 + 3 * 65_535);
        // k = 5 on four blocks: radius 1 for the first two, 0 for the others.
        assert_eq!(probed_values(5, 4), 17 + 17 + 1 + 1);
        assert_eq!(probed_values(3, 0), 0);
        assert!(probed_values(3, 4) <= MAX_PREFILTER_VALUES && probed_values(8, 4) > MAX_PREFILTER_VALUES);
    }

    #[test]
    fn balls_hold_exactly_the_values_within_the_radius() {
        for width in [1u32, 3, 8, 13] {
            for r in 0..=3u32 {
                let value = 0b1011 & ((1u64 << width) - 1);
                let got = ball(value, width, r);
                let want: Vec<u64> =
                    (0..1u64 << width).filter(|&v| hamming(v, value) <= r).collect();
                assert_eq!(got.len() as u64, ball_size(width, r), "width {width} r {r}");
                let mut sorted = got.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, want, "width {width} r {r}");
                assert_eq!(got[0], value);
            }
        }
        assert_eq!(ball_size(16, 1), 17);
        assert_eq!(ball_size(16, 2), 137);
        assert_eq!(ball_size(32, 0), 1);
        // The largest radius keeps the ball within MAX_PROBES, one more would not.
        for width in [1u32, 4, 8, 16, 21, 32, 64] {
            let r = max_radius(width);
            assert!(ball_size(width, r) <= MAX_PROBES);
            assert!(r == width || ball_size(width, r + 1) > MAX_PROBES, "width {width}");
        }
        assert_eq!((max_radius(8), max_radius(16), max_radius(32)), (8, 16, 4));
    }

    #[test]
    fn every_fingerprint_within_k_is_found() {
        // Flip up to k random bits of random queries: some block's probes must hold the result.
        let mut rng = crate::testing::Rng::new(0x243f_6a88_85a3_08d3);
        let mut next = || rng.next();
        for (k, m) in [(0, 2), (1, 2), (3, 4), (3, 2), (4, 4), (7, 4), (8, 4), (7, 8), (8, 5), (6, 3)] {
            for _ in 0..300 {
                let query = next();
                let mut other = query;
                let flips = next() % (k as u64 + 1);
                for _ in 0..flips {
                    other ^= 1 << (next() % 64);
                }
                assert!(hamming(query, other) <= k);
                let probes = plan(query, i64::from(k), m).unwrap();
                let found = probes.iter().any(|p| {
                    let b = Block::new(i64::from(p.index), m).unwrap();
                    p.values.contains(&b.extract(other))
                });
                assert!(found, "k {k} m {m}: {query:016x} vs {other:016x}");
            }
        }
    }

    #[test]
    fn exact_blocks_when_m_exceeds_k_and_limits_otherwise() {
        let probes = plan(0x0123_4567_89ab_cdef, 3, 4).unwrap();
        assert!(probes.iter().all(|p| p.values.len() == 1));
        assert_eq!(probes[0].values, [0x0123]);
        assert_eq!(plan(0, 8, 4).unwrap()[0].values.len(), 137); // radius 2 in 16 bits
        assert_eq!(plan(0, 8, 4).unwrap()[1].values.len(), 17); // the others: radius 1
        // k = 4 over 4 blocks: one block within 1 bit, or another equal: 17 + 3 probes, not 68.
        assert_eq!(plan(0, 4, 4).unwrap().iter().map(|p| p.values.len()).sum::<usize>(), 20);
        // k < m: only the first k + 1 blocks are probed.
        assert_eq!(plan(0, 3, 8).unwrap().len(), 4);
        assert!(matches!(plan(0, 20, 2), Err(PlanError::TooManyProbes { .. })));
        assert!(matches!(plan(0, 65, 4), Err(PlanError::Threshold(_))));
        assert!(matches!(plan(0, 3, 1), Err(PlanError::Blocks(_))));
    }

    #[test]
    fn plans_find_every_fingerprint_within_k() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for m in [2i64, 3, 4, 5, 8, 13] {
            for k in 0..=12i64 {
                let Ok(_) = plan(0, k, m) else { continue };
                for _ in 0..200 {
                    let q = next();
                    let mut fp = q;
                    for _ in 0..k {
                        fp ^= 1 << (next() % 64);
                    }
                    let probes = plan(q, k, m).unwrap();
                    let found = probes.iter().any(|p| {
                        let block = Block::new(i64::from(p.index), m).unwrap();
                        p.values.contains(&block.extract(fp))
                    });
                    assert!(found, "m={m} k={k} q={q:x} fp={fp:x}");
                }
            }
        }
    }

    #[test]
    fn window_plans_find_every_fingerprint_within_k() {
        // Random queries, up to k random flips, then flips packed into few blocks, the hard case
        // for windows: some window's probes must hold the other fingerprint's window value.
        let mut rng = crate::testing::Rng::new(0x1319_8a2e_0370_7344);
        let mut next = || rng.next();
        for m in [2i64, 3, 4, 5, 6, 8] {
            for len in 1..m as u32 {
                for k in 0..=10i64 {
                    let Ok(probes) = plan_windows(0, k, m, len) else { continue };
                    assert_eq!(probes.len(), window_radii(k as u32, m as u32, len).iter().flatten().count());
                    for trial in 0..150 {
                        let q = next();
                        let mut fp = q;
                        if trial % 2 == 0 {
                            for _ in 0..k {
                                fp ^= 1 << (next() % 64);
                            }
                        } else {
                            // k flips in a run of bits from a random place: few windows hold them.
                            let at = next() % 64;
                            for b in 0..k as u64 {
                                fp ^= 1u64.rotate_left(((at + b * (1 + trial as u64 % 3)) % 64) as u32);
                            }
                        }
                        let probes = plan_windows(q, k, m, len).unwrap();
                        let found = probes.iter().any(|p| p.values.contains(&p.window.extract(fp)));
                        assert!(found, "m={m} len={len} k={k} q={q:x} fp={fp:x}");
                    }
                }
            }
        }
        // Keys of several blocks probed exactly: m = 7, k = 3, windows of 2 blocks (18-19 bits).
        let probes = plan_windows(0x0123_4567_89ab_cdef, 3, 7, 2).unwrap();
        assert_eq!(probes.len(), 7);
        assert!(probes.iter().all(|p| p.values.len() == 1 && p.window.width >= 18));
        // m = 4, k = 3, windows of 2 (32 bits): radius 1 each (len k = 6 = 1 * 4 + 2: the first
        // three at radius 1, the last at radius 0).
        let sizes: Vec<usize> = plan_windows(0, 3, 4, 2).unwrap().iter().map(|p| p.values.len()).collect();
        assert_eq!(sizes, [33, 33, 33, 1]);
        assert_eq!(plan_windows(7, 5, 4, 1), plan(7, 5, 4));
        assert!(matches!(plan_windows(0, 3, 4, 4), Err(PlanError::Blocks(_))));
        assert!(matches!(plan_windows(0, 3, 4, 0), Err(PlanError::Blocks(_))));
    }

    #[test]
    fn windows_trade_probes_for_candidates_as_the_table_grows() {
        // Four permuted blocks at k = 3: alone, 4 probes and rows / 2^14 candidates; in windows
        // of two, 100 probes and about rows / 2^27.
        let one = lookup_cost_windows(3, 4, 1, 1e9).unwrap();
        let two = lookup_cost_windows(3, 4, 2, 1e9).unwrap();
        assert_eq!((one.probes, two.probes), (4, 100));
        assert!((one.candidates - 4.0 * 1e9 / 65536.0).abs() < 1e-3);
        assert!(two.candidates < 30.0);
        assert_eq!(lookup_cost_windows(3, 4, 1, 1e6), lookup_cost(3, 4, 1e6));
        assert!(lookup_cost_windows(3, 4, 4, 1e6).is_none());
    }

    #[test]
    fn lookup_costs_rank_layouts_like_the_paper() {
        // k = 3 at 10M rows: 4 blocks (16 bits, radius 0) beats 8 blocks (8 bits each).
        let four = lookup_cost(3, 4, 1e7).unwrap();
        let eight = lookup_cost(3, 8, 1e7).unwrap();
        assert_eq!(four.probes, 4);
        assert!((four.candidates - 4.0 * 1e7 / 65536.0).abs() < 1e-6);
        assert!(four.score() < eight.score());
        // Radius 1 in 16-bit blocks: 17 probes per block.
        assert_eq!(lookup_cost(7, 4, 0.0).unwrap().probes, 68);
        assert!(lookup_cost(20, 2, 1.0).is_none());
        assert!(lookup_cost(65, 4, 1.0).is_none());
        assert!(lookup_cost(3, 1, 1.0).is_none());
    }

    #[test]
    fn covering_indexes_make_candidates_cheap_but_not_free() {
        // k = 7 at 10M rows: 4 blocks with radius 1 (68 probes, ~10k candidates checked in the
        // index) still beats 8 blocks with radius 0 (8 probes, ~312k candidates) and 3 blocks
        // with radius 2 (~700 probes).
        let four = lookup_cost(7, 4, 1e7).unwrap();
        assert!(four.covering_score() < lookup_cost(7, 8, 1e7).unwrap().covering_score());
        assert!(four.covering_score() < lookup_cost(7, 3, 1e7).unwrap().covering_score());
        assert!(four.covering_score() < four.score());
    }
}
