//! Distances and blocks at the SQL level: `<->`, `hamming_distance`, `simhash_near`,
//! `simhash_similarity`, `simhash_cosine` and `simhash_block`. The maths is in `simhash_core`.

use pgrx::prelude::*;
use simhash_core::{blocks, distance, probe};

use crate::errors;
use crate::simhash64::SimHash64;
#[allow(unused_imports)] // named by the support attribute of hamming_distance
use crate::distance_bounds::simhash_distance_support;
#[allow(unused_imports)] // named by the support attribute of simhash_near
use crate::planner::simhash_near_support;

/// Number of differing bits; also the `<->` operator. Its support function loads the library
/// in time to rewrite `fp <-> q <= k` (`distance_bounds.rs`).
#[pg_extern(immutable, strict, parallel_safe, support = simhash_distance_support)]
fn hamming_distance(a: SimHash64, b: SimHash64) -> i32 {
    distance::hamming(a.0, b.0) as i32
}

/// True when `a` and `b` differ in at most `k` bits; k outside 0..64 is SQLSTATE 22023. Its
/// support function lets `WHERE simhash_near(fp, q, k)` use block indexes (`planner.rs`).
#[pg_extern(immutable, strict, parallel_safe, support = simhash_near_support)]
fn simhash_near(a: SimHash64, b: SimHash64, k: i32) -> bool {
    let k = distance::check_threshold(i64::from(k)).unwrap_or_else(|e| errors::invalid_parameter(e));
    distance::within(a.0, b.0, k)
}

/// How many pairs of rows lie at each distance, 0 to 64 (element d + 1 of the result): every
/// pair of the rows of `fps`, each row `width` elements in a row (a set's fingerprints; 1 for a
/// fingerprint column), a set's distance its nearest same-position pair's.
/// `simhash_k_report` reads what k means on a table's own rows from it. More than
/// 100,000 rows, a `width` outside 1..64, a length that is not whole rows or a NULL element is
/// SQLSTATE 22023; a cancel stops it.
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_distance_histogram", cost = 1000)]
fn distance_histogram(fps: Array<SimHash64>, width: i32) -> Vec<i64> {
    let width = usize::try_from(width)
        .ok()
        .filter(|w| (1..=distance::BITS as usize).contains(w))
        .unwrap_or_else(|| errors::invalid_parameter(format!("width must be between 1 and 64, got {width}")));
    if fps.len() / width > distance::MAX_HISTOGRAM_ROWS {
        errors::invalid_parameter(format!("at most {} rows, got {}", distance::MAX_HISTOGRAM_ROWS, fps.len() / width));
    }
    // bounded: at most MAX_HISTOGRAM_ROWS rows of at most 64 fingerprints (51 MB), allocated fallibly.
    let mut values = simhash_core::memory::vec_with_room(fps.len())
        .unwrap_or_else(|e| errors::memory("_simhash_distance_histogram", e));
    values.extend(
        fps.iter()
            .map(|fp| fp.map(|fp| fp.0).unwrap_or_else(|| errors::invalid_parameter("the fingerprints must not contain NULL"))),
    );
    let counts = distance::distance_histogram(&values, width, crate::text::check_for_interrupts)
        .unwrap_or_else(|e| errors::invalid_parameter(e));
    counts.iter().map(|&c| c as i64).collect()
}

/// `1 - d/64`.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_similarity(a: SimHash64, b: SimHash64) -> f64 {
    distance::similarity(a.0, b.0)
}

/// `cos(pi * d / 64)`, Charikar's estimate of the cosine of the underlying feature vectors.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_cosine(a: SimHash64, b: SimHash64) -> f64 {
    distance::cosine(a.0, b.0)
}

/// The unsigned value of block `i` of `m` (layout in `simhash_core::blocks` and the README);
/// the block columns of the index helpers store exactly this.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_block(fp: SimHash64, i: i32, m: i32) -> i64 {
    let block = blocks::Block::new(i64::from(i), i64::from(m)).unwrap_or_else(|e| errors::invalid_parameter(e));
    block.extract(fp.0) as i64
}

/// `fp` rotated left so that block `i` of `m` leads, as int8: the key of a permuted block
/// index (`simhash_core::blocks::Block::permute`). One such B-tree per block serves the
/// pigeonhole lookup as key-prefix ranges and holds the whole fingerprint, so it needs no block
/// column and no INCLUDE column: 16-byte index tuples instead of 24.
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_permute")]
fn simhash_permute(fp: SimHash64, i: i32, m: i32) -> i64 {
    let block = blocks::Block::new(i64::from(i), i64::from(m)).unwrap_or_else(|e| errors::invalid_parameter(e));
    block.permute(fp.0) as i64
}

/// `fp` with the blocks of `m` in the set `lead` (bit i for block i) first, then the others, as
/// int8: the key of one table of a family of keys of several blocks
/// (`simhash_core::keys::BlockKey`). A permutation of the bits, like `_simhash_permute`, so the
/// index holds the whole fingerprint and the probe checks distances on its keys.
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_block_key")]
fn simhash_block_key(fp: SimHash64, lead: i64, m: i32) -> i64 {
    let key = simhash_core::keys::BlockKey::new(lead, i64::from(m)).unwrap_or_else(|e| errors::invalid_parameter(e));
    key.key(fp.0) as i64
}

/// Every value within `r` bits of block `i` of `m` of `fp`, the block's own value first: the
/// values a block index is probed with when k >= m (multi-index hashing). A radius below 0, or one
/// giving more than 65,536 values, is SQLSTATE 22023.
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_block_ball")]
fn simhash_block_ball(fp: SimHash64, i: i32, m: i32, r: i32) -> Vec<i64> {
    let block = blocks::Block::new(i64::from(i), i64::from(m)).unwrap_or_else(|e| errors::invalid_parameter(e));
    let max = probe::max_radius(block.width);
    let r = u32::try_from(r).ok().filter(|r| *r <= max).unwrap_or_else(|| {
        errors::invalid_parameter(format!(
            "radius must be between 0 and {max} for a {}-bit block, got {r}",
            block.width
        ))
    });
    probe::ball(block.extract(fp.0), block.width, r).into_iter().map(|v| v as i64).collect()
}
