//! Text without Han characters never loads jieba's dictionary or IDF table: a new database
//! connection's first English fingerprint must not pay for Chinese (issue: 230 ms first call).
//! Its own test binary, so that no other test has loaded them first in this process.

use simhash_core::fingerprint::simhash;
use simhash_core::feature_table::Budget;
use simhash_core::options::Options;
use simhash_core::tokenize::dictionary_loaded;

#[test]
fn only_han_text_loads_the_dictionary() {
    let defaults = Options::default();
    let english = simhash("The quick brown fox jumps over the lazy dog, café, Москва, 2026.", &defaults, Budget::default(), &mut || {}).unwrap();
    assert_ne!(english, 0);
    assert!(!dictionary_loaded(), "text without Han characters loaded jieba's dictionary");
    let chinese = simhash("今天纽约的天气真好啊", &defaults, Budget::default(), &mut || {}).unwrap();
    assert_ne!(chinese, 0);
    assert!(dictionary_loaded());
}
