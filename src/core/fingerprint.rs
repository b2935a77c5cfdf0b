//! Steps 3-5 of the text pipeline: tokens to features (shingles), weights, and the SimHash vote.
//!
//! Charikar's SimHash: every feature is hashed to 64 bits (xxh3-64); for each bit position the
//! weights of features with a 1 there are added and those with a 0 subtracted; the fingerprint
//! has a 1 where the sum is positive. Weights are fixed-point integers, so the sums are exact and
//! the fingerprint does not depend on the order of additions.


use std::collections::BinaryHeap;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::feature_table::{self, Budget, Distinct, Part, Stop, TooLarge};
use crate::idf::{idf, MEDIAN_IDF, WEIGHT_SCALE};
use crate::normalize::{for_each_chunk, CHUNK_BYTES};
use crate::options::{Markup, Options, Weighting};
use crate::tokenize::chunk_tokens;
#[cfg(test)]
use crate::tokenize::tokens;

/// One distinct feature of a text, as `simhash_features` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    pub text: String,
    /// The weight it votes with (TF, TF×IDF or 1), in real units.
    pub weight: f64,
    pub hash: u64,
}

/// The 64 running sums of the vote, kept as per-nibble histograms: adding a feature costs 16
/// additions instead of 64, and `finish` turns the histograms into the 64 sums exactly.
/// i64 holds any text PostgreSQL can store: a weight is at most about 2^21 units per occurrence
/// and a 1 GB text has fewer than 2^30 occurrences.
#[derive(Debug, Clone, Default)]
pub struct Votes {
    /// `nibbles[p][v]`: total weight of features whose nibble p (bits 4p..4p+3) equals v.
    nibbles: [[i64; 16]; 16],
    total: i64,
}

impl Votes {
    /// Adds one feature's vote.
    #[inline]
    pub fn add(&mut self, hash: u64, weight: i64) {
        self.total += weight;
        for (p, hist) in self.nibbles.iter_mut().enumerate() {
            hist[((hash >> (4 * p)) & 15) as usize] += weight;
        }
    }

    /// Bit j is 1 where (ones - zeros) = 2·ones - total is positive, ones being the total weight
    /// of features with a 1 at bit j.
    pub fn finish(&self) -> u64 {
        let mut fp = 0u64;
        for (p, hist) in self.nibbles.iter().enumerate() {
            for b in 0..4 {
                let ones: i64 = hist.iter().enumerate().filter(|(v, _)| (v >> b) & 1 == 1).map(|(_, w)| w).sum();
                if 2 * ones > self.total {
                    fp |= 1 << (4 * p + b);
                }
            }
        }
        fp
    }
}

/// Loads jieba's dictionary and IDF table now rather than on the first Han text that needs them
/// (about 0.2 s and 80 MB). Called in a process that later forks (PostgreSQL's postmaster, with
/// `shared_preload_libraries`), it lets every child share those pages instead of loading its own.
pub fn preload() {
    crate::idf::preload();
    std::hint::black_box(crate::tokenize::JIEBA.cut("预加载", false).len());
}

/// Hash of a feature's UTF-8 bytes.
#[inline]
pub fn feature_hash(feature: &str, seed: u64) -> u64 {
    xxh3_64_with_seed(feature.as_bytes(), seed)
}

/// Step 0: the text the pipeline reads, `text` itself unless the options say it is markup
/// (`markup::visible_text`). `simhash_extract` shows it.
pub fn read_text<'a>(text: &'a str, opts: &Options, check: &mut dyn FnMut()) -> std::borrow::Cow<'a, str> {
    match opts.markup {
        Markup::None => std::borrow::Cow::Borrowed(text),
        Markup::Html => std::borrow::Cow::Owned(crate::markup::visible_text(text, check)),
        Markup::HtmlMain => std::borrow::Cow::Owned(crate::markup::main_text(text, check)),
    }
}

/// Runs steps 1-3 and calls `emit(feature, idf_units)` for every feature occurrence, in text
/// order, until `emit` returns false; `check` runs between chunks (cancellation).
fn for_each_feature(text: &str, opts: &Options, check: &mut dyn FnMut(), emit: impl FnMut(&str, i64) -> bool) {
    let read = read_text(text, opts, check);
    features_of_read_text(&read, opts, check, emit);
}

/// Steps 1-3 on a text already read (`read_text`): a text read several times (the passes of
/// `feature_table`) has its markup parsed once.
fn features_of_read_text(text: &str, opts: &Options, check: &mut dyn FnMut(), mut emit: impl FnMut(&str, i64) -> bool) {
    let tfidf = opts.weighting == Weighting::TfIdf;
    let median = if tfidf { MEDIAN_IDF } else { 0 };
    let n = opts.ngram;
    // The last n tokens and their IDFs, oldest first; kept across chunks. n is at most MAX_NGRAM.
    let mut window: std::collections::VecDeque<(String, i64)> = std::collections::VecDeque::with_capacity(n);
    let mut spare: Vec<String> = Vec::new();
    let mut shingle = String::new();
    let mut going = true;
    for_each_chunk(text, opts.case_fold, CHUNK_BYTES, |chunk| {
        if !going {
            return;
        }
        check();
        chunk_tokens(chunk, opts.tokenizer, |token, han| {
            if !going {
                return;
            }
            let unit = match (tfidf, han) {
                (false, _) => WEIGHT_SCALE,
                (true, false) => median,
                (true, true) => idf(token, true),
            };
            if n == 1 {
                going = emit(token, unit);
                return;
            }
            if window.len() == n {
                if let Some((old, _)) = window.pop_front() {
                    spare.push(old);
                }
            }
            let mut owned = spare.pop().unwrap_or_default();
            owned.clear();
            owned.push_str(token);
            window.push_back((owned, unit));
            if window.len() == n {
                let unit = join_shingle(&window, tfidf, &mut shingle);
                going = emit(&shingle, unit);
            }
        });
    });
    // A text with fewer tokens than n still has content: its one feature is all its tokens.
    if going && n > 1 && !window.is_empty() && window.len() < n {
        let unit = join_shingle(&window, tfidf, &mut shingle);
        emit(&shingle, unit);
    }
}

/// Writes the tokens of `window` joined by single spaces into `out` and returns the shingle's
/// unit weight: the rounded mean of the tokens' IDFs for TF-IDF, one unit otherwise.
fn join_shingle(window: &std::collections::VecDeque<(String, i64)>, tfidf: bool, out: &mut String) -> i64 {
    out.clear();
    let mut sum = 0i64;
    for (i, (token, unit)) in window.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(token);
        sum += unit;
    }
    let len = window.len() as i64;
    if tfidf {
        (sum + len / 2) / len
    } else {
        WEIGHT_SCALE
    }
}

/// The weight a distinct feature votes with: one unit (binary), its count (TF) or its count
/// times its unit (TF-IDF).
fn weight_of(d: &Distinct, weighting: Weighting) -> i64 {
    match weighting {
        Weighting::Binary => WEIGHT_SCALE,
        Weighting::Tf => d.tf * WEIGHT_SCALE,
        Weighting::TfIdf => d.tf * d.unit,
    }
}

/// Hands `take` every distinct feature that votes, with its weight: each one, or with `top_k`
/// only the heaviest (among equal weights the earlier feature wins), in no particular order.
/// The table of features stays within `budget` (`feature_table`); texts are kept only with
/// `keep_text`.
fn voting_features(
    text: &str,
    opts: &Options,
    keep_text: bool,
    budget: Budget,
    check: &mut dyn FnMut(),
    take: &mut dyn FnMut(Distinct, i64) -> Result<(), TooLarge>,
) -> Result<(), TooLarge> {
    let read = read_text(text, opts, check);
    if opts.top_k.is_none() && !keep_text && opts.weighting == Weighting::Binary {
        // Each distinct feature once with one unit: its hash is all that is needed, 8 bytes.
        return feature_table::by_parts(budget, &mut |part| {
            let hashes = feature_hashes_of_part(&read, opts, part, budget.bytes, check)?;
            for hash in hashes {
                take(Distinct { hash, first: 0, tf: 1, unit: WEIGHT_SCALE, text: None }, WEIGHT_SCALE)?;
            }
            Ok(())
        });
    }
    let seed = opts.seed;
    let mut each = |emit: &mut dyn FnMut(u64, i64, &str) -> bool| {
        features_of_read_text(&read, opts, check, |feature, unit| emit(feature_hash(feature, seed), unit, feature))
    };
    let Some(top_k) = opts.top_k else {
        return feature_table::for_each_part(budget, keep_text, &mut each, &mut |part| {
            for d in part {
                let w = weight_of(&d, opts.weighting);
                take(d, w)?;
            }
            Ok(())
        });
    };
    // The heaviest top_k so far, over the parts read: a heap whose top is the one to drop next
    // (lightest, then latest), so that it never holds more than top_k, and its bytes are
    // counted at every push.
    let mut kept: BinaryHeap<Ranked> = BinaryHeap::new();
    let mut kept_bytes = 0usize;
    let size = |d: &Distinct| std::mem::size_of::<Ranked>() + d.text.as_ref().map_or(0, String::len);
    feature_table::for_each_part(budget, keep_text, &mut each, &mut |part| {
        for d in part {
            if kept.len() == kept.capacity() {
                kept.try_reserve(kept.len().max(16)).map_err(|_| TooLarge::OutOfMemory { bytes: kept.len() * std::mem::size_of::<Ranked>() })?;
            }
            kept_bytes += size(&d);
            kept.push(Ranked { weight: weight_of(&d, opts.weighting), d });
            if kept.len() > top_k {
                if let Some(dropped) = kept.pop() {
                    kept_bytes -= size(&dropped.d);
                }
            }
            if kept_bytes > budget.bytes {
                return Err(TooLarge::Result { bytes: budget.bytes });
            }
        }
        Ok(())
    })?;
    kept.into_iter().try_for_each(|r| take(r.d, r.weight))
}

/// A feature `top_k` may keep, ordered so that the greatest is the first to drop: the lightest,
/// and among equal weights the latest (the earlier feature wins).
struct Ranked {
    weight: i64,
    d: Distinct,
}

impl Ranked {
    fn key(&self) -> (std::cmp::Reverse<i64>, u64) {
        (std::cmp::Reverse(self.weight), self.d.first)
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// The SimHash fingerprint of `text`. Texts without features get 0. Binary weighting and
/// `top_k` keep a table of distinct features within `budget`; larger texts are [`TooLarge`].
pub fn simhash(text: &str, opts: &Options, budget: Budget, check: &mut dyn FnMut()) -> Result<u64, TooLarge> {
    let mut votes = Votes::default();
    let streaming = opts.top_k.is_none() && opts.weighting != Weighting::Binary;
    if streaming {
        // TF and TF-IDF without top-k are sums over occurrences: no table of features needed.
        for_each_feature(text, opts, check, |feature, unit| {
            votes.add(feature_hash(feature, opts.seed), unit);
            true
        });
    } else {
        // The sums are integers: the order in which features vote does not matter.
        voting_features(text, opts, false, budget, check, &mut |d, weight| {
            votes.add(d.hash, weight);
            Ok(())
        })?;
    }
    Ok(votes.finish())
}

/// The largest number of fingerprints one set may hold: far beyond what helps (each more one
/// adds its indexes and lookups) but small enough that a mistaken argument is caught.
pub const MAX_SET_SIZE: u32 = 16;

/// The width of a row in the batch functions (`dedup`, `memory_pairs`): 1 for a fingerprint
/// column, the set's size for a set column, so 1..=MAX_SET_SIZE; `None` outside. A width sizes
/// their work (a table of kept rows, a sorted pass, per position): unbounded, a caller's
/// 2^31 asked for 240 GB and aborted the backend.
pub fn row_width(width: i64) -> Option<usize> {
    u32::try_from(width).ok().filter(|w| (1..=MAX_SET_SIZE).contains(w)).map(|w| w as usize)
}

/// A set size outside 1..=MAX_SET_SIZE; the extension reports it as SQLSTATE 22023.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadSetSize(pub i64);

impl std::fmt::Display for BadSetSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the number of fingerprints must be between 1 and {MAX_SET_SIZE}, got {}", self.0)
    }
}

impl std::error::Error for BadSetSize {}

/// Why `simhash_set` gave no fingerprints: a bad set size, or a text too large for the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetError {
    Size(BadSetSize),
    TooLarge(TooLarge),
}

impl std::fmt::Display for SetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetError::Size(e) => e.fmt(f),
            SetError::TooLarge(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SetError {}

/// `b` fingerprints of `text`, the i-th (from 0) with seed `opts.seed + i`: each is exactly
/// `simhash` with that seed, but the text is normalised and tokenised once. Short texts flip
/// many bits for one changed feature; b independently seeded fingerprints of the same features
/// give b independent chances for a near-copy to land within k ("any of b", LSH amplification),
/// while unrelated texts stay far apart in all of them.
pub fn simhash_set(text: &str, opts: &Options, b: i64, budget: Budget, check: &mut dyn FnMut()) -> Result<Vec<u64>, SetError> {
    let b = u32::try_from(b).ok().filter(|b| (1..=MAX_SET_SIZE).contains(b)).ok_or(SetError::Size(BadSetSize(b)))? as usize;
    let seeds: Vec<u64> = (0..b as u64).map(|i| opts.seed.wrapping_add(i)).collect();
    let mut votes: Vec<Votes> = (0..b).map(|_| Votes::default()).collect();
    let streaming = opts.top_k.is_none() && opts.weighting != Weighting::Binary;
    if streaming {
        for_each_feature(text, opts, check, |feature, unit| {
            for (v, &seed) in votes.iter_mut().zip(&seeds) {
                v.add(feature_hash(feature, seed), unit);
            }
            true
        });
    } else {
        // Distinct features and top-k as the first seed sees them, then each one re-hashed.
        voting_features(text, opts, b > 1, budget, check, &mut |d, weight| {
            votes[0].add(d.hash, weight);
            let feature = d.text.as_deref().unwrap_or_default();
            for (v, &seed) in votes.iter_mut().zip(&seeds).skip(1) {
                v.add(feature_hash(feature, seed), weight);
            }
            Ok(())
        })
        .map_err(SetError::TooLarge)?;
    }
    Ok(votes.iter().map(Votes::finish).collect())
}

/// The distinct features of `text` with the weights they vote with, in order of first
/// occurrence: exactly what `simhash` adds up. The list must fit `budget.bytes`.
pub fn features(text: &str, opts: &Options, budget: Budget, check: &mut dyn FnMut()) -> Result<Vec<Feature>, TooLarge> {
    let mut listed: Vec<(u64, Feature)> = Vec::new();
    let mut bytes = 0usize;
    voting_features(text, opts, true, budget, check, &mut |d, weight| {
        bytes += std::mem::size_of::<(u64, Feature)>() + d.text.as_ref().map_or(0, String::len);
        if bytes > budget.bytes {
            return Err(TooLarge::Result { bytes: budget.bytes });
        }
        feature_table::try_room(&mut listed, 1)?;
        listed.push((
            d.first,
            Feature { text: d.text.unwrap_or_default(), weight: weight as f64 / WEIGHT_SCALE as f64, hash: d.hash },
        ));
        Ok(())
    })?;
    listed.sort_unstable_by_key(|(first, _)| *first);
    Ok(listed.into_iter().map(|(_, f)| f).collect())
}

/// The distinct features of `text` as their hashes, sorted: the set `overlap` compares. Weights
/// and `top_k` do not apply (a feature is in the set or not). The set must fit `budget.bytes`.
pub fn feature_set(text: &str, opts: &Options, budget: Budget, check: &mut dyn FnMut()) -> Result<Vec<u64>, TooLarge> {
    let read = read_text(text, opts, check);
    feature_hashes_of_part(&read, opts, Part::WHOLE, budget.bytes, check).map_err(|stop| match stop {
        Stop::Full { .. } => TooLarge::Result { bytes: budget.bytes },
        Stop::Fail(e) => e,
    })
}

/// The distinct feature hashes of a text already read (`read_text`) that fall in `part`, sorted.
pub(crate) fn feature_hashes_of_part(
    read: &str,
    opts: &Options,
    part: Part,
    bytes: usize,
    check: &mut dyn FnMut(),
) -> Result<Vec<u64>, Stop> {
    feature_table::distinct_hashes(part, bytes, &mut |emit| {
        features_of_read_text(read, opts, check, |feature, _| emit(feature_hash(feature, opts.seed)))
    })
}

/// A weight that is NaN or infinite, at this 0-based position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BadWeight {
    pub index: usize,
    pub value: f64,
}

impl std::fmt::Display for BadWeight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "weight {} (element {}) is not a finite number", self.value, self.index + 1)
    }
}

impl std::error::Error for BadWeight {}

/// SimHash of caller-supplied features and real weights: the features' UTF-8 bytes are hashed
/// as given (no normalisation); for each bit the weights are added in f64, in array order, `+w`
/// where the feature's hash has a 1 and `-w` where it has a 0, and the bit is set where the sum
/// is > 0. NaN and infinite weights are errors, reported at the first one's index.
///
/// Every weight is first multiplied by the power of two 2^-e that brings the largest |w| into
/// [0.5, 1). So no sum can overflow (none exceeds the number of weights in magnitude), and:
///
/// - Multiplying every weight by the same power of two 2^s, with exact products (no overflow,
///   no loss of digits in the subnormal range), gives the same fingerprint, anywhere in f64's
///   range: the largest |w| is multiplied by 2^s too, so e becomes e + s and the scaled weights,
///   hence the 64 sums, are bit-identical.
/// - For a weight vector whose sums could not overflow, the fingerprint is bit-for-bit that of
///   summing the unscaled weights: multiplying by a power of two commutes with f64 rounding.
///   The exception is a nonzero weight below 2^-1021 times the largest, which scaling may
///   round into the subnormal range (or to 0); that can only matter where all the larger
///   weights cancel exactly.
/// - Any other positive factor c also keeps the fingerprint when every c·w is exact and the
///   sums are exact (e.g. c = 3 on small integers, or any c on weights ±2^k, since
///   fl(c·2^k) = fl(c)·2^k). In general c·w is itself rounded, so the inputs are only nearly
///   proportional, and f64 sums round as well: a bit can then change only where its exact sum
///   is 0 or within rounding error of it (about n·2^-52 times the sum of |w|, for n weights),
///   that is, at exact or near ties, and only because of the rounding.
///
/// The sums are rounded on purpose: f64 sums in array order are the documented, stored
/// behaviour, and exact sums would change the sign of decimal near-ties such as 0.1 + 0.2 - 0.3.
pub fn simhash_weighted<'a, I: Iterator<Item = (&'a str, f64)>>(
    items: impl Fn() -> I,
    seed: u64,
    check: &mut dyn FnMut(),
) -> Result<u64, BadWeight> {
    // First pass: check and find the largest |w|; the scale needs it before any sum. `items` is
    // read twice rather than copied: arrays of features can be as large as PostgreSQL allows.
    let mut largest = 0f64;
    for (index, (_, weight)) in items().enumerate() {
        if !weight.is_finite() {
            return Err(BadWeight { index, value: weight });
        }
        if index % 65536 == 65535 {
            check();
        }
        largest = largest.max(weight.abs());
    }
    if largest == 0.0 {
        return Ok(0); // every sum is 0
    }
    // 2^-e as one or two exact factors (2^1073 is not an f64); with two, the first one is exact
    // on every weight (|w·2^1023| < 1/2), so each scaled weight is rounded at most once.
    let shift = -binary_exponent(largest);
    let (f1, f2) = if shift > 1023 { (pow2(1023), pow2(shift - 1023)) } else { (pow2(shift), 1.0) };
    let mut sums = [0f64; 64];
    for (index, (feature, weight)) in items().enumerate() {
        if index % 65536 == 65535 {
            check();
        }
        let hash = feature_hash(feature, seed);
        let weight = weight * f1 * f2;
        for (bit, sum) in sums.iter_mut().enumerate() {
            if (hash >> bit) & 1 == 1 {
                *sum += weight;
            } else {
                *sum -= weight;
            }
        }
    }
    Ok(sums.iter().enumerate().filter(|(_, &s)| s > 0.0).fold(0, |fp, (bit, _)| fp | (1 << bit)))
}

/// The e with 2^(e-1) <= x < 2^e, for finite x > 0 (from -1073 to 1024).
fn binary_exponent(x: f64) -> i32 {
    let bits = x.to_bits();
    match (bits >> 52) as i32 {
        0 => 64 - bits.leading_zeros() as i32 - 1074, // subnormal: x = bits·2^-1074
        biased => biased - 1022,
    }
}

/// 2^k exactly, for -1074 <= k <= 1023.
fn pow2(k: i32) -> f64 {
    debug_assert!((-1074..=1023).contains(&k), "2^{k} is not an f64");
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1 << (k + 1074))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(json: &str) -> Options {
        Options::from_json_str(json).unwrap()
    }

    fn fp(text: &str, json: &str) -> u64 {
        simhash(text, &opts(json), Budget::default(), &mut || {}).unwrap()
    }

    #[test]
    fn empty_and_featureless_texts_give_zero() {
        for t in ["", "   ", "!!! ... ，。", "the of and"] {
            assert_eq!(fp(t, "{}"), 0, "{t:?}");
            assert!(features(t, &Options::default(), Budget::default(), &mut || {}).unwrap().is_empty());
        }
    }

    #[test]
    fn single_feature_gives_its_hash() {
        let o = opts(r#"{"ngram":1}"#);
        assert_eq!(simhash("postgres", &o, Budget::default(), &mut || {}).unwrap(), feature_hash("postgres", 0));
        assert_eq!(simhash("postgres", &opts(r#"{"ngram":1,"seed":7}"#), Budget::default(), &mut || {}).unwrap(), feature_hash("postgres", 7));
        // Fewer tokens than n: the one feature is the tokens joined.
        assert_eq!(fp("postgres", r#"{"ngram":3}"#), feature_hash("postgres", 0));
        assert_eq!(fp("Postgres Rocks", r#"{"ngram":3}"#), feature_hash("postgres rocks", 0));
    }

    #[test]
    fn shingles_join_tokens_with_one_space() {
        let f = features("One two three four", &opts(r#"{"ngram":2,"tokenizer":"words","weighting":"tf"}"#), Budget::default(), &mut || {}).unwrap();
        let names: Vec<&str> = f.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(names, ["two three", "three four"]); // "one" is a stopword
        assert!(f.iter().all(|f| f.weight == 1.0));
    }

    #[test]
    fn features_reproduce_the_fingerprint_in_every_mode() {
        let text = "今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。 The quick brown fox jumps over the lazy dog; the dog sleeps. 北京烤鸭真好吃";
        for json in [
            "{}",
            r#"{"ngram":1}"#,
            r#"{"ngram":3,"weighting":"tfidf"}"#,
            r#"{"weighting":"binary"}"#,
            r#"{"weighting":"tfidf","top_k":5}"#,
            r#"{"tokenizer":"chars","ngram":4}"#,
            r#"{"tokenizer":"jieba","case_fold":false}"#,
        ] {
            let o = opts(json);
            let f = features(text, &o, Budget::default(), &mut || {}).unwrap();
            let rebuilt = simhash_weighted(|| f.iter().map(|f| (f.text.as_str(), f.weight)), o.seed, &mut || {}).unwrap();
            assert_eq!(rebuilt, simhash(text, &o, Budget::default(), &mut || {}).unwrap(), "{json}");
            assert!(f.iter().all(|x| x.hash == feature_hash(&x.text, o.seed)));
        }
    }

    #[test]
    fn top_k_keeps_the_heaviest_in_text_order() {
        let o = opts(r#"{"ngram":1,"top_k":2,"tokenizer":"words","weighting":"tf"}"#);
        let f = features("cat dog dog bird bird bird", &o, Budget::default(), &mut || {}).unwrap();
        let got: Vec<(&str, f64)> = f.iter().map(|f| (f.text.as_str(), f.weight)).collect();
        assert_eq!(got, [("dog", 2.0), ("bird", 3.0)]);
    }

    #[test]
    fn tfidf_weighs_rare_chinese_words_more() {
        let o = opts(r#"{"ngram":1,"weighting":"tfidf"}"#);
        let f = features("生化学 中国", &o, Budget::default(), &mut || {}).unwrap();
        assert!(f[0].weight > f[1].weight, "{f:?}");
    }

    #[test]
    fn near_copies_are_near_and_different_texts_far() {
        let a = "PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development that has earned it a strong reputation for reliability, feature robustness, and performance.";
        let b = "PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development that has earned it a strong reputation for reliability, robustness, and performance!";
        let c = "The quick brown fox jumps over the lazy dog while the cat watches from the warm windowsill all afternoon long.";
        let d = |x: &str, y: &str| crate::distance::hamming(fp(x, "{}"), fp(y, "{}"));
        assert!(d(a, b) < d(a, c), "{} {}", d(a, b), d(a, c));
        assert!(d(a, c) > 10);
    }

    #[test]
    fn chunking_does_not_change_the_fingerprint() {
        let text = "数据库系统 is a database 系统。 ".repeat(20_000); // > several chunks
        for json in ["{}", r#"{"weighting":"tfidf","ngram":3}"#, r#"{"tokenizer":"chars","ngram":5}"#] {
            let o = opts(json);
            let mut whole = Votes::default();
            let norm = crate::normalize::normalize(&text, o.case_fold);
            // Reference: tokens of the whole normalised text at once, shingled by hand.
            let mut toks: Vec<String> = Vec::new();
            tokens(&norm, o.tokenizer, |t, _| toks.push(t.to_string()));
            for w in toks.windows(o.ngram) {
                let unit = if o.weighting == Weighting::TfIdf {
                    let s: i64 = w.iter().map(|t| idf(t, crate::idf::is_han_token(t))).sum();
                    (s + o.ngram as i64 / 2) / o.ngram as i64
                } else {
                    WEIGHT_SCALE
                };
                whole.add(feature_hash(&w.join(" "), o.seed), unit);
            }
            let mut checks = 0;
            assert_eq!(simhash(&text, &o, Budget::default(), &mut || checks += 1).unwrap(), whole.finish(), "{json}");
            assert!(checks > 3, "cancellation checks ran {checks} times");
        }
    }

    #[test]
    fn votes_equal_the_plain_per_bit_sums() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..200 {
            let mut votes = Votes::default();
            let mut sums = [0i64; 64];
            for _ in 0..(round % 17) {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let (hash, weight) = (state ^ (state >> 29), ((state >> 40) % 1000) as i64);
                votes.add(hash, weight);
                for (bit, sum) in sums.iter_mut().enumerate() {
                    *sum += if (hash >> bit) & 1 == 1 { weight } else { -weight };
                }
            }
            let plain = sums.iter().enumerate().filter(|(_, &s)| s > 0).fold(0u64, |fp, (b, _)| fp | 1 << b);
            assert_eq!(votes.finish(), plain);
        }
    }

    /// A text of `words` words over a vocabulary of about `vocabulary`, English and Chinese.
    fn long_text(words: usize, vocabulary: u64) -> String {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        (0..words)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match x % 5 {
                    0 => ["数据库", "指纹", "文本", "相似", "网页"][(x >> 8) as usize % 5].to_string(),
                    _ => format!("w{}", (x >> 8) % vocabulary),
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn a_small_budget_reads_in_passes_and_gives_the_same_answers() {
        let text = long_text(40_000, 20_000);
        let small = Budget { bytes: 1 << 20, parts: 64 };
        for json in [
            r#"{"weighting":"binary"}"#,
            r#"{"tokenizer":"chars","ngram":8,"weighting":"binary"}"#,
            r#"{"top_k":50}"#,
            r#"{"top_k":5000,"ngram":2,"weighting":"tf"}"#,
            r#"{"top_k":3,"weighting":"binary","seed":9}"#,
        ] {
            let o = opts(json);
            let whole = simhash(&text, &o, Budget::default(), &mut || {}).unwrap();
            assert_eq!(simhash(&text, &o, small, &mut || {}).unwrap(), whole, "{json}");
            let set = simhash_set(&text, &o, 3, small, &mut || {}).unwrap();
            assert_eq!(set, simhash_set(&text, &o, 3, Budget::default(), &mut || {}).unwrap(), "{json}");
            assert_eq!(set[0], whole, "{json}");
        }
        // Too few passes, or a list of features larger than the budget, is an error, not an abort.
        let o = opts(r#"{"tokenizer":"chars","ngram":8,"weighting":"binary"}"#);
        let one = Budget { bytes: 1 << 20, parts: 1 };
        assert_eq!(simhash(&text, &o, one, &mut || {}), Err(TooLarge::Parts { bytes: 1 << 20, parts: 1 }));
        assert_eq!(features(&text, &o, small, &mut || {}), Err(TooLarge::Result { bytes: 1 << 20 }));
        assert_eq!(feature_set(&text, &o, Budget { bytes: 256 << 10, parts: 64 }, &mut || {}), Err(TooLarge::Result { bytes: 256 << 10 }));
        let top = opts(r#"{"top_k":100000,"tokenizer":"chars","ngram":8,"weighting":"binary"}"#);
        assert_eq!(simhash(&text, &top, small, &mut || {}), Err(TooLarge::Result { bytes: 1 << 20 }));
    }

    #[test]
    fn overlap_in_passes_counts_the_same() {
        let (a, b) = (long_text(30_000, 20_000), long_text(20_000, 20_000));
        let o = opts(r#"{"ngram":3}"#);
        let whole = crate::overlap::overlap(&a, &b, &o, Budget::default(), &mut || {}).unwrap();
        let small = Budget { bytes: 128 << 10, parts: 64 };
        assert_eq!(crate::overlap::overlap(&a, &b, &o, small, &mut || {}).unwrap(), whole);
        assert!(whole.a > 10_000 && whole.common > 0, "{whole:?}");
    }

    #[test]
    fn each_fingerprint_of_a_set_is_simhash_with_its_seed() {
        let texts = [
            "",
            "Breaking: the council approves the new budget",
            "今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。",
            "a a a b b c, 中文 mixed with English words and 数字 123",
        ];
        let options = [
            "{}",
            r#"{"tokenizer":"chars","ngram":2,"weighting":"tf","seed":7}"#,
            r#"{"weighting":"binary"}"#,
            r#"{"top_k":3,"ngram":2}"#,
            r#"{"seed":18446744073709551615}"#,
        ];
        for json in options {
            let o = Options::from_json_str(json).unwrap();
            for text in texts {
                let set = simhash_set(text, &o, 5, Budget::default(), &mut || {}).unwrap();
                assert_eq!(set.len(), 5);
                for (i, &fp) in set.iter().enumerate() {
                    let mut seeded = o;
                    seeded.seed = o.seed.wrapping_add(i as u64);
                    assert_eq!(fp, simhash(text, &seeded, Budget::default(), &mut || {}).unwrap(), "{json} {text:?} element {i}");
                }
            }
        }
        for bad in [0, -1, i64::from(MAX_SET_SIZE) + 1] {
            assert_eq!(simhash_set("x", &Options::default(), bad, Budget::default(), &mut || {}), Err(SetError::Size(BadSetSize(bad))));
        }
    }

    #[test]
    fn weighted_rejects_non_finite_weights() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let err = simhash_weighted(|| [("a", 1.0), ("b", bad)].into_iter(), 0, &mut || {}).unwrap_err();
            assert_eq!(err.index, 1);
        }
        assert_eq!(simhash_weighted(|| [].into_iter(), 0, &mut || {}), Ok(0));
        assert_eq!(simhash_weighted(|| [("x", 2.0)].into_iter(), 0, &mut || {}), Ok(feature_hash("x", 0)));
        assert_eq!(simhash_weighted(|| [("x", -2.0)].into_iter(), 0, &mut || {}), Ok(!feature_hash("x", 0)));
    }

    /// splitmix64: a small deterministic generator for the weighted property tests.
    fn splitmix64(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn weighted(names: &[String], weights: &[f64]) -> u64 {
        simhash_weighted(|| names.iter().map(String::as_str).zip(weights.iter().copied()), 0, &mut || {}).unwrap()
    }

    /// The per-bit sums of the unscaled weights in f64, in array order: what `simhash_weighted`
    /// computed before it scaled weights, and still gives for ordinary weights.
    fn plain_f64_sums(names: &[String], weights: &[f64]) -> u64 {
        let mut sums = [0f64; 64];
        for (name, &w) in names.iter().zip(weights) {
            let hash = feature_hash(name, 0);
            for (bit, sum) in sums.iter_mut().enumerate() {
                *sum += if (hash >> bit) & 1 == 1 { w } else { -w };
            }
        }
        sums.iter().enumerate().filter(|(_, &s)| s > 0.0).fold(0u64, |fp, (b, _)| fp | 1 << b)
    }

    /// The exact per-bit sums of integer weights.
    fn exact_integer_sums(names: &[String], weights: &[i64]) -> u64 {
        let mut sums = [0i128; 64];
        for (name, &w) in names.iter().zip(weights) {
            let hash = feature_hash(name, 0);
            for (bit, sum) in sums.iter_mut().enumerate() {
                *sum += if (hash >> bit) & 1 == 1 { w as i128 } else { -(w as i128) };
            }
        }
        sums.iter().enumerate().filter(|(_, &s)| s > 0).fold(0u64, |fp, (b, _)| fp | 1 << b)
    }

    #[test]
    fn weighted_huge_and_tiny_weights_give_the_fingerprint_of_small_ones() {
        let names: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let unit = weighted(&names, &[1.0, 1.0, -1.0, -1.0]);
        // Bits where the four features vote +1, +1, -1, -1 tie at exactly 0 and must stay unset.
        assert_eq!(unit, exact_integer_sums(&names, &[1, 1, -1, -1]));
        assert_eq!(weighted(&names, &[1e308, 1e308, -1e308, -1e308]), unit);
        assert_eq!(weighted(&names, &[f64::MAX, f64::MAX, -f64::MAX, -f64::MAX]), unit);
        let tiny = f64::from_bits(1); // 2^-1074, the smallest subnormal
        assert_eq!(weighted(&names, &[tiny, tiny, -tiny, -tiny]), unit);
        assert_eq!(weighted(&names, &[1e-310, 1e-310, -1e-310, -1e-310]), unit);
        // Both ends of the range at once: where a and b cancel, 1.0 (scaled to 2^-1024, still
        // exact) decides, as it does in the exact sums; 2^-1074 is negligible (scaled to 0).
        let mixed = weighted(&names, &[f64::MAX, -f64::MAX, tiny, 1.0]);
        assert_eq!(mixed, exact_integer_sums(&names, &[4, -4, 1, 2]));
        assert_eq!(mixed, weighted(&names, &[f64::MAX, -f64::MAX, 0.0, 1.0]));
        assert_eq!(weighted(&names, &[0.0, -0.0, 0.0, 0.0]), 0);
    }

    #[test]
    fn weighted_is_invariant_under_powers_of_two() {
        let names: Vec<String> = (0..40).map(|i| format!("feature {i}")).collect();
        let mut state = 0x5eed_u64;
        for round in 0..300 {
            let n = 1 + (splitmix64(&mut state) % 40) as usize;
            let weights: Vec<f64> = (0..n)
                .map(|_| {
                    let r = splitmix64(&mut state);
                    // Magnitudes (other than 0) lie in [2^-22, 2^26), so that w * 2^s below is a
                    // normal number for every s, while the largest scales reach past 2^1024 in sum.
                    match round % 3 {
                        // Small integers: exact sums with frequent ties at 0 (and zero weights).
                        0 => ((r % 11) as f64 - 5.0) * pow2(22),
                        // Decimals: sums round, and ties such as 0.1 + 0.2 - 0.3 are decided by rounding.
                        1 => ((r % 61) as f64 - 30.0) / 10.0 * pow2(22),
                        // Full 53-bit significands, either sign.
                        _ => {
                            let significand = 1.0 + (r >> 12) as f64 / (1u64 << 52) as f64;
                            let sign = if r & 1 == 1 { -1.0 } else { 1.0 };
                            sign * significand * pow2(((r >> 1) % 48) as i32 - 22)
                        }
                    }
                })
                .collect();
            let base = weighted(&names[..n], &weights);
            // For ordinary weights the scaling changes nothing: the plain f64 sums give the same.
            assert_eq!(base, plain_f64_sums(&names[..n], &weights), "round {round}");
            // Every product w * 2^s below is exact, so the inputs are exactly proportional; the
            // scaled weights must be bit-identical, hence the sums and the fingerprint too.
            for s in (-1000..=1000).step_by(37) {
                let scaled: Vec<f64> = weights.iter().map(|w| w * pow2(s)).collect();
                assert_eq!(weighted(&names[..n], &scaled), base, "round {round}, scale 2^{s}, weights {weights:?}");
            }
        }
    }

    #[test]
    fn weighted_is_invariant_under_other_factors_without_ties() {
        // Weights ±2^k with distinct k: every per-bit sum is at least the smallest weight away
        // from 0, and c * 2^k rounds to fl(c) * 2^k, so any positive factor keeps every sign.
        // The last factor makes the largest weight f64::MAX, whose plain sums overflow.
        let names: Vec<String> = (0..24).map(|i| format!("word {i}")).collect();
        let mut state = 7u64;
        for round in 0..200 {
            let mut exponents: Vec<u32> = (0..24).collect();
            for i in (1..exponents.len()).rev() {
                exponents.swap(i, (splitmix64(&mut state) % (i as u64 + 1)) as usize);
            }
            let n = 1 + (splitmix64(&mut state) % 24) as usize;
            let ints: Vec<i64> = exponents[..n]
                .iter()
                .map(|&k| if splitmix64(&mut state) & 1 == 1 { -(1i64 << k) } else { 1i64 << k })
                .collect();
            let weights: Vec<f64> = ints.iter().map(|&w| w as f64).collect();
            let base = weighted(&names[..n], &weights);
            assert_eq!(base, exact_integer_sums(&names[..n], &ints), "round {round}");
            for c in [1e300, 1e-300, 3.0, 0.1, 1.0 / 3.0, 7e22, 123_456.789, f64::MAX / pow2(23)] {
                let scaled: Vec<f64> = weights.iter().map(|w| w * c).collect();
                assert_eq!(weighted(&names[..n], &scaled), base, "round {round}, factor {c}, weights {weights:?}");
            }
        }
    }

    #[test]
    fn binary_exponent_and_pow2_cover_the_whole_range() {
        for k in -1074..=1023 {
            let p = pow2(k);
            assert_eq!(p, 2f64.powi(k.max(-1022)) * 2f64.powi((k + 1022).min(0)), "2^{k}");
            assert_eq!(binary_exponent(p), k + 1, "2^{k}");
            // The largest f64 below 2^(k+1) still has exponent k + 1.
            let below = if k < 1023 { f64::from_bits(pow2(k + 1).to_bits() - 1) } else { f64::MAX };
            assert_eq!(binary_exponent(below), k + 1, "below 2^{}", k + 1);
        }
    }

    #[test]
    fn weighted_checks_for_interrupts_and_reports_the_first_bad_weight() {
        let mut checks = 0;
        let items = || std::iter::repeat_n(("x", 1.0), 200_000);
        assert_eq!(simhash_weighted(items, 0, &mut || checks += 1), Ok(feature_hash("x", 0)));
        assert!(checks >= 3, "cancellation checks ran {checks} times");
        let weight = |i| match i {
            70_000 => f64::NAN,
            80_000 => f64::INFINITY,
            _ => 1e308,
        };
        let items = || (0..100_000).map(|i| ("x", weight(i)));
        let err = simhash_weighted(items, 0, &mut || {}).unwrap_err();
        assert_eq!(err.index, 70_000);
        assert!(err.value.is_nan());
    }
}
