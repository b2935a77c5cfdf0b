//! The options of `simhash(body, options jsonb)`, parsed and checked.
//!
//! Unknown keys and bad values are errors naming the key (SQLSTATE 22023 in the extension): a
//! misspelt option silently ignored would give fingerprints that never match the ones a user
//! meant to compute.

use std::fmt;

use serde_json::{Map, Value};

use crate::tokenize::Tokenizer;

/// The only pipeline version so far. A future change of defaults comes as version 2, 3, …;
/// version 1 keeps computing exactly what it computes today.
pub const PIPELINE_VERSION: u64 = 1;
/// Largest shingle size.
pub const MAX_NGRAM: u64 = 8;

/// How features are weighted before they vote on the bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weighting {
    /// Each distinct feature counts once.
    Binary,
    /// Term frequency: a feature counts as often as it occurs.
    Tf,
    /// Term frequency times inverse document frequency (jieba's bundled IDF table).
    TfIdf,
}


/// What the text is: plain text, or an HTML document whose visible text is fingerprinted
/// (`markup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    /// The text as it is (tags, if any, are words like any other).
    None,
    /// HTML: only the text a reader sees (`markup::visible_text`).
    Html,
    /// HTML: only the page's main content, without the site's frame (`markup::main_text`).
    HtmlMain,
}

/// Everything that determines a fingerprint besides the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub version: u64,
    pub tokenizer: Tokenizer,
    /// Shingle size: features are runs of this many consecutive tokens.
    pub ngram: usize,
    pub weighting: Weighting,
    /// Keep only the `top_k` heaviest features (None: keep all).
    pub top_k: Option<usize>,
    pub case_fold: bool,
    /// Seed of the xxh3-64 feature hash.
    pub seed: u64,
    /// How the text is read before it is normalised.
    pub markup: Markup,
}

impl Default for Options {
    /// The defaults of pipeline version 1, chosen by the detection-quality benchmark
    /// (BENCHMARKS.md, "Detection quality").
    fn default() -> Self {
        Options {
            version: PIPELINE_VERSION,
            tokenizer: Tokenizer::Auto,
            ngram: 1,
            weighting: Weighting::TfIdf,
            top_k: None,
            case_fold: true,
            seed: 0,
            markup: Markup::None,
        }
    }
}

/// A bad option: which key, and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    pub key: String,
    pub message: String,
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "invalid simhash options: {}", self.message)
        } else {
            write!(f, "invalid simhash option \"{}\": {}", self.key, self.message)
        }
    }
}

impl std::error::Error for OptionError {}

fn bad(key: &str, message: impl Into<String>) -> OptionError {
    OptionError { key: key.to_string(), message: message.into() }
}

fn uint(key: &str, value: &Value, min: u64, max: u64) -> Result<u64, OptionError> {
    value
        .as_u64()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| bad(key, format!("must be an integer from {min} to {max}, got {value}")))
}

fn choice<T: Copy>(key: &str, value: &Value, choices: &[(&str, T)]) -> Result<T, OptionError> {
    let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
    value
        .as_str()
        .and_then(|s| choices.iter().find(|(n, _)| *n == s).map(|(_, v)| *v))
        .ok_or_else(|| bad(key, format!("must be one of {}, got {value}", names.join(", "))))
}

impl Options {
    /// Parses a JSON object; `{}` (or JSON null) gives the defaults.
    pub fn from_json(json: &Value) -> Result<Options, OptionError> {
        let empty = Map::new();
        let map = match json {
            Value::Object(map) => map,
            Value::Null => &empty,
            other => return Err(bad("", format!("expected a JSON object, got {other}"))),
        };
        let mut opts = Options::default();
        for (key, value) in map {
            let k = key.as_str();
            match k {
                "version" => {
                    opts.version = value.as_u64().filter(|&v| v == PIPELINE_VERSION).ok_or_else(|| {
                        bad(k, format!("must be {PIPELINE_VERSION}, the only pipeline version so far, got {value}"))
                    })?
                }
                "tokenizer" => {
                    opts.tokenizer = choice(
                        k,
                        value,
                        &[
                            ("auto", Tokenizer::Auto),
                            ("jieba", Tokenizer::Jieba),
                            ("words", Tokenizer::Words),
                            ("chars", Tokenizer::Chars),
                        ],
                    )?
                }
                "ngram" => opts.ngram = uint(k, value, 1, MAX_NGRAM)? as usize,
                "weighting" => {
                    opts.weighting = choice(
                        k,
                        value,
                        &[("tf", Weighting::Tf), ("tfidf", Weighting::TfIdf), ("binary", Weighting::Binary)],
                    )?
                }
                "top_k" => {
                    opts.top_k = match value {
                        Value::Null => None,
                        v => Some(uint(k, v, 1, u32::MAX as u64)? as usize),
                    }
                }
                "case_fold" => {
                    opts.case_fold = value
                        .as_bool()
                        .ok_or_else(|| bad(k, format!("must be true or false, got {value}")))?
                }
                "seed" => opts.seed = uint(k, value, 0, u64::MAX)?,
                "markup" => {
                    opts.markup =
                        choice(k, value, &[("none", Markup::None), ("html", Markup::Html), ("html-main", Markup::HtmlMain)])?
                }
                _ => {
                    return Err(bad(
                        k,
                        "unknown option; known: version, tokenizer, ngram, weighting, top_k, case_fold, seed, markup",
                    ))
                }
            }
        }
        Ok(opts)
    }

    /// Parses JSON text (used by tests and tools; the extension hands over parsed jsonb).
    pub fn from_json_str(text: &str) -> Result<Options, OptionError> {
        let value: Value = serde_json::from_str(text).map_err(|e| bad("", e.to_string()))?;
        Options::from_json(&value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_object_and_null_give_defaults() {
        assert_eq!(Options::from_json_str("{}"), Ok(Options::default()));
        assert_eq!(Options::from_json_str("null"), Ok(Options::default()));
    }

    #[test]
    fn every_option_parses() {
        let o = Options::from_json_str(
            r#"{"version":1,"tokenizer":"chars","ngram":3,"weighting":"tfidf","top_k":20,"case_fold":false,"seed":18446744073709551615,"markup":"html"}"#,
        )
        .unwrap();
        assert_eq!(o.tokenizer, Tokenizer::Chars);
        assert_eq!((o.ngram, o.weighting, o.top_k, o.case_fold, o.seed), (3, Weighting::TfIdf, Some(20), false, u64::MAX));
        assert_eq!(o.markup, Markup::Html);
        assert_eq!(Options::from_json_str(r#"{"top_k":null}"#).unwrap().top_k, None);
        assert_eq!(Options::from_json_str(r#"{"markup":"none"}"#), Ok(Options::default()));
    }

    #[test]
    fn errors_name_the_key() {
        for (json, key) in [
            (r#"{"ngramm":2}"#, "ngramm"),
            (r#"{"ngram":0}"#, "ngram"),
            (r#"{"ngram":9}"#, "ngram"),
            (r#"{"ngram":"2"}"#, "ngram"),
            (r#"{"ngram":2.5}"#, "ngram"),
            (r#"{"tokenizer":"spaces"}"#, "tokenizer"),
            (r#"{"weighting":1}"#, "weighting"),
            (r#"{"top_k":0}"#, "top_k"),
            (r#"{"top_k":-3}"#, "top_k"),
            (r#"{"case_fold":"yes"}"#, "case_fold"),
            (r#"{"seed":-1}"#, "seed"),
            (r#"{"version":2}"#, "version"),
        ] {
            let err = Options::from_json_str(json).unwrap_err();
            assert_eq!(err.key, key, "{json}");
            assert!(err.to_string().contains(&format!("\"{key}\"")), "{err}");
        }
        assert_eq!(Options::from_json_str("[1]").unwrap_err().key, "");
        assert_eq!(Options::from_json_str("{").unwrap_err().key, "");
    }
}
