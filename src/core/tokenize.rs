//! Step 2 of the text pipeline: normalised text to tokens, by script.
//!
//! Chinese has no spaces between words, so runs of Han characters are segmented with jieba-rs
//! (its bundled dictionary, no HMM, so no word is guessed); every other script is split on Unicode
//! word boundaries (UAX #29). Punctuation, white space and stopwords never become tokens.

use std::sync::LazyLock;

use jieba_rs::Jieba;
use unicode_segmentation::UnicodeSegmentation;

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

impl Tokenizer {
    /// The option value naming this tokenizer.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::Auto => "auto",
            Tokenizer::Jieba => "jieba",
            Tokenizer::Words => "words",
            Tokenizer::Chars => "chars",
        }
    }
}

/// The process-wide jieba segmenter, loaded on first use (its dictionary takes a moment).
pub static JIEBA: LazyLock<Jieba> = LazyLock::new(Jieba::new);

/// Calls `emit` with each token of an already normalised `text`, in text order.
pub fn tokens(text: &str, tokenizer: Tokenizer, mut emit: impl FnMut(&str)) {
    let mut keep = |t: &str| {
        if !is_stopword(t) {
            emit(t)
        }
    };
    match tokenizer {
        Tokenizer::Auto => {
            for (han, run) in script_runs(text) {
                if han {
                    JIEBA.cut(run, false).iter().for_each(|t| keep(t.word));
                } else {
                    run.unicode_words().for_each(&mut keep);
                }
            }
        }
        Tokenizer::Jieba => JIEBA
            .cut(text, false)
            .iter()
            .map(|t| t.word)
            .filter(|w| w.chars().any(char::is_alphanumeric))
            .for_each(keep),
        Tokenizer::Words => text.unicode_words().for_each(keep),
        Tokenizer::Chars => {
            let mut buf = [0u8; 4];
            text.chars().filter(|c| c.is_alphanumeric()).for_each(|c| emit(c.encode_utf8(&mut buf)));
        }
    }
}

/// Splits `text` into maximal runs of Han and of non-Han characters.
fn script_runs(text: &str) -> impl Iterator<Item = (bool, &str)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let han = is_han(first);
        let end = rest.char_indices().find(|&(_, c)| is_han(c) != han).map_or(rest.len(), |(i, _)| i);
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some((han, run))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &str, tokenizer: Tokenizer) -> Vec<String> {
        let mut out = Vec::new();
        tokens(text, tokenizer, |t| out.push(t.to_string()));
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
    fn script_runs_alternate() {
        let runs: Vec<_> = script_runs("ab中文cd。字").collect();
        assert_eq!(runs, [(false, "ab"), (true, "中文"), (false, "cd。"), (true, "字")]);
        assert_eq!(script_runs("").count(), 0);
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
