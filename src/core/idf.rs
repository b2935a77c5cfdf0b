//! Inverse document frequencies for TF-IDF weighting, from jieba's bundled IDF table.
//!
//! jieba-rs keeps its table private and exposes it only through keyword extraction, so the IDF of
//! a word is read by extracting the keywords of the word alone with a neutral configuration (no
//! stopwords, no minimum length, no HMM): a lone word occurring once has TF-IDF weight equal to its
//! IDF. Results are cached per process. Weights are fixed-point integers (units of 1/65536) so that
//! fingerprints are sums of integers, exact and independent of summation order.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::LazyLock;

use jieba_rs::{KeywordExtract, KeywordExtractConfig, TfIdf};
use rustc_hash::FxHashMap;

use crate::script::is_han;
use crate::tokenize::JIEBA;

/// Fixed-point scale of weights: a weight of 1.0 is 65536 units.
pub const WEIGHT_SCALE: i64 = 1 << 16;
/// A word absent from the cache past this many entries is looked up again instead of cached,
/// which bounds the cache's memory on endless streams of new words.
const CACHE_LIMIT: usize = 1 << 20;

static TFIDF: LazyLock<TfIdf> = LazyLock::new(|| {
    let mut tfidf = TfIdf::default();
    *tfidf.config_mut() = KeywordExtractConfig::builder()
        .set_stop_words(BTreeSet::new())
        .min_keyword_length(1)
        .use_hmm(false)
        .build();
    tfidf
});

/// The median IDF of jieba's bundled table, which jieba gives to words it does not know; here
/// also the IDF of every token that is not entirely Han characters (the table is for Chinese
/// words). A constant, checked against the table by a test, so that text without Han characters
/// never loads the table and jieba's dictionary (about 0.2 s and 80 MB on a backend's first call).
pub const MEDIAN_IDF: i64 = 783_468;

/// Loads the IDF table (and jieba's dictionary, which it reads through) now rather than on the
/// first Han token that needs it.
pub fn preload() {
    LazyLock::force(&TFIDF);
}

/// Per-process cache of looked-up IDFs. Words of up to 16 bytes (nearly all Chinese words) are
/// keyed inline as a zero-padded u128, which keeps lookups free of pointer chasing; text
/// reaching here never holds NUL, so the padding is unambiguous.
#[derive(Default)]
struct Cache {
    short: FxHashMap<u128, i64>,
    long: FxHashMap<String, i64>,
}

impl Cache {
    fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }
}

fn short_key(token: &str) -> Option<u128> {
    let bytes = token.as_bytes();
    (bytes.len() <= 16).then(|| {
        let mut key = [0u8; 16];
        key[..bytes.len()].copy_from_slice(bytes);
        u128::from_le_bytes(key)
    })
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// Converts a real weight to fixed-point units, rounding half away from zero.
pub fn quantize(weight: f64) -> i64 {
    (weight * WEIGHT_SCALE as f64).round() as i64
}

/// The TF-IDF weight jieba gives `word` when it is the whole text, if jieba keeps it whole.
fn probe(word: &str) -> Option<f64> {
    let keywords = TFIDF.extract_keywords(&JIEBA, word, 2, vec![]);
    match keywords.as_slice() {
        [only] if only.keyword == word => Some(only.weight),
        _ => None,
    }
}

/// True when every character of a non-empty token is Han: such tokens get their IDF from the table.
pub fn is_han_token(token: &str) -> bool {
    !token.is_empty() && token.chars().all(is_han)
}

/// IDF of a token in fixed-point units: from jieba's table for an all-Han token it knows, the
/// median IDF otherwise. `han` must be `is_han_token(token)` (callers often know it already).
pub fn idf(token: &str, han: bool) -> i64 {
    debug_assert_eq!(han, is_han_token(token));
    if !han {
        return MEDIAN_IDF;
    }
    let key = short_key(token);
    let hit = CACHE.with(|c| {
        let cache = c.borrow();
        match key {
            Some(k) => cache.short.get(&k).copied(),
            None => cache.long.get(token).copied(),
        }
    });
    if let Some(hit) = hit {
        return hit;
    }
    let value = probe(token).map_or(MEDIAN_IDF, quantize);
    CACHE.with(|c| {
        let mut cache = c.borrow_mut();
        if cache.len() < CACHE_LIMIT {
            match key {
                Some(k) => cache.short.insert(k, value),
                None => cache.long.insert(token.to_string(), value),
            };
        }
    });
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_constant_is_the_tables() {
        // A Latin token is never in the table, so jieba weighs it with the table's median.
        assert_eq!(quantize(probe("zzqqzzqq").unwrap_or(0.0)), MEDIAN_IDF);
    }

    #[test]
    fn known_words_have_their_table_idf_and_others_the_median() {
        let median = MEDIAN_IDF;
        assert!(median > 5 * WEIGHT_SCALE && median < 15 * WEIGHT_SCALE, "median {median}");
        let idf = |t: &str| idf(t, is_han_token(t));
        assert_eq!(idf("database"), median);
        assert_eq!(idf("数据库x"), median);
        assert_eq!(idf(""), median);
        // A rare term weighs more than a common one.
        assert!(idf("生化学") > idf("中国"), "{} {}", idf("生化学"), idf("中国"));
        assert_eq!(idf("生化学"), quantize(13.900677652));
        // Cached answers equal fresh ones, for short and long keys alike.
        assert_eq!(idf("生化学"), idf("生化学"));
        let long = "中华人民共和国国务院"; // 30 bytes: the long-key map
        assert_eq!(idf(long), idf(long));
        assert_ne!(short_key("中国"), short_key("中国人"));
    }

    #[test]
    fn quantize_rounds_to_units() {
        assert_eq!(quantize(1.0), 65536);
        assert_eq!(quantize(0.5 / 65536.0), 1);
        assert_eq!(quantize(0.0), 0);
    }
}
