//! The built-in stopword lists: very frequent function words that carry no evidence of
//! duplication and, unweighted, would pull every fingerprint towards the same value.
//!
//! The lists are part of the pipeline spec (docs/ALGORITHM.md): changing them changes
//! fingerprints, so they are fixed for pipeline version 1.

use std::sync::LazyLock;

use rustc_hash::FxHashSet;

/// English stopwords (after case folding).
pub const ENGLISH: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "because",
    "been", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have",
    "he", "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "may", "more", "most",
    "my", "no", "not", "of", "on", "one", "or", "our", "out", "she", "so", "some", "such", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "up", "was",
    "we", "were", "what", "when", "which", "who", "will", "with", "would", "you", "your",
];

/// Chinese stopwords (function words and particles as jieba segments them).
pub const CHINESE: &[&str] = &[
    "的", "了", "在", "是", "和", "与", "及", "或", "而", "也", "就", "都", "着", "又", "被", "把",
    "对", "从", "向", "以", "为", "于", "之", "其", "这", "那", "个", "这个", "那个", "一个", "我",
    "你", "他", "她", "它", "我们", "你们", "他们", "她们", "它们", "自己", "不", "没有", "有",
    "上", "下", "中", "将", "等", "并", "还", "要", "会", "能", "可以", "已", "已经", "所", "吗",
    "呢", "吧", "啊", "呀",
];

/// Every stopword is at most 8 bytes, so each is keyed as its bytes zero-padded into a u64
/// (text never holds NUL, so the padding is unambiguous): one multiply to hash, no memcmp.
const MAX_BYTES: usize = 8;

fn key(token: &str) -> Option<u64> {
    let bytes = token.as_bytes();
    (bytes.len() <= MAX_BYTES).then(|| {
        let mut padded = [0u8; MAX_BYTES];
        padded[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(padded)
    })
}

static ALL: LazyLock<FxHashSet<u64>> =
    LazyLock::new(|| ENGLISH.iter().chain(CHINESE).filter_map(|w| key(w)).collect());

/// True when `token` (already normalised) is a stopword of either list.
#[inline]
pub fn is_stopword(token: &str) -> bool {
    key(token).is_some_and(|k| ALL.contains(&k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_unique_and_normalised() {
        let mut seen = std::collections::HashSet::new();
        for w in ENGLISH.iter().chain(CHINESE) {
            assert!(seen.insert(*w), "duplicate stopword {w}");
            assert_eq!(crate::normalize::normalize(w, true), *w);
        }
        assert!(is_stopword("the") && is_stopword("的") && is_stopword("我们"));
        assert!(!is_stopword("database") && !is_stopword("数据"));
        assert!(ENGLISH.iter().chain(CHINESE).all(|w| w.len() <= MAX_BYTES));
        assert!(!is_stopword("thee") && !is_stopword("th") && !is_stopword("") && !is_stopword("的的"));
    }
}
