//! Fingerprints from text at the SQL level: `simhash(text [, jsonb])`, `simhash_weighted` and
//! `simhash_features`. The pipeline is `simhash_core::fingerprint`; this module parses options,
//! checks arguments and lets statement_timeout and pg_cancel_backend stop long inputs.

use pgrx::prelude::*;
use simhash_core::fingerprint::{self, Feature};
use simhash_core::options::Options;
use simhash_core::overlap;

use crate::args::{utf8_element, JsonOptions, ServerText, Text};
use crate::errors;
pub(crate) use crate::memory::feature_budget;
use crate::simhash64::SimHash64;

/// Lets PostgreSQL cancel a long computation; called between chunks of text.
pub(crate) fn check_for_interrupts() {
    pgrx::check_for_interrupts!();
}

/// The options of `simhash(body, options)`; a bad one is SQLSTATE 22023 naming the key.
pub(crate) fn parse_options(options: &JsonOptions) -> Options {
    Options::from_json(&options.0).unwrap_or_else(|e| errors::invalid_parameter(e))
}

/// SimHash of a text with the default pipeline (version 1); docs/ALGORITHM.md has the spec.
#[pg_extern(immutable, strict, parallel_safe, name = "simhash", cost = 100)]
fn simhash_default(body: Text) -> SimHash64 {
    fingerprint_of(&body, &Options::default())
}

fn fingerprint_of(body: &str, opts: &Options) -> SimHash64 {
    let fp = fingerprint::simhash(body, opts, feature_budget(), &mut check_for_interrupts);
    SimHash64(fp.unwrap_or_else(|e| errors::too_large("simhash", e)))
}

/// SimHash of a text with options (tokenizer, ngram, weighting, top_k, case_fold, seed, version).
#[pg_extern(immutable, strict, parallel_safe, name = "simhash", cost = 100)]
fn simhash_with_options(body: Text, options: JsonOptions) -> SimHash64 {
    fingerprint_of(&body, &parse_options(&options))
}

/// SimHash of caller-chosen features and weights (hashed as given, summed in array order).
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_weighted(features: Array<&str>, weights: Array<f64>) -> SimHash64 {
    if features.len() != weights.len() {
        errors::invalid_parameter(format!(
            "features and weights must have the same length, got {} and {}",
            features.len(),
            weights.len()
        ));
    }
    // Read twice (the scale needs the largest weight first), element by element: no copy.
    let items = || {
        features.iter().zip(weights.iter()).enumerate().map(|(i, pair)| match pair {
            (Some(feature), Some(weight)) => (utf8_element(feature), weight),
            (None, _) => errors::invalid_parameter(format!("features must not contain NULL (element {})", i + 1)),
            (_, None) => errors::invalid_parameter(format!("weights must not contain NULL (element {})", i + 1)),
        })
    };
    let fp = fingerprint::simhash_weighted(items, 0, &mut check_for_interrupts)
        .unwrap_or_else(|e| errors::invalid_parameter(e));
    SimHash64(fp)
}

/// The text `simhash(body, options)` reads before it normalises and tokenises: `body` itself,
/// or with `{"markup": "html"}` the visible text of the page. Shows what a fingerprint is made
/// of, and which parts of a page count.
#[pg_extern(immutable, strict, parallel_safe, cost = 100)]
fn simhash_extract(body: Text, options: JsonOptions) -> ServerText {
    let opts = parse_options(&options);
    ServerText(fingerprint::read_text(&body, &opts, &mut check_for_interrupts).into_owned())
}

fn overlap_of_texts(function: &str, a: &str, b: &str, options: &JsonOptions) -> overlap::Overlap {
    let opts = parse_options(options);
    overlap::overlap(a, b, &opts, feature_budget(), &mut check_for_interrupts).unwrap_or_else(|e| errors::too_large(function, e))
}

/// Jaccard similarity of the feature sets of two texts (|A ∩ B| / |A ∪ B|, 1 for two texts
/// without features), read as `simhash(text, options)` reads them: the exact check of a pair
/// SimHash proposes. `{"ngram": 3}` gives word 3-shingles; with `{"markup": "html"}` pages are
/// compared by their visible text.
#[pg_extern(immutable, strict, parallel_safe, cost = 100)]
fn simhash_jaccard(a: Text, b: Text, options: default!(JsonOptions, "'{}'")) -> f64 {
    overlap_of_texts("simhash_jaccard", &a, &b, &options).jaccard()
}

/// Containment of the first text in the second (|A ∩ B| / |A|, 1 when the first has no
/// features), with the same features as `simhash_jaccard`: finds a text quoted whole in a
/// longer one, where Jaccard is small.
#[pg_extern(immutable, strict, parallel_safe, cost = 100)]
fn simhash_containment(a: Text, b: Text, options: default!(JsonOptions, "'{}'")) -> f64 {
    overlap_of_texts("simhash_containment", &a, &b, &options).containment()
}

/// The distinct features of a text as their 64-bit hashes, sorted: what `simhash_jaccard`
/// compares. Computed once per row and kept (a column, or a CTE), it lets a text be checked
/// against many others without being read again (`simhash_jaccard(int8[], int8[])`).
#[pg_extern(immutable, strict, parallel_safe, cost = 100)]
fn simhash_feature_set(body: Text, options: default!(JsonOptions, "'{}'")) -> Vec<i64> {
    let opts = parse_options(&options);
    let set = fingerprint::feature_set(&body, &opts, feature_budget(), &mut check_for_interrupts);
    set.unwrap_or_else(|e| errors::too_large("simhash_feature_set", e)).into_iter().map(|h| h as i64).collect()
}

/// A feature set given as an array: sorted and without duplicates as `simhash_feature_set`
/// makes it, or made so; NULL elements are SQLSTATE 22023.
fn feature_set_of(set: &Array<i64>) -> Vec<u64> {
    sorted_set(hashes_of(set))
}

/// The elements of an array of feature hashes, as unsigned; NULL elements are SQLSTATE 22023.
pub(crate) fn hashes_of(set: &Array<i64>) -> Vec<u64> {
    set.iter()
        .map(|h| h.unwrap_or_else(|| errors::invalid_parameter("a feature set must not contain NULL")) as u64)
        .collect()
}

/// Hashes as a feature set: sorted and without duplicates (already so when they come from
/// `simhash_feature_set`, which this checks first).
pub(crate) fn sorted_set(mut set: Vec<u64>) -> Vec<u64> {
    if !set.windows(2).all(|w| w[0] < w[1]) {
        set.sort_unstable();
        set.dedup();
    }
    set
}

/// The overlap of two feature sets given as arrays. Sets made by `simhash_feature_set` (no
/// NULLs, sorted as unsigned hashes) are read in place, without a copy: this runs once per
/// candidate pair of a verified `simhash_pairs`, millions of times where templates crowd.
fn overlap_of_arrays(a: &Array<i64>, b: &Array<i64>) -> overlap::Overlap {
    /// The array's elements as unsigned hashes when they already form a feature set.
    fn in_place<'a>(set: &'a Array<i64>) -> Option<&'a [u64]> {
        let signed = set.as_slice().ok()?;
        // SAFETY: i64 and u64 have the same size and alignment, and every bit pattern is a
        // valid u64; the slice borrows the array, which outlives it.
        let hashes = unsafe { std::slice::from_raw_parts(signed.as_ptr().cast::<u64>(), signed.len()) };
        hashes.windows(2).all(|w| w[0] < w[1]).then_some(hashes)
    }
    match (in_place(a), in_place(b)) {
        (Some(x), Some(y)) => overlap::Overlap::of_sets(x, y),
        _ => overlap::Overlap::of_sets(&feature_set_of(a), &feature_set_of(b)),
    }
}

/// `simhash_jaccard` of two feature sets (`simhash_feature_set`).
#[pg_extern(immutable, strict, parallel_safe, name = "simhash_jaccard", cost = 10)]
fn simhash_jaccard_sets(a: Array<i64>, b: Array<i64>) -> f64 {
    overlap_of_arrays(&a, &b).jaccard()
}

/// `simhash_containment` of two feature sets (`simhash_feature_set`).
#[pg_extern(immutable, strict, parallel_safe, name = "simhash_containment", cost = 10)]
fn simhash_containment_sets(a: Array<i64>, b: Array<i64>) -> f64 {
    overlap_of_arrays(&a, &b).containment()
}

/// Rows of `simhash_features`; pgrx needs the full return type spelt out on each function.
fn feature_rows(body: &str, opts: &Options) -> impl Iterator<Item = (ServerText, f64, SimHash64)> {
    let features = fingerprint::features(body, opts, feature_budget(), &mut check_for_interrupts);
    let features: Vec<Feature> = features.unwrap_or_else(|e| errors::too_large("simhash_features", e));
    features.into_iter().map(|f| (ServerText(f.text), f.weight, SimHash64(f.hash)))
}

/// The distinct features of a text with their weights and hashes, in the order they were first
/// seen: exactly what `simhash(body)` adds up.
#[pg_extern(immutable, strict, parallel_safe, name = "simhash_features")]
fn simhash_features_default(
    body: Text,
) -> TableIterator<'static, (name!(feature, ServerText), name!(weight, f64), name!(hash, SimHash64))> {
    TableIterator::new(feature_rows(&body, &Options::default()))
}

/// The same for `simhash(body, options)`.
#[pg_extern(immutable, strict, parallel_safe, name = "simhash_features")]
fn simhash_features_with_options(
    body: Text,
    options: JsonOptions,
) -> TableIterator<'static, (name!(feature, ServerText), name!(weight, f64), name!(hash, SimHash64))> {
    TableIterator::new(feature_rows(&body, &parse_options(&options)))
}
