//! Routes: the rows of a routed layout on a Citus cluster (docs/citus.md, "Routed lookups").
//!
//! A routed layout keeps, per fingerprint, one row per block: `(route, fp, key)`, in a table
//! distributed by `route`. A route names a block and its value, block index in the top byte and
//! value below (blocks are at most 32 bits wide), so that every block value of every block lands
//! on a shard of its own choosing by Citus's hash of the route. A lookup asks for the routes of
//! its probes ([`probe::plan`]): at k < m one route per probed block, so at most m shards, where
//! a lookup through the shards' own block indexes asks every shard.

use crate::blocks::{Block, BlockError, MAX_BLOCKS, MIN_BLOCKS};
use crate::probe::{self, PlanError};

/// Bits below the block index in a route: more than any block's width (at most 32 bits).
const INDEX_SHIFT: u32 = 56;

/// The route of value `value` of block `index`.
pub fn route(index: u32, value: u64) -> i64 {
    ((u64::from(index) << INDEX_SHIFT) | value) as i64
}

/// The m routes of `fp` in a routed layout of `m` blocks, block 0 first.
pub fn routes_of(fp: u64, m: i64) -> Result<Vec<i64>, BlockError> {
    // Block 0 of m checks m itself: m <= 0 is an error, not an empty list.
    Block::new(0, m)?;
    (0..m).map(|i| Block::new(i, m).map(|b| route(i as u32, b.extract(fp)))).collect()
}

/// The bits of each of `m` blocks, block 0 first: two fingerprints share block i exactly when
/// their XOR has none of mask i's bits (the pairs read from the routes keep a pair at the first
/// block it shares only).
pub fn block_masks(m: i64) -> Result<Vec<u64>, BlockError> {
    Block::new(0, m)?;
    (0..m)
        .map(|i| Block::new(i, m).map(|b| ((1u64 << b.width) - 1) << (64 - b.start - b.width)))
        .collect()
}

/// The routes a lookup within `k` of `query` reads in a routed layout of `m` blocks: every
/// fingerprint within k of the query has a row under one of them (the pigeonhole probes of
/// [`probe::plan`]).
pub fn probes(query: u64, k: i64, m: i64) -> Result<Vec<i64>, PlanError> {
    Ok(probe::plan(query, k, m)?
        .into_iter()
        .flat_map(|p| p.values.into_iter().map(move |v| route(p.index, v)))
        .collect())
}

/// What one Citus task costs against one index entry read and checked: a route task's fixed
/// part, 0.18 ms on a worker, against 0.19 us per entry of the routes (BENCHMARKS.md, "Routed
/// lookups on Citus": the route tasks at k = 3 and 7, run on a worker).
const TASK_IN_ENTRIES: f64 = 1000.0;
/// One B-tree descent against one entry read: about two microseconds.
const DESCENT_IN_ENTRIES: f64 = 10.0;

/// What a routed lookup through `probes` routes costs, in index entries: one task per shard of
/// the routes it asks (at most `route_shards`), each descending once per route (Citus sends
/// every shard the whole list). A lookup through the table's own shards costs a task per shard.
fn routed_cost(probes: u64, route_shards: u32) -> f64 {
    let tasks = (probes as f64).min(f64::from(route_shards.max(1)));
    tasks * (TASK_IN_ENTRIES + probes as f64 * DESCENT_IN_ENTRIES)
}

/// Whether a lookup through `probes` routes over `route_shards` shards costs less than asking
/// each of the table's `table_shards` shards (its own block indexes), by the costs above.
pub fn worth_routing(probes: u64, route_shards: u32, table_shards: u32) -> bool {
    routed_cost(probes, route_shards) < f64::from(table_shards.max(1)) * TASK_IN_ENTRIES
}

/// The block count of a routed layout for lookups up to `max_k` on `rows` rows in `shards`
/// shards: the count whose lookup at `max_k` costs least, counting one task per shard it asks
/// (at most `shards`), one index descent per route on every shard it asks (Citus sends each
/// shard the whole list of routes) and the entries it reads ([`probe::lookup_cost`]). Few
/// blocks cut the tasks, many cut the entries; at k < m a lookup asks at most k + 1 shards.
pub fn blocks_for(max_k: u32, rows: f64, shards: u32) -> Option<u32> {
    (MIN_BLOCKS..=16.min(MAX_BLOCKS))
        .filter_map(|m| {
            let cost = probe::lookup_cost(i64::from(max_k), i64::from(m), rows)?;
            Some((m, routed_cost(cost.probes, shards) + cost.candidates))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(m, _)| m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::hamming;

    #[test]
    fn routes_name_block_and_value() {
        let fp = 0x0123_4567_89ab_cdef_u64;
        let r = routes_of(fp, 4).unwrap();
        assert_eq!(r, vec![0x0123, (1 << 56) | 0x4567, (2 << 56) | 0x89ab, (3 << 56) | 0xcdef]);
        assert!(routes_of(fp, 1).is_err() && routes_of(fp, 65).is_err());
        // 64 blocks: the top index still fits (as a negative int8).
        assert_eq!(routes_of(u64::MAX, 64).unwrap()[63], ((63u64 << 56) | 1) as i64);
    }

    #[test]
    fn block_masks_cover_the_blocks() {
        for m in [0, -1, 1, 65, i64::MIN] {
            assert_eq!(block_masks(m), Err(BlockError::BadCount(m)), "{m}");
            assert_eq!(routes_of(0, m), Err(BlockError::BadCount(m)), "{m}");
        }
        let masks = block_masks(4).unwrap();
        assert_eq!(masks, vec![0xffff << 48, 0xffff << 32, 0xffff << 16, 0xffff]);
        for m in [2i64, 3, 5, 7, 16] {
            let masks = block_masks(m).unwrap();
            assert_eq!(masks.iter().fold(0, |a, b| a | b), u64::MAX);
            assert_eq!(masks.iter().map(|x| x.count_ones()).sum::<u32>(), 64);
            let fp = 0x0123_4567_89ab_cdef_u64;
            for (i, mask) in masks.iter().enumerate() {
                let block = Block::new(i as i64, m).unwrap();
                assert_eq!((fp & mask) >> (64 - block.start - block.width), block.extract(fp));
            }
        }
    }

    #[test]
    fn probes_find_every_fingerprint_within_k() {
        // Every fingerprint within k shares a route with the query's probes: brute force on
        // fingerprints 0..k bits away in random places.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for m in [2i64, 3, 4, 5, 8, 16] {
            for k in 0..=8i64 {
                for _ in 0..200 {
                    let q = next();
                    let mut fp = q;
                    for _ in 0..k {
                        fp ^= 1 << (next() % 64);
                    }
                    assert!(hamming(q, fp) <= k as u32);
                    let probes = probes(q, k, m).unwrap();
                    let rows = routes_of(fp, m).unwrap();
                    assert!(rows.iter().any(|r| probes.contains(r)), "m = {m}, k = {k}");
                }
            }
        }
    }

    #[test]
    fn routing_pays_while_it_asks_fewer_shards() {
        // k = 3 on 4 blocks: 4 routes on 32 shards of routes against 32 of the table.
        assert!(worth_routing(4, 32, 32));
        // k = 7 on 4 blocks: 68 routes ask every one of 32 shards, each descending 68 times.
        assert!(!worth_routing(68, 32, 32));
        // The same on 2 shards of routes (one per worker): 2 tasks.
        assert!(worth_routing(68, 2, 32));
        assert!(!worth_routing(5000, 2, 32));
    }

    #[test]
    fn below_m_one_route_per_block() {
        for k in 0..4 {
            assert_eq!(probes(7, k, 4).unwrap().len(), (k + 1) as usize);
        }
        assert_eq!(probes(7, 7, 4).unwrap().len(), 4 * 17);
        // k = 3: one route per block of four 16-bit blocks, from a million rows up.
        assert_eq!(blocks_for(3, 1e6, 32), Some(4));
        assert_eq!(blocks_for(3, 1e7, 32), Some(4));
        // k = 7 on 32 shards: 4 blocks (68 routes, every shard, few entries) rather than 8
        // (8 shards, but 39,000 entries per 8-bit block value at 10M rows).
        assert_eq!(blocks_for(7, 1e7, 32), Some(4));
        // A billion rows: 16-bit blocks would read 61,000 entries; 3 blocks of 21-22 bits read
        // 6,400 through 25 routes.
        assert_eq!(blocks_for(3, 1e9, 32), Some(3));
    }
}
