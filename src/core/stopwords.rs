//! The built-in stopword lists: very frequent function words that carry no evidence of
//! duplication and, unweighted, would pull every fingerprint towards the same value.
//!
//! The lists are part of the pipeline spec (docs/ALGORITHM.md): changing them changes
//! fingerprints, so they are fixed for pipeline version 1.


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
/// (text never holds NUL, so the padding is unambiguous and no key is 0). The keys sit in an
/// open-addressing table built at compile time: one multiply, one or two loads, no locking.
const MAX_BYTES: usize = 8;
const SLOTS: usize = 512;

const fn key_of(bytes: &[u8]) -> u64 {
    let mut key = 0u64;
    let mut i = 0;
    while i < bytes.len() {
        key |= (bytes[i] as u64) << (8 * i);
        i += 1;
    }
    key
}

const fn slot_of(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 55) as usize % SLOTS
}

const fn build() -> [u64; SLOTS] {
    let mut table = [0u64; SLOTS];
    let lists: [&[&str]; 2] = [ENGLISH, CHINESE];
    let mut l = 0;
    while l < lists.len() {
        let mut w = 0;
        while w < lists[l].len() {
            let bytes = lists[l][w].as_bytes();
            assert!(bytes.len() <= MAX_BYTES, "stopwords must be at most 8 bytes");
            let key = key_of(bytes);
            let mut slot = slot_of(key);
            while table[slot] != 0 && table[slot] != key {
                slot = (slot + 1) % SLOTS;
            }
            table[slot] = key;
            w += 1;
        }
        l += 1;
    }
    table
}

static TABLE: [u64; SLOTS] = build();

/// True when `token` (already normalised) is a stopword of either list.
#[inline]
pub fn is_stopword(token: &str) -> bool {
    let bytes = token.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_BYTES {
        return false;
    }
    let mut padded = [0u8; MAX_BYTES];
    padded[..bytes.len()].copy_from_slice(bytes);
    let key = u64::from_le_bytes(padded);
    let mut slot = slot_of(key);
    loop {
        match TABLE[slot] {
            0 => return false,
            k if k == key => return true,
            _ => slot = (slot + 1) % SLOTS,
        }
    }
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
        assert!(ENGLISH.iter().chain(CHINESE).all(|w| w.len() <= MAX_BYTES && is_stopword(w)));
        assert_eq!(TABLE.iter().filter(|&&k| k != 0).count(), ENGLISH.len() + CHINESE.len());
        assert!(!is_stopword("thee") && !is_stopword("th") && !is_stopword("") && !is_stopword("的的"));
    }
}
