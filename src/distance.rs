//! Distances and blocks at the SQL level: `<->`, `hamming_distance`, `simhash_near`,
//! `simhash_similarity`, `simhash_cosine` and `simhash_block`. The maths is in `simhash_core`.

use pgrx::prelude::*;
use simhash_core::{blocks, distance};

use crate::errors;
use crate::fingerprint::SimHash64;

/// Number of differing bits; also the `<->` operator.
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming_distance(a: SimHash64, b: SimHash64) -> i32 {
    distance::hamming(a.0, b.0) as i32
}

/// True when `a` and `b` differ in at most `k` bits; k outside 0..64 is SQLSTATE 22023.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_near(a: SimHash64, b: SimHash64, k: i32) -> bool {
    let k = distance::check_threshold(i64::from(k)).unwrap_or_else(|e| errors::invalid_parameter(e));
    distance::within(a.0, b.0, k)
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
