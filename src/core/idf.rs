//! Inverse document frequencies for TF-IDF weighting, from jieba's bundled IDF table.
//!
//! jieba-rs keeps its table private and exposes it only through keyword extraction, so the IDF of
//! a word is read by extracting the keywords of the word alone with a neutral configuration (no
//! stopwords, no minimum length, no HMM): a lone word occurring once has TF-IDF weight equal to its
//! IDF. Results are cached per process. Weights are fixed-point integers (units of 1/65536) so that
//! fingerprints are sums of integers, exact and independent of summation order.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use jieba_rs::{KeywordExtract, KeywordExtractConfig, TfIdf};

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

/// The median IDF of the table, which jieba gives to words it does not know; here also the IDF
/// of every token that is not entirely Han characters (the table is for Chinese words).
pub static MEDIAN_IDF: LazyLock<i64> = LazyLock::new(|| {
    // A Latin token is never in the table, so its weight is the median.
    quantize(probe("zzqqzzqq").unwrap_or(0.0))
});

thread_local! {
    static CACHE: RefCell<HashMap<String, i64>> = RefCell::new(HashMap::new());
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

/// IDF of a token in fixed-point units: from jieba's table for an all-Han token it knows, the
/// median IDF otherwise.
pub fn idf(token: &str) -> i64 {
    if token.is_empty() || !token.chars().all(is_han) {
        return *MEDIAN_IDF;
    }
    if let Some(hit) = CACHE.with(|c| c.borrow().get(token).copied()) {
        return hit;
    }
    let value = probe(token).map_or(*MEDIAN_IDF, quantize);
    CACHE.with(|c| {
        let mut cache = c.borrow_mut();
        if cache.len() < CACHE_LIMIT {
            cache.insert(token.to_string(), value);
        }
    });
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_words_have_their_table_idf_and_others_the_median() {
        let median = *MEDIAN_IDF;
        assert!(median > 5 * WEIGHT_SCALE && median < 15 * WEIGHT_SCALE, "median {median}");
        assert_eq!(idf("database"), median);
        assert_eq!(idf("数据库x"), median);
        // A rare term weighs more than a common one.
        assert!(idf("生化学") > idf("中国"), "{} {}", idf("生化学"), idf("中国"));
        assert_eq!(idf("生化学"), quantize(13.900677652));
        // Cached answers equal fresh ones.
        assert_eq!(idf("生化学"), idf("生化学"));
    }

    #[test]
    fn quantize_rounds_to_units() {
        assert_eq!(quantize(1.0), 65536);
        assert_eq!(quantize(0.5 / 65536.0), 1);
        assert_eq!(quantize(0.0), 0);
    }
}
