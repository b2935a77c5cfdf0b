//! Step 1 of the text pipeline: Unicode NFKC, then full case folding, delivered in chunks.
//!
//! NFKC makes full-width Latin, half-width katakana, ligatures and compatibility ideographs equal
//! to their plain forms; full case folding (Unicode `CaseFolding.txt`, statuses C+F) makes `Straße`
//! equal `STRASSE`. Both matter for near-duplicates: copies of a page often differ only there.
//!
//! Text is delivered in chunks of about [`CHUNK_BYTES`] so that memory stays bounded on huge
//! inputs and the caller can check for cancellation between chunks. A chunk only ends just before
//! white space or at a change between Han and non-Han characters: no token of any tokenizer spans
//! such a point, so cutting there gives the same tokens as processing the whole text at once.

use caseless::Caseless;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

use crate::script::is_han;

/// Target chunk size in bytes (a chunk can be longer if no safe cut point comes).
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Calls `emit` with consecutive normalised chunks of `text`.
pub fn for_each_chunk(text: &str, case_fold: bool, chunk_bytes: usize, mut emit: impl FnMut(&str)) {
    if text.is_ascii() {
        // NFKC is the identity on ASCII and case folding is ASCII lower-casing there.
        let mut buf = String::with_capacity(chunk_bytes.min(text.len()) + 16);
        let mut start = 0;
        while start < text.len() {
            let end = ascii_cut(text, start, chunk_bytes);
            buf.clear();
            buf.push_str(&text[start..end]);
            if case_fold {
                buf.make_ascii_lowercase();
            }
            emit(&buf);
            start = end;
        }
        return;
    }
    let mut buf = String::with_capacity(chunk_bytes.min(text.len()).saturating_add(64));
    let push = |c: char, buf: &mut String, emit: &mut dyn FnMut(&str)| {
        if buf.len() >= chunk_bytes && is_cut_point(buf.chars().next_back(), c) {
            emit(buf);
            buf.clear();
        }
        buf.push(c);
    };
    let already_nfkc = matches!(is_nfkc_quick(text.chars()), IsNormalized::Yes);
    match (already_nfkc, case_fold) {
        (true, false) => text.chars().for_each(|c| push(c, &mut buf, &mut emit)),
        (true, true) => text.chars().default_case_fold().for_each(|c| push(c, &mut buf, &mut emit)),
        (false, false) => text.nfkc().for_each(|c| push(c, &mut buf, &mut emit)),
        (false, true) => text.nfkc().default_case_fold().for_each(|c| push(c, &mut buf, &mut emit)),
    }
    if !buf.is_empty() {
        emit(&buf);
    }
}

/// The whole normalised text as one string (for tests and small inputs).
pub fn normalize(text: &str, case_fold: bool) -> String {
    let mut out = String::new();
    for_each_chunk(text, case_fold, usize::MAX, |chunk| out.push_str(chunk));
    out
}

/// True when a chunk may end between `prev` and `next`.
fn is_cut_point(prev: Option<char>, next: char) -> bool {
    match prev {
        None => false,
        Some(prev) => next.is_whitespace() || is_han(prev) != is_han(next),
    }
}

/// End of the ASCII chunk starting at `start`: the first white space at or after
/// `start + chunk_bytes`, or the end of the text.
fn ascii_cut(text: &str, start: usize, chunk_bytes: usize) -> usize {
    let bytes = text.as_bytes();
    let from = start.saturating_add(chunk_bytes);
    if from >= bytes.len() {
        return bytes.len();
    }
    bytes[from..]
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .map_or(bytes.len(), |p| from + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nfkc_and_full_case_folding() {
        assert_eq!(normalize("Straße", true), "strasse");
        assert_eq!(normalize("ＡＢＣ１２３", true), "abc123");
        assert_eq!(normalize("ﬁle", true), "file");
        assert_eq!(normalize("ΣΊΣΥΦΟΣ", true), "σίσυφοσ");
        assert_eq!(normalize("ＡＢＣ", false), "ABC");
        assert_eq!(normalize("Hello World", true), "hello world");
        assert_eq!(normalize("ｶﾀｶﾅ，中文！", true), "カタカナ,中文!");
    }

    #[test]
    fn chunks_cut_only_at_safe_points_and_rebuild_the_text() {
        let text = "alpha beta 中文分词 gamma\tdelta 数据库系统 epsilon ".repeat(50);
        let whole = normalize(&text, true);
        for size in [1, 7, 64, 1000] {
            let mut chunks = Vec::new();
            for_each_chunk(&text, true, size, |c| chunks.push(c.to_string()));
            assert_eq!(chunks.concat(), whole, "size {size}");
            for pair in chunks.windows(2) {
                let prev = pair[0].chars().next_back();
                let next = pair[1].chars().next().unwrap();
                assert!(is_cut_point(prev, next), "bad cut {:?} | {:?}", prev, next);
            }
        }
        let ascii = "word ".repeat(1000);
        let mut pieces = Vec::new();
        for_each_chunk(&ascii, true, 100, |c| pieces.push(c.to_string()));
        assert!(pieces.len() > 10);
        assert_eq!(pieces.concat(), ascii);
    }
}
