//! Step 2 of the text pipeline: normalised text to tokens, by script.
//!
//! Chinese has no spaces between words, so runs of Han characters are segmented with jieba-rs
//! (its bundled dictionary, no HMM, so no word is guessed); every other script is split on Unicode
//! word boundaries (UAX #29). Punctuation, white space and stopwords never become tokens.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;

use jieba_rs::Jieba;
use unicode_segmentation::UnicodeSegmentation;

use crate::idf::is_han_token;
use crate::normalize::Chunk;
use crate::script::is_han;
use crate::stopwords::is_stopword;

/// How text becomes tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    /// Han runs through jieba, everything else by UAX #29 word boundaries (the default).
    Auto,
    /// The whole text through jieba, which splits non-Chinese text on its own rules.
    Jieba,
    /// UAX #29 word boundaries only: each Han character is a word of its own.
    Words,
    /// Every letter or digit is a token (with `ngram`, character n-grams); no stopwords.
    Chars,
}


/// The process-wide jieba segmenter, loaded on first use (its dictionary takes about 0.2 s and
/// 80 MB): by the first Han text, never by text without Han characters.
pub static JIEBA: LazyLock<Jieba> = LazyLock::new(|| {
    DICTIONARY_LOADED.store(true, Ordering::Relaxed);
    Jieba::new()
});
static DICTIONARY_LOADED: AtomicBool = AtomicBool::new(false);

/// Whether this process has loaded jieba's dictionary (tests and benchmarks check when it does).
pub fn dictionary_loaded() -> bool {
    DICTIONARY_LOADED.load(Ordering::Relaxed)
}

/// Calls `emit(token, han)` with each token of an already normalised `text`, in text order;
/// `han` tells whether the token is all Han characters (`idf::is_han_token`).
pub fn tokens(text: &str, tokenizer: Tokenizer, mut emit: impl FnMut(&str, bool)) {
    let mut keep = |t: &str, han: bool| {
        if !is_stopword(t) {
            emit(t, han)
        }
    };
    match tokenizer {
        // Pure ASCII (most English chunks) holds no Han run: straight to the ASCII word splitter.
        Tokenizer::Auto if text.is_ascii() => ascii_words(text.as_bytes(), |r| keep(&text[r], false)),
        Tokenizer::Auto => {
            for (han, run) in script_runs(text) {
                if han {
                    // jieba cuts a Han run into Han words.
                    JIEBA.cut(run, false).iter().for_each(|t| keep(t.word, true));
                } else {
                    // A non-Han run holds no Han character.
                    words(run, |t| keep(t, false));
                }
            }
        }
        Tokenizer::Jieba => JIEBA
            .cut(text, false)
            .iter()
            .map(|t| t.word)
            .filter(|w| w.chars().any(char::is_alphanumeric))
            .for_each(|t| keep(t, is_han_token(t))),
        Tokenizer::Words => words(text, |t| keep(t, is_han_token(t))),
        Tokenizer::Chars => {
            let mut buf = [0u8; 4];
            text.chars()
                .filter(|c| c.is_alphanumeric())
                .for_each(|c| emit(c.encode_utf8(&mut buf), is_han(c)));
        }
    }
}

/// Tokens of a normalised chunk, as `tokens` gives them for `chunk.normalized()`. ASCII chunks
/// that still need lower-casing are split first and only the words are lowered (word boundaries
/// in ASCII do not depend on case), which saves copying the whole text.
pub fn chunk_tokens(chunk: Chunk<'_>, tokenizer: Tokenizer, mut emit: impl FnMut(&str, bool)) {
    if !(chunk.lower_ascii && matches!(tokenizer, Tokenizer::Auto | Tokenizer::Words)) {
        return tokens(&chunk.normalized(), tokenizer, emit);
    }
    let mut lowered = String::new();
    ascii_words(chunk.text.as_bytes(), |range| {
        let word = &chunk.text[range];
        let word = if word.bytes().any(|b| b.is_ascii_uppercase()) {
            lowered.clear();
            lowered.push_str(word);
            lowered.make_ascii_lowercase();
            lowered.as_str()
        } else {
            word
        };
        if !is_stopword(word) {
            emit(word, false);
        }
    });
}

/// Splits `text` into maximal runs of Han and of non-Han characters.
fn script_runs(text: &str) -> impl Iterator<Item = (bool, &str)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let han = is_han(first);
        let end = if han {
            rest.char_indices().find(|&(_, c)| !is_han(c)).map_or(rest.len(), |(i, _)| i)
        } else {
            next_han(rest)
        };
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some((han, run))
    })
}

/// UAX #29 words (those with a letter or digit, as `unicode_words`). A word never spans ASCII
/// white space, so the text is cut there and each ASCII piece takes a fast path that gives the
/// same words (tests compare both on random strings); other pieces go to unicode-segmentation.
fn words(text: &str, mut emit: impl FnMut(&str)) {
    if text.is_ascii() {
        ascii_words(text.as_bytes(), |range| emit(&text[range]));
        return;
    }
    for piece in text.split(|c: char| c.is_ascii_whitespace()) {
        if piece.is_ascii() {
            ascii_words(piece.as_bytes(), |range| emit(&piece[range]));
        } else {
            piece.unicode_words().for_each(&mut emit);
        }
    }
}

/// ASCII letters, digits and `_`: the bytes a word is made of.
static WORD_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_';
        b += 1;
    }
    table
};

/// UAX #29 word boundaries restricted to ASCII: letters, digits and `_` (ExtendNumLet) join;
/// `.` `'` `:` join two letters (MidNumLet, MidLetter); `.` `'` `,` `;` join two digits (MidNum).
/// Calls `emit` with the byte range of each word that holds a letter or digit.
fn ascii_words(bytes: &[u8], mut emit: impl FnMut(std::ops::Range<usize>)) {
    let is_word = |b: u8| WORD_BYTE[b as usize];
    let mut i = 0;
    while i < bytes.len() {
        if !is_word(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        let mut alnum = false;
        loop {
            while i < bytes.len() && is_word(bytes[i]) {
                alnum |= bytes[i] != b'_';
                i += 1;
            }
            // A middle character joins only between two letters or two digits.
            if i + 1 < bytes.len() {
                let (prev, mid, next) = (bytes[i - 1], bytes[i], bytes[i + 1]);
                let letters = prev.is_ascii_alphabetic() && next.is_ascii_alphabetic() && matches!(mid, b'.' | b'\'' | b':');
                let digits = prev.is_ascii_digit() && next.is_ascii_digit() && matches!(mid, b'.' | b'\'' | b',' | b';');
                if letters || digits {
                    i += 1;
                    continue;
                }
            }
            break;
        }
        if alnum {
            emit(start..i);
        }
    }
}

/// Byte offset of the first Han character in `text`, or its length. Han characters are at
/// U+2E80 or above, so their UTF-8 lead byte is 0xE2 or more: lower bytes are skipped unread.
fn next_han(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] < 0xE2 {
            i += 1;
            continue;
        }
        // A lead byte >= 0xE2 starts a character (continuation bytes are 0x80..=0xBF).
        match text[i..].chars().next() {
            Some(c) if is_han(c) => return i,
            Some(c) => i += c.len_utf8(),
            None => break,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &str, tokenizer: Tokenizer) -> Vec<String> {
        let mut out = Vec::new();
        tokens(text, tokenizer, |t, han| {
            assert_eq!(han, is_han_token(t), "{t}");
            out.push(t.to_string())
        });
        out
    }

    #[test]
    fn auto_segments_chinese_with_jieba_and_the_rest_by_words() {
        assert_eq!(
            collect("我们在北京大学学习数据库, it's the postgres way!", Tokenizer::Auto),
            ["北京大学", "学习", "数据库", "it's", "postgres", "way"]
        );
    }

    #[test]
    fn ascii_fast_path_matches_unicode_segmentation() {
        let ascii: Vec<String> = "ab1_.:',; \n\"-\tZ9!@/".chars().map(String::from).collect();
        let ascii: Vec<&str> = ascii.iter().map(String::as_str).collect();
        for s in crate::testing::random_strings(0x2545_f491_4f6c_dd1d, 20000, 31, &ascii) {
            let mut fast = Vec::new();
            ascii_words(s.as_bytes(), |r| fast.push(s[r].to_string()));
            let slow: Vec<String> = s.unicode_words().map(str::to_string).collect();
            assert_eq!(fast, slow, "{s:?}");
        }
        // Mixed text: the cut at ASCII white space must not change any word.
        let mut mixed = ascii.clone();
        mixed.extend(["é", "\u{301}", "’", "\u{FFFD}", "ß", "\u{200D}", "\u{A0}", "Ⅻ"]);
        for s in crate::testing::random_strings(0x9e37_79b9_7f4a_7c15, 20000, 29, &mixed) {
            let mut fast = Vec::new();
            words(&s, |t| fast.push(t.to_string()));
            let slow: Vec<String> = s.unicode_words().map(str::to_string).collect();
            assert_eq!(fast, slow, "{s:?}");
        }
        let mut w = Vec::new();
        words("can't stop U.S.A. 3.14 1,000 foo_bar __ a:b e-mail", |t| w.push(t.to_string()));
        assert_eq!(w, ["can't", "stop", "U.S.A", "3.14", "1,000", "foo_bar", "a:b", "e", "mail"]);
    }

    #[test]
    fn chunk_tokens_equal_tokens_of_the_normalised_chunk() {
        let text = "The QUICK brown Fox, can't STOP U.S.A. 3.14 THE End __X__ the";
        for tokenizer in [Tokenizer::Auto, Tokenizer::Words, Tokenizer::Jieba, Tokenizer::Chars] {
            for lower_ascii in [false, true] {
                let chunk = Chunk { text, lower_ascii };
                let (mut fast, mut slow) = (Vec::new(), Vec::new());
                chunk_tokens(chunk, tokenizer, |t, h| fast.push((t.to_string(), h)));
                tokens(&chunk.normalized(), tokenizer, |t, h| slow.push((t.to_string(), h)));
                assert_eq!(fast, slow, "{tokenizer:?} {lower_ascii}");
            }
        }
    }

    #[test]
    fn script_runs_alternate() {
        let runs: Vec<_> = script_runs("ab中文cd。字").collect();
        assert_eq!(runs, [(false, "ab"), (true, "中文"), (false, "cd。"), (true, "字")]);
        assert_eq!(script_runs("").count(), 0);
        let runs: Vec<_> = script_runs("é—〇x𠀀ÿ").collect();
        assert_eq!(runs, [(false, "é—"), (true, "〇"), (false, "x"), (true, "𠀀"), (false, "ÿ")]);
    }

    #[test]
    fn other_tokenizers() {
        assert_eq!(collect("数据库 and data2024", Tokenizer::Jieba), ["数据库", "data2024"]);
        assert_eq!(collect("数据库 and data", Tokenizer::Words), ["数", "据", "库", "data"]);
        assert_eq!(collect("数据 a,b", Tokenizer::Chars), ["数", "据", "a", "b"]);
    }

    #[test]
    fn punctuation_and_space_only_gives_nothing() {
        for t in [Tokenizer::Auto, Tokenizer::Jieba, Tokenizer::Words, Tokenizer::Chars] {
            assert!(collect(" ,.!?。，、—\t\n ", t).is_empty(), "{t:?}");
        }
    }
}
