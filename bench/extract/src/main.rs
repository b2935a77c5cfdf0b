//! Fingerprints HTML pages under three readings of a page, for bench/extractors.py: our
//! `{"markup": "html"}` (visible text), our `{"markup": "html-main"}` (main content by tag and
//! class rules) and dom_smoothie, a Rust port of Mozilla's Readability. It exists to decide
//! whether a Readability-style extractor would find the same article under other templates
//! more often than html-main does, and at what cost, without adding dom_smoothie to the
//! extension.
//!
//! Input (stdin): JSON lines `{"id": "...", "html": "..."}`. Output (stdout): one JSON line per
//! page, `{"id", "bytes", "<extractor>": {"fp", "chars", "ns"[, "error"]}}`, where `fp` is the
//! 64-bit SimHash (default options: words, TF-IDF, which is TF outside Han text) of the text
//! as hex, `chars` the text's length in characters and `ns` the time of the extraction alone,
//! single-threaded. A page dom_smoothie cannot read gets `"error"` and the fingerprint of an
//! empty text.

use std::io::{self, BufRead, BufWriter, Write};
use std::time::Instant;

use dom_smoothie::{Config, Readability, TextMode};
use serde_json::{json, Value};
use simhash_core::fingerprint::simhash;
use simhash_core::markup::{main_text, visible_text};
use simhash_core::options::Options;

/// dom_smoothie's article text, with a line break between blocks (its default, the DOM's
/// `textContent`, runs the words of adjacent paragraphs together).
fn readability(html: &str) -> Result<String, String> {
    let config = Config {
        text_mode: TextMode::Formatted,
        ..Config::default()
    };
    let mut reader = Readability::new(html, None, Some(config)).map_err(|e| e.to_string())?;
    reader
        .parse()
        .map(|article| article.text_content.to_string())
        .map_err(|e| e.to_string())
}

/// Times `extract` on `html` and fingerprints what it returns.
fn run(html: &str, extract: impl Fn(&str) -> Result<String, String>) -> Value {
    let start = Instant::now();
    let text = extract(html);
    let ns = start.elapsed().as_nanos() as u64;
    let (text, error) = match text {
        Ok(text) => (text, None),
        Err(e) => (String::new(), Some(e)),
    };
    let fp = simhash(&text, &Options::default(), &mut || {});
    let mut out = json!({"fp": format!("{fp:016x}"), "chars": text.chars().count(), "ns": ns});
    if let Some(e) = error {
        out["error"] = json!(e);
    }
    out
}

fn main() -> io::Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    for line in io::stdin().lock().lines() {
        let page: Value = serde_json::from_str(&line?).map_err(io::Error::other)?;
        let html = page["html"].as_str().unwrap_or_default();
        let row = json!({
            "id": page["id"],
            "bytes": html.len(),
            "html": run(html, |h| Ok(visible_text(h, &mut || {}))),
            "html-main": run(html, |h| Ok(main_text(h, &mut || {}))),
            "readability": run(html, readability),
        });
        writeln!(out, "{row}")?;
    }
    out.flush()
}
