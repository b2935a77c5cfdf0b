//! Keys of several blocks (Manku, Jain and Das Sarma, WWW 2007, section 3.1.1): a family of
//! tables, one for each set of `c` of the `m` blocks, each keyed by its blocks' bits first.
//!
//! Among `m` blocks, two fingerprints within k bits differ in at most k of them, so some `c`
//! blocks (c <= m - k) are all equal: one exact probe of each of the C(m, c) tables finds every
//! candidate, on keys of about 64 c / m bits. More generally the `c` blocks that differ least
//! differ by at most [`family_radius`] bits, and each table is probed within that radius.
//! Against blocks probed alone (`probe`), a family trades bytes (C(m, c) indexes) for wide keys
//! at a small radius: few probes and few candidates at any table size.
//!
//! A table's key is a permutation of the fingerprint's bits: its blocks in order, then the other
//! blocks in order. Distances between keys are distances between fingerprints, so a B-tree on
//! the key alone serves the leaf-page probe as a permuted block index does (`Block::permute`),
//! its key's first bits probed as one range per value.
//!
//! The tables of a family are ordered by their block sets as binary numbers (block i is bit i):
//! the order `_simhash_index_probe` takes their indexes in.

use crate::blocks::{Block, BlockError, BITS};
use crate::distance::check_threshold;
use crate::probe::{ball, ball_size, LookupCost, PlanError, MAX_PROBES};

/// The most blocks a family is made of: a table per set of blocks, C(m, c) of them, must stay a
/// number of indexes one table can hold.
pub const MAX_KEY_BLOCKS: u32 = 12;

/// The most tables a family may have (C(8, 3) = 56; the paper's largest example has 20).
pub const MAX_KEY_TABLES: u64 = 64;

/// The key of one table: the blocks in `lead` (bit i: block i of `count`) lead, in order, then
/// the others, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockKey {
    pub count: u32,
    pub lead: u64,
    /// Bits the leading blocks take: the width of the value a probe looks up.
    pub width: u32,
}

impl BlockKey {
    /// Checks `count` in 2..=64 and `lead` a set of 1 to count - 1 of its blocks.
    pub fn new(lead: i64, count: i64) -> Result<BlockKey, BlockError> {
        Block::new(0, count)?;
        let count = count as u32; // checked by Block::new
        let lead = lead as u64;
        let all = if count == BITS { u64::MAX } else { (1u64 << count) - 1 };
        if lead == 0 || lead & !all != 0 || lead == all {
            return Err(BlockError::BadKey { lead, count });
        }
        let width = blocks_of(count).filter(|(i, _)| lead >> i & 1 == 1).map(|(_, b)| b.width).sum();
        Ok(BlockKey { count, lead, width })
    }

    /// Blocks the key leads with.
    pub fn blocks(self) -> u32 {
        self.lead.count_ones()
    }

    /// The key of `fp`: its leading blocks' bits, then the others'.
    #[inline]
    pub fn key(self, fp: u64) -> u64 {
        let (mut first, mut rest) = (0u64, 0u64);
        for (i, b) in blocks_of(self.count) {
            let value = b.extract(fp);
            if self.lead >> i & 1 == 1 {
                first = (first << b.width) | value;
            } else {
                rest = (rest << b.width) | value;
            }
        }
        // width < 64: some block is not in the lead.
        (first << (BITS - self.width)) | rest
    }

    /// The fingerprint a key holds: `key` undone.
    #[inline]
    pub fn unkey(self, key: u64) -> u64 {
        let (mut first_left, mut rest_left) = (self.width, BITS - self.width);
        let mut fp = 0u64;
        for (i, b) in blocks_of(self.count) {
            let value = if self.lead >> i & 1 == 1 {
                first_left -= b.width;
                (key >> (BITS - self.width + first_left)) & mask(b.width)
            } else {
                rest_left -= b.width;
                (key >> rest_left) & mask(b.width)
            };
            fp |= value << (BITS - b.start - b.width);
        }
        fp
    }

    /// The value a probe looks up: the key's first `width` bits.
    #[inline]
    pub fn lead_value(self, fp: u64) -> u64 {
        self.key(fp) >> (BITS - self.width)
    }

    /// The keys whose first `width` bits lie in `low..=high`, as one unsigned range.
    #[inline]
    pub fn range(self, low: u64, high: u64) -> (u64, u64) {
        crate::blocks::prefix_range(self.width, low, high)
    }
}

fn mask(width: u32) -> u64 {
    if width >= BITS {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The blocks of `count` (checked by the caller), with their numbers.
fn blocks_of(count: u32) -> impl Iterator<Item = (u32, Block)> {
    (0..count).filter_map(move |i| Some((i, Block::new(i64::from(i), i64::from(count)).ok()?)))
}

/// C(n, r) for n up to 64 (exact: each partial product C(n, i) (n - i) fits 128 bits).
pub fn choose(n: u32, r: u32) -> u64 {
    if r > n {
        return 0;
    }
    let r = r.min(n - r);
    let c = (0..r).fold(1u128, |acc, i| acc * u128::from(n - i) / u128::from(i + 1));
    u64::try_from(c).unwrap_or(u64::MAX)
}

/// How many tables a family of keys of `c` of `m` blocks has: C(m, c), or None when it is not a
/// family (c outside 2..m, m above MAX_KEY_BLOCKS, or more than MAX_KEY_TABLES tables). Keys of
/// one block are the blocks themselves, which block layouts hold.
pub fn tables(m: u32, c: u32) -> Option<u64> {
    // m first: C(m, c) of a number from SQL would take as many steps as c.
    if m > MAX_KEY_BLOCKS || !(2..m).contains(&c) {
        return None;
    }
    Some(choose(m, c)).filter(|&n| n <= MAX_KEY_TABLES)
}

/// The block sets of the family's tables, in its order (ascending as numbers).
pub fn leads(m: u32, c: u32) -> Vec<u64> {
    if tables(m, c).is_none() {
        return Vec::new();
    }
    (0u64..1 << m).filter(|s| s.count_ones() == c).collect()
}

/// Where the table keyed by `lead` stands in its family's order (`leads`): the colexicographic
/// rank of the set, which is its rank as a number among sets of its size.
pub fn position(lead: u64) -> u64 {
    let mut rank = 0;
    let mut j = 0;
    for bit in 0..64 {
        if lead >> bit & 1 == 1 {
            j += 1;
            rank += choose(bit, j);
        }
    }
    rank
}

/// The radius each table of the family of `c` of `m` blocks is probed at for distance bound
/// `k`: the most bits by which the `c` blocks that differ least can differ. With k = q m + s
/// (0 <= s < m) spread as evenly as it can be, they are c q + max(0, c - (m - s)); any other
/// spread makes some c blocks differ by no more (else the other m - c, each differing at least
/// as much as the most of those c, would make the total exceed k).
pub fn family_radius(k: u32, m: u32, c: u32) -> u32 {
    // No blocks, no spread: all k bits in the keys (callers check the family first).
    let Some((q, s)) = k.checked_div(m).zip(k.checked_rem(m)) else { return k };
    c.saturating_mul(q).saturating_add((c + s).saturating_sub(m))
}

/// One table's probes: its place in the family, its key, and the lead values to look up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyProbe {
    pub index: u32,
    pub key: BlockKey,
    pub values: Vec<u64>,
}

/// The probes that find every fingerprint within `k` bits of `query` through the family of
/// keys of `c` of `m` blocks.
pub fn plan_keys(query: u64, k: i64, m: u32, c: u32) -> Result<Vec<KeyProbe>, PlanError> {
    let k = check_threshold(k).map_err(PlanError::Threshold)?;
    let keys = family(m, c).map_err(PlanError::Blocks)?;
    let r = family_radius(k, m, c);
    let needed: u64 = keys.iter().map(|key| ball_size(key.width, r)).fold(0, u64::saturating_add);
    if needed > MAX_PROBES {
        return Err(PlanError::TooManyProbes { needed, k, m });
    }
    Ok(keys
        .into_iter()
        .zip(0u32..)
        .map(|(key, index)| KeyProbe { index, key, values: ball(key.lead_value(query), key.width, r) })
        .collect())
}

/// The family's keys, in its order.
pub fn family(m: u32, c: u32) -> Result<Vec<BlockKey>, BlockError> {
    if tables(m, c).is_none() {
        return Err(BlockError::BadFamily { blocks: c, count: m });
    }
    leads(m, c).into_iter().map(|lead| BlockKey::new(lead as i64, i64::from(m))).collect()
}

/// What one lookup within `k` through the family costs among `rows` fingerprints: probed values
/// and expected candidates; None when the family cannot serve k.
pub fn lookup_cost_keys(k: i64, m: u32, c: u32, rows: f64) -> Option<LookupCost> {
    let k = check_threshold(k).ok()?;
    let keys = family(m, c).ok()?;
    let r = family_radius(k, m, c);
    let mut probes = 0u64;
    let mut share = 0.0f64;
    for key in keys {
        let values = ball_size(key.width, r);
        probes = probes.saturating_add(values);
        share += values as f64 / 2f64.powi(key.width as i32);
    }
    (probes <= MAX_PROBES).then_some(LookupCost { probes, candidates: share * rows.max(0.0) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::hamming;

    const FPS: [u64; 5] = [0, u64::MAX, 0x0123_4567_89ab_cdef, 0x8000_0000_0000_0001, 0xdead_beef_0bad_f00d];

    #[test]
    fn keys_lead_with_their_blocks_and_keep_distances() {
        for m in 2..=12u32 {
            for lead in 1..(1u64 << m) - 1 {
                let key = BlockKey::new(lead as i64, i64::from(m)).unwrap();
                for &fp in &FPS {
                    let k = key.key(fp);
                    assert_eq!(key.unkey(k), fp, "m={m} lead={lead:b}");
                    // The lead value is the blocks' values, in order.
                    let mut want = 0u64;
                    for i in (0..m).filter(|i| lead >> i & 1 == 1) {
                        let b = Block::new(i64::from(i), i64::from(m)).unwrap();
                        want = (want << b.width) | b.extract(fp);
                    }
                    assert_eq!(key.lead_value(fp), want);
                    let (low, high) = key.range(want, want);
                    assert!((low..=high).contains(&k));
                    for &other in &FPS {
                        assert_eq!(hamming(k, key.key(other)), hamming(fp, other));
                    }
                }
            }
        }
        // Blocks 1 and 3 of 4 lead: 0x4567, 0xcdef, then 0x0123, 0x89ab.
        let key = BlockKey::new(0b1010, 4).unwrap();
        assert_eq!(key.key(0x0123_4567_89ab_cdef), 0x4567_cdef_0123_89ab);
        assert_eq!(key.width, 32);
        // Keys of 64 blocks reach the last bit.
        let key = BlockKey::new(1 << 63, 64).unwrap();
        assert_eq!(key.key(1), 1 << 63);
        assert_eq!(key.unkey(1 << 63), 1);
    }

    #[test]
    fn bad_keys_are_errors() {
        for (lead, count) in [(0i64, 4i64), (0b1111, 4), (0b10000, 4), (-1, 4), (1, 1), (1, 65)] {
            assert!(BlockKey::new(lead, count).is_err(), "lead={lead} count={count}");
        }
        assert_eq!(BlockKey::new(0b1111, 4), Err(BlockError::BadKey { lead: 0b1111, count: 4 }));
        assert!(family(13, 2).is_err() && family(4, 4).is_err() && family(4, 0).is_err() && family(12, 6).is_err());
        assert!(plan_keys(0, -1, 5, 2).is_err());
    }

    #[test]
    fn families_are_ordered_by_their_sets() {
        for m in 2..=MAX_KEY_BLOCKS {
            for c in 1..m {
                let Some(n) = tables(m, c) else {
                    assert!(c == 1 || choose(m, c) > MAX_KEY_TABLES, "m={m} c={c}");
                    continue;
                };
                let leads = leads(m, c);
                assert_eq!(leads.len() as u64, n);
                for (i, &lead) in leads.iter().enumerate() {
                    assert_eq!(position(lead), i as u64, "m={m} c={c} lead={lead:b}");
                }
            }
        }
        assert_eq!(tables(5, 2), Some(10));
        assert_eq!(tables(6, 3), Some(20));
        assert_eq!(tables(12, 6), None);
        assert_eq!(tables(5, 1), None);
        assert_eq!(tables(u32::MAX, u32::MAX / 2), None);
        assert_eq!(choose(64, 32), 1_832_624_140_942_590_534);
    }

    #[test]
    fn the_radius_is_the_worst_spread_of_k_bits() {
        // Every way to spread k differing bits over m blocks: the c blocks that differ least.
        fn worst(k: u32, m: u32, c: u32) -> u32 {
            fn spreads(left: u32, blocks: u32, out: &mut Vec<u32>, each: &mut dyn FnMut(&[u32])) {
                if blocks == 0 {
                    each(out);
                    return;
                }
                for e in 0..=left {
                    out.push(e);
                    spreads(left - e, blocks - 1, out, each);
                    out.pop();
                }
            }
            let mut most = 0;
            spreads(k, m, &mut Vec::new(), &mut |e| {
                let mut e = e.to_vec();
                e.sort_unstable();
                most = most.max(e[..c as usize].iter().sum());
            });
            most
        }
        for m in 2..=7 {
            for c in 1..m {
                for k in 0..=9 {
                    assert_eq!(family_radius(k, m, c), worst(k, m, c), "k={k} m={m} c={c}");
                }
            }
        }
        // The paper's cases: k = 3, keys of m - 3 blocks are exact.
        assert_eq!(family_radius(3, 5, 2), 0);
        assert_eq!(family_radius(3, 6, 3), 0);
        assert_eq!(family_radius(3, 6, 4), 1);
        // Never a division by zero blocks (found by the every-function test through SQL).
        assert_eq!(family_radius(3, 0, 3), 3);
        assert!(lookup_cost_keys(3, 0, 3, 1e3).is_none());
    }

    #[test]
    fn key_plans_find_every_fingerprint_within_k() {
        let mut rng = crate::testing::Rng::new(0x2b99_2ddf_a232_49d6);
        let mut next = || rng.next();
        for (m, c) in [(4u32, 2u32), (5, 2), (5, 3), (6, 3), (6, 2), (7, 3), (8, 3), (3, 2)] {
            for k in 0..=8i64 {
                let Ok(probes) = plan_keys(0, k, m, c) else { continue };
                assert_eq!(probes.len() as u64, tables(m, c).unwrap());
                for trial in 0..150 {
                    let q = next();
                    let mut fp = q;
                    if trial % 2 == 0 {
                        for _ in 0..k {
                            fp ^= 1 << (next() % 64);
                        }
                    } else {
                        // Spread over as many blocks as can be: one flip a block from a random one.
                        let at = next() % u64::from(m);
                        for j in 0..k as u64 {
                            let b = Block::new(((at + j) % u64::from(m)) as i64, i64::from(m)).unwrap();
                            fp ^= 1u64 << (BITS - 1 - b.start - (j / u64::from(m)) as u32 % b.width);
                        }
                    }
                    let probes = plan_keys(q, k, m, c).unwrap();
                    let found = probes.iter().any(|p| p.values.contains(&p.key.lead_value(fp)));
                    assert!(found || hamming(q, fp) > k as u32, "m={m} c={c} k={k} q={q:x} fp={fp:x}");
                }
            }
        }
        // The paper's k = 3 on 64 bits: 10 tables of 25-26 bits (2 of 5 blocks), one value each.
        let probes = plan_keys(0x0123_4567_89ab_cdef, 3, 5, 2).unwrap();
        assert_eq!(probes.len(), 10);
        assert!(probes.iter().all(|p| p.values.len() == 1 && (25..=26).contains(&p.key.width)));
    }

    #[test]
    fn families_cost_few_probes_and_few_candidates() {
        // 2 of 5 blocks at k = 3 on 1B rows: 10 exact probes, about 20 candidates each.
        let cost = lookup_cost_keys(3, 5, 2, 1e9).unwrap();
        assert_eq!(cost.probes, 10);
        assert!(cost.candidates < 300.0);
        assert!(lookup_cost_keys(3, 5, 5, 1e9).is_none());
        assert!(lookup_cost_keys(64, 5, 2, 1e9).is_none());
    }
}
