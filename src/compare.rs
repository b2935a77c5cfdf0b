//! Comparison and hashing support for the B-tree and hash opclasses.
//!
//! Order is unsigned, so it matches the hex text (`'8000000000000000' > '7fffffffffffffff'`);
//! this is what makes ORDER BY, merge joins and UNIQUE indexes agree with what users read.

use pgrx::prelude::*;
use simhash_core::hashing;

use crate::simhash64::SimHash64;

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_eq(a: SimHash64, b: SimHash64) -> bool {
    a == b
}

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_ne(a: SimHash64, b: SimHash64) -> bool {
    a != b
}

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_lt(a: SimHash64, b: SimHash64) -> bool {
    a < b
}

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_le(a: SimHash64, b: SimHash64) -> bool {
    a <= b
}

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_gt(a: SimHash64, b: SimHash64) -> bool {
    a > b
}

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_ge(a: SimHash64, b: SimHash64) -> bool {
    a >= b
}

/// B-tree support function 1: -1, 0 or 1 in unsigned order.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_cmp(a: SimHash64, b: SimHash64) -> i32 {
    a.cmp(&b) as i32
}

/// Hash support function 1 (hash joins, hash aggregation, hash indexes).
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_hash(fp: SimHash64) -> i32 {
    hashing::hash32(fp.0) as i32
}

/// Hash support function 2 (hash partitioning, parallel hash); seed 0 agrees with function 1.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_hash_extended(fp: SimHash64, seed: i64) -> i64 {
    hashing::hash64(fp.0, seed as u64) as i64
}
