//! Sets of seeded fingerprints at the SQL level: `simhash_set(text, b [, options])` makes them,
//! `simhash_near_any`, `simhash_set_distance` and `<->` compare them. (Not overloads of
//! `simhash_near` and `hamming_distance`: with two untyped literals, `simhash_near('…', '…', 3)`,
//! PostgreSQL could not choose between `simhash64` and `simhash64[]` and released calls would
//! fail.)
//!
//! One 64-bit SimHash of a short text is coarse: one changed character among fifty flips about
//! a tenth of its bits, so a near-copy often lands beyond the k an index serves. b fingerprints
//! of the same features with different seeds are b independent draws around the same angle;
//! calling two texts near when any same-position pair is within k finds far more near-copies at
//! a small k, while unrelated texts stay far apart in every one (LSH amplification). A set is a
//! `simhash64[]`, element i made with seed `seed + i - 1`, so element 1 is `simhash(text,
//! options)` itself. The block-index lookup for sets is in `planner.rs` and `index_probe.rs`.

#[allow(unused_imports)] // named by the support attribute of simhash_set_distance
use crate::distance_bounds::simhash_distance_support;
use pgrx::prelude::*;
use simhash_core::distance;
use simhash_core::fingerprint;
use simhash_core::options::Options;

use crate::args::{JsonOptions, Text};
use crate::errors;
use crate::simhash64::SimHash64;
use crate::text::{check_for_interrupts, feature_budget, parse_options};
#[allow(unused_imports)] // named by the support attribute of simhash_near
use crate::planner::simhash_near_support;

fn set(body: &str, b: i32, opts: &Options) -> Vec<SimHash64> {
    let fps = fingerprint::simhash_set(body, opts, i64::from(b), feature_budget(), &mut check_for_interrupts)
        .unwrap_or_else(|e| match e {
            fingerprint::SetError::Size(e) => errors::invalid_parameter(format!("simhash_set: {e}")),
            fingerprint::SetError::TooLarge(e) => errors::too_large("simhash_set", e),
        });
    fps.into_iter().map(SimHash64).collect()
}

/// `b` fingerprints of a text with the default pipeline, seeds 0 .. b-1.
#[pg_extern(immutable, strict, parallel_safe, name = "simhash_set", cost = 100)]
fn simhash_set_default(body: Text, b: i32) -> Vec<SimHash64> {
    set(&body, b, &Options::default())
}

/// `b` fingerprints of a text with options, seeds `seed` .. `seed + b - 1`.
#[pg_extern(immutable, strict, parallel_safe, name = "simhash_set", cost = 100)]
fn simhash_set_with_options(body: Text, b: i32, options: JsonOptions) -> Vec<SimHash64> {
    set(&body, b, &parse_options(&options))
}

/// A set's elements as they come, without a copy.
fn elements<'a>(set: &'a Array<SimHash64>) -> impl Iterator<Item = Option<u64>> + 'a {
    set.iter().map(|fp| fp.map(|fp| fp.0))
}

/// The smallest distance between same-position fingerprints of two sets (up to the shorter
/// set); NULL when no position has a fingerprint in both. Also `<->` on sets.
#[pg_extern(immutable, strict, parallel_safe, support = simhash_distance_support)]
fn simhash_set_distance(a: Array<SimHash64>, b: Array<SimHash64>) -> Option<i32> {
    distance::min_hamming(elements(&a), elements(&b)).map(|d| d as i32)
}

/// True when some same-position pair of the two sets is within `k` bits: `simhash_set_distance(a,
/// b) <= k`. k outside 0..64 is SQLSTATE 22023. Its support function (simhash_near's) lets `WHERE
/// simhash_near_any(fps, q, k)` use the block indexes of every element (`planner.rs`).
#[pg_extern(immutable, strict, parallel_safe, support = simhash_near_support)]
fn simhash_near_any(a: Array<SimHash64>, b: Array<SimHash64>, k: i32) -> Option<bool> {
    let k = distance::check_threshold(i64::from(k)).unwrap_or_else(|e| errors::invalid_parameter(e));
    distance::min_hamming(elements(&a), elements(&b)).map(|d| d <= k)
}
