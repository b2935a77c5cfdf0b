//! An in-memory block index over a batch of fingerprints: "which members lie within k bits of
//! this one?" without comparing with every member.
//!
//! The same pigeonhole as the block indexes in the database (`probe`): cut into m blocks, a
//! member within k bits of a query has a block within the radius `probe::radii` gives of the
//! query's, so only the members in those buckets are compared. m is chosen for the batch's size
//! by `probe::lookup_cost`. Two users: the in-batch half of `simhash_ingest` (`dedup`), which
//! grows the set row by row, and its one pass over a big target (`simhash_ingest` reading a
//! covering block index whole), which asks once per target row.
//!
//! Exact for every k: where no block count serves k within `probe::MAX_PROBES` probes, or
//! where that costs more, a query is compared with every member.

use rustc_hash::FxHashMap;

use crate::blocks::Block;
use crate::memory::{room, vec_with_room, MemoryError, Meter};
use crate::distance::hamming;
use crate::probe::{ball, lookup_cost, radii};

/// Block counts tried, the cheapest for k and the batch size chosen.
const BLOCK_COUNTS: [i64; 6] = [2, 3, 4, 6, 8, 16];

/// One probed block: where it lies, and the XOR masks of every value within its radius of the
/// query's (computed once, so that a query allocates nothing).
struct ProbedBlock {
    index: u32,
    block: Block,
    radius: u32,
    masks: Vec<u64>,
}

/// Members (row number, fingerprint) to compare with a query within `k` bits.
pub struct NearSet {
    k: u32,
    /// None: compare with every member (no block count serves k).
    blocks: Option<Vec<ProbedBlock>>,
    buckets: FxHashMap<(u32, u64), Vec<(u32, u64)>>,
    all: Vec<(u32, u64)>,
    /// After `freeze`: the buckets as direct-addressed tables, one per probed block.
    frozen: Option<Vec<Table>>,
}

/// Bytes a member takes in one probed block's buckets, counted generously: its entry, and the
/// bucket's map slot and vector when it is the bucket's first (random fingerprints mostly have
/// buckets of their own).
const MEMBER_BYTES_PER_BLOCK: usize = 96;

/// A probed block's buckets laid out for lookups by value: the members of bucket v are
/// `members[offsets[v]..offsets[v + 1]]`, and bit v of `occupied` says whether there are any.
/// A pass asks a batch once per row of a big table, and most of its buckets are empty: the
/// bitmap (8 KiB for a 16-bit block) stays in the processor's cache and answers those without a
/// memory access, where a hash map costs two.
struct Table {
    occupied: Vec<u64>,
    offsets: Vec<u32>,
    members: Vec<(u32, u64)>,
}

/// Widest block `freeze` lays out directly (its offsets take 4 bytes per value).
const MAX_TABLE_BITS: u32 = 20;

impl Table {
    /// `count` members laid out by their value of `block` (at most `MAX_TABLE_BITS` wide): a
    /// counting sort, two passes, members of one value in the order given.
    fn build<I>(block: &Block, members: I, count: usize) -> Result<Table, MemoryError>
    where
        I: Iterator<Item = (u32, u64)> + Clone,
    {
        // At most 2^MAX_TABLE_BITS values: 4 MB of offsets (and as much again while filling).
        let values = 1usize << block.width;
        let mut occupied = vec![0u64; values.div_ceil(64)];
        let mut offsets = vec![0u32; values + 1];
        for (_, fp) in members.clone() {
            offsets[block.extract(fp) as usize + 1] += 1;
        }
        for v in 0..values {
            offsets[v + 1] += offsets[v];
        }
        let mut laid: Vec<(u32, u64)> = vec_with_room(count)?;
        laid.resize(count, (0, 0));
        let mut next = offsets.clone();
        for (row, fp) in members {
            let v = block.extract(fp) as usize;
            occupied[v / 64] |= 1 << (v % 64);
            laid[next[v] as usize] = (row, fp);
            next[v] += 1;
        }
        Ok(Table { occupied, offsets, members: laid })
    }
}

/// The block count `NearSet` uses for `k` among about `rows` members, with a query's cost;
/// None when comparing with every member costs less (or no block count serves k).
fn block_count(k: u32, rows: f64) -> Option<(i64, f64)> {
    BLOCK_COUNTS
        .iter()
        .filter_map(|&m| lookup_cost(i64::from(k), m, rows).map(|c| (m, c.score())))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .filter(|&(_, cost)| cost < rows)
}

/// What a probe of a laid-out table costs in a set held long and asked often (`near_index`),
/// in member comparisons: a probe is a random memory access (bitmap, offsets, then the members),
/// a comparison a sequential 16-byte read and a popcount; about 20 to 1. Measured on 1M random
/// members at k = 7: 4 blocks of 16 bits (68 probes, about 1,000 comparisons) keep a row in
/// 34 us and hold 93 bytes a member, where 3 blocks of 21-22 bits (762 hash-map probes, 180
/// comparisons), which `block_count` prefers by the database's rule of a probe per comparison,
/// took 64 us and 506 bytes.
const COMPARISONS_PER_PROBE: f64 = 20.0;

/// The block count for a set held long and asked often: only counts whose blocks `freeze` lays
/// out as tables, a probe weighed as `COMPARISONS_PER_PROBE`; None when comparing with every
/// member costs less.
fn laid_out_block_count(k: u32, rows: f64) -> Option<i64> {
    BLOCK_COUNTS
        .iter()
        .filter(|&&m| (0..m).all(|i| Block::new(i, m).is_ok_and(|b| b.width <= MAX_TABLE_BITS)))
        .filter_map(|&m| lookup_cost(i64::from(k), m, rows).map(|c| (m, c.probes as f64 * COMPARISONS_PER_PROBE + c.candidates)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .filter(|&(_, cost)| cost < rows)
        .map(|(m, _)| m)
}

impl NearSet {
    /// An empty set for queries within `k` bits, its buckets sized for about `rows` members.
    pub fn new(k: u32, rows: usize) -> NearSet {
        NearSet::with_blocks(k, block_count(k, rows as f64).map(|(m, _)| m))
    }

    /// An empty set like `new`, its block count chosen for a set held long and asked often
    /// (`laid_out_block_count`): the growing part of a `near_index::NearIndex`.
    pub fn new_laid_out(k: u32, rows: usize) -> NearSet {
        NearSet::with_blocks(k, laid_out_block_count(k, rows as f64))
    }

    /// An empty set probing `m` blocks (None: comparing with every member).
    fn with_blocks(k: u32, m: Option<i64>) -> NearSet {
        let blocks = m.map(|m| {
            radii(k, m as u32)
                .into_iter()
                .zip(0u32..)
                .filter_map(|(r, index)| {
                    let radius = r?;
                    let block = Block::new(i64::from(index), m).ok()?;
                    Some(ProbedBlock { index, block, radius, masks: ball(0, block.width, radius) })
                })
                .collect()
        });
        NearSet { k, blocks, buckets: FxHashMap::default(), all: Vec::new(), frozen: None }
    }

    /// The set of `fps` (row i is `fps[i]`; NULLs are left out), frozen for many queries, its
    /// members counted on `meter`.
    pub fn of(fps: &[Option<u64>], k: u32, meter: &mut Meter) -> Result<NearSet, MemoryError> {
        let members = fps.iter().enumerate().filter_map(|(row, fp)| fp.map(|fp| (row as u32, fp)));
        NearSet::new(k, fps.len()).fill(members.clone(), members.count(), meter)
    }

    /// The frozen set of `members` (row number, fingerprint) with the block count of
    /// `new_laid_out`: the frozen part of a `near_index::NearIndex`, 16 bytes a member a block.
    pub fn laid_out_of<I>(members: I, k: u32, meter: &mut Meter) -> Result<NearSet, MemoryError>
    where
        I: Iterator<Item = (u32, u64)> + Clone,
    {
        let count = members.clone().count();
        NearSet::new_laid_out(k, count).fill(members, count, meter)
    }

    /// Puts the `count` members of an empty set in, and freezes it. Where every probed block is
    /// at most `MAX_TABLE_BITS` wide the tables are laid out straight from the members (16 bytes
    /// a member a block); otherwise the members go through the buckets.
    fn fill<I>(mut self, members: I, count: usize, meter: &mut Meter) -> Result<NearSet, MemoryError>
    where
        I: Iterator<Item = (u32, u64)> + Clone,
    {
        let set = &mut self;
        match &set.blocks {
            Some(blocks) if blocks.iter().all(|b| b.block.width <= MAX_TABLE_BITS) => {
                meter.add(count.saturating_mul(blocks.len() * std::mem::size_of::<(u32, u64)>()))?;
                let tables =
                    blocks.iter().map(|b| Table::build(&b.block, members.clone(), count)).collect::<Result<Vec<Table>, _>>()?;
                set.frozen = Some(tables);
            }
            _ => {
                for (row, fp) in members {
                    set.insert(row, fp, meter)?;
                }
                set.freeze()?;
            }
        }
        Ok(self)
    }

    /// Lays the buckets out for lookups by value (`Table`) when every probed block is at most
    /// `MAX_TABLE_BITS` wide; no member may be inserted after.
    fn freeze(&mut self) -> Result<(), MemoryError> {
        let Some(blocks) = &self.blocks else { return Ok(()) };
        if blocks.iter().any(|b| b.block.width > MAX_TABLE_BITS) {
            return Ok(());
        }
        let tables = blocks
            .iter()
            .map(|b| {
                let buckets = self.buckets.iter().filter(|((i, _), _)| *i == b.index);
                let held: usize = buckets.clone().map(|(_, m)| m.len()).sum();
                Table::build(&b.block, buckets.flat_map(|(_, m)| m.iter().copied()), held)
            })
            .collect::<Result<Vec<Table>, MemoryError>>()?;
        self.frozen = Some(tables);
        self.buckets = FxHashMap::default();
        Ok(())
    }

    /// Adds member `row` with fingerprint `fp`, counted on `meter` (several sets may share one):
    /// [`MemoryError`] past its limit, or when an allocation fails.
    pub fn insert(&mut self, row: u32, fp: u64, meter: &mut Meter) -> Result<(), MemoryError> {
        assert!(self.frozen.is_none(), "NearSet: insert after freeze");
        match &self.blocks {
            Some(blocks) => {
                meter.add(blocks.len() * MEMBER_BYTES_PER_BLOCK)?;
                for b in blocks {
                    self.buckets
                        .try_reserve(1)
                        .map_err(|_| MemoryError::OutOfMemory { bytes: self.buckets.capacity().saturating_mul(48) })?;
                    let bucket = self.buckets.entry((b.index, b.block.extract(fp))).or_default();
                    room(bucket, 1)?;
                    bucket.push((row, fp));
                }
            }
            None => {
                meter.add(std::mem::size_of::<(u32, u64)>())?;
                room(&mut self.all, 1)?;
                self.all.push((row, fp));
            }
        }
        Ok(())
    }

    /// Hands each member within `k` bits of `query` to `near`, once (a member found through
    /// several blocks counts for the first only), until `near` returns true; whether it did.
    #[inline]
    pub fn find(&self, query: u64, near: &mut impl FnMut(u32, u64) -> bool) -> bool {
        let Some(blocks) = &self.blocks else {
            return self.all.iter().any(|&(row, fp)| hamming(fp, query) <= self.k && near(row, fp));
        };
        for (i, b) in blocks.iter().enumerate() {
            let own = b.block.extract(query);
            for &mask in &b.masks {
                let value = own ^ mask;
                let members: &[(u32, u64)] = match &self.frozen {
                    Some(tables) => {
                        let t = &tables[i];
                        let v = value as usize;
                        if t.occupied[v / 64] & (1 << (v % 64)) == 0 {
                            continue;
                        }
                        &t.members[t.offsets[v] as usize..t.offsets[v + 1] as usize]
                    }
                    None => match self.buckets.get(&(b.index, value)) {
                        Some(bucket) => bucket,
                        None => continue,
                    },
                };
                for &(row, fp) in members {
                    if hamming(fp, query) > self.k {
                        continue;
                    }
                    // Found through an earlier block already?
                    let earlier = blocks[..i]
                        .iter()
                        .any(|e| hamming(e.block.extract(fp), e.block.extract(query)) <= e.radius);
                    if !earlier && near(row, fp) {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// Whether some member lies within `k` bits of `query`.
    pub fn any_near(&self, query: u64) -> bool {
        self.find(query, &mut |_, _| true)
    }
}

/// What one query of a `NearSet` of `rows` members costs, in the units of
/// `probe::LookupCost::score` (bucket probes plus members compared): `simhash_ingest` weighs a
/// pass over its target, one query per target row, against its other ways.
pub fn query_cost(k: u32, rows: f64) -> f64 {
    block_count(k, rows).map_or(rows.max(1.0), |(_, cost)| cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(n: usize, seed: u64) -> Vec<Option<u64>> {
        let mut x = seed;
        let mut out: Vec<Option<u64>> = Vec::new();
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.push(match x % 7 {
                0 => None,
                1 | 2 if i > 0 => out[(x as usize >> 8) % i].map(|fp| fp ^ (1 << (x % 64)) ^ (1 << ((x >> 6) % 64))),
                _ => Some(x),
            });
        }
        out
    }

    #[test]
    fn finds_exactly_the_members_within_k_each_once() {
        let members = random(3000, 11);
        let queries = random(300, 12);
        for k in [0u32, 1, 2, 3, 4, 7, 9, 13, 24, 40, 64] {
            // Frozen (the pass) and grown member by member (the in-batch rule): the same.
            let mut grown = NearSet::new(k, members.len());
            let mut meter = Meter::unlimited("test");
            for (i, fp) in members.iter().enumerate() {
                if let Some(fp) = fp {
                    grown.insert(i as u32, *fp, &mut meter).unwrap();
                }
            }
            for set in [NearSet::of(&members, k, &mut meter).unwrap(), grown] {
                for q in queries.iter().flatten().chain(members.iter().flatten().take(200)) {
                    let mut got = Vec::new();
                    set.find(*q, &mut |row, _| {
                        got.push(row);
                        false
                    });
                    got.sort_unstable();
                    let want: Vec<u32> = members
                        .iter()
                        .enumerate()
                        .filter(|(_, fp)| fp.is_some_and(|fp| hamming(fp, *q) <= k))
                        .map(|(i, _)| i as u32)
                        .collect();
                    assert_eq!(got, want, "k {k}");
                    assert_eq!(set.any_near(*q), !want.is_empty());
                }
            }
        }
    }

    #[test]
    fn members_past_the_limit_are_an_error() {
        let members = random(3000, 11);
        let mut small = Meter::new("a batch", 100_000);
        assert_eq!(NearSet::of(&members, 3, &mut small).err(), Some(MemoryError::OverBudget { what: "a batch", limit: 100_000 }));
        assert!(NearSet::of(&members, 64, &mut Meter::new("a batch", 100_000)).is_ok(), "k 64 keeps 12 bytes a member");
    }

    #[test]
    fn sets_held_long_probe_blocks_laid_out_as_tables() {
        // At 1M members and k = 7 the database's rule takes 3 blocks of 21-22 bits (hash-map
        // buckets); a set held long takes 4 blocks of 16 (tables).
        assert_eq!(block_count(7, 1e6).map(|(m, _)| m), Some(3));
        assert_eq!(laid_out_block_count(7, 1e6), Some(4));
        assert_eq!(laid_out_block_count(3, 1e6), Some(4));
        assert_eq!(laid_out_block_count(7, 100.0), None, "a small set is compared whole");
        let set = NearSet::laid_out_of(random(5000, 3).into_iter().flatten().enumerate().map(|(i, fp)| (i as u32, fp)), 7, &mut Meter::unlimited("t")).unwrap();
        assert!(set.frozen.is_some());
    }

    #[test]
    fn costs_grow_with_k_and_stay_below_a_full_comparison() {
        assert!(query_cost(3, 50_000.0) < 50.0);
        assert!(query_cost(3, 50_000.0) < query_cost(7, 50_000.0));
        assert_eq!(query_cost(64, 10.0), 10.0);
    }
}
