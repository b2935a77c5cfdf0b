//! Step 1 of the text pipeline: Unicode NFKC, then full case folding, delivered in chunks.
//!
//! NFKC makes full-width Latin, half-width katakana, ligatures and compatibility ideographs equal
//! to their plain forms; full case folding (Unicode `CaseFolding.txt`, statuses C+F) makes `Straße`
//! equal `STRASSE`. Both matter for near-duplicates: copies of a page often differ only there.
//!
//! Text is delivered in chunks of about [`CHUNK_BYTES`] so that memory stays bounded on huge
//! inputs and the caller can check for cancellation between chunks. A chunk only ends just before
//! white space or at a change between Han and non-Han characters (in the normalised text): no
//! token of any tokenizer spans such a point, so cutting there gives the same tokens as
//! processing the whole text at once.

use caseless::Caseless;
use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::UnicodeNormalization;

use crate::script::is_han;

/// The non-starters `c` decomposes into (NFKC), after its last starter if it has one, and
/// whether it has one: a run of non-starters goes on through a character without a starter and
/// starts again after one that has.
fn non_starters(c: char) -> (usize, bool) {
    if c.is_ascii() {
        return (0, true);
    }
    let (mut marks, mut starter) = (0, false);
    unicode_normalization::char::decompose_compatible(c, |d| {
        if canonical_combining_class(d) == 0 {
            (marks, starter) = (0, true);
        } else {
            marks += 1;
        }
    });
    (marks, starter)
}

/// Longest run of combining marks normalised in one piece (see `Sink::nfkc`).
pub const MAX_NON_STARTERS: usize = 1024;

/// Target chunk size in bytes (a chunk can be longer if no safe cut point comes).
pub const CHUNK_BYTES: usize = 64 * 1024;
/// A chunk that reaches this many times the target size with no safe cut point (a megabyte of
/// Chinese without punctuation, a base64 blob) is cut where it is: memory and cancellation stay
/// bounded, at the price of one token split in text that has no natural boundaries anyway.
pub const HARD_LIMIT_FACTOR: usize = 16;

/// A piece of normalised text. ASCII text that only needs lower-casing is handed over as it is,
/// with `lower_ascii` set, so that the tokenizer can lower-case just the words instead of the
/// whole text being copied first; `normalized` gives the text itself.
#[derive(Debug, Clone, Copy)]
pub struct Chunk<'a> {
    pub text: &'a str,
    /// The normalised text is `text` with ASCII upper-case letters lowered.
    pub lower_ascii: bool,
}

impl<'a> Chunk<'a> {
    /// The normalised text of this chunk.
    pub fn normalized(&self) -> std::borrow::Cow<'a, str> {
        if self.lower_ascii {
            std::borrow::Cow::Owned(self.text.to_ascii_lowercase())
        } else {
            std::borrow::Cow::Borrowed(self.text)
        }
    }
}

/// Calls `emit` with consecutive normalised chunks of `text`.
///
/// The raw text is first cut into blocks of about `chunk_bytes` just before ASCII white space,
/// which is a normalisation boundary (NFKC never combines across it), so blocks normalise
/// independently: ASCII blocks by lower-casing, blocks already in NFKC by case folding alone,
/// others through the full NFKC iterator. A block with no ASCII white space for long (Chinese)
/// is cut further, after normalisation, at the safe points described above.
pub fn for_each_chunk(text: &str, case_fold: bool, chunk_bytes: usize, mut emit: impl FnMut(Chunk<'_>)) {
    let mut buf = String::with_capacity(chunk_bytes.min(text.len()).saturating_add(64));
    let mut start = 0;
    while start < text.len() {
        let end = block_end(text, start, chunk_bytes);
        let block = &text[start..end];
        if block.is_ascii() {
            emit(Chunk { text: block, lower_ascii: case_fold });
        } else {
            buf.clear();
            normalize_block(block, case_fold, chunk_bytes, &mut buf, &mut |t| emit(Chunk { text: t, lower_ascii: false }));
        }
        start = end;
    }
}

/// Collects normalised characters into chunks and emits each chunk at the first safe point
/// after it reaches the target size (or at the hard limit).
struct Sink<'b, 'e> {
    buf: &'b mut String,
    chunk_bytes: usize,
    hard_limit: usize,
    case_fold: bool,
    emit: &'e mut dyn FnMut(&str),
}

impl Sink<'_, '_> {
    /// One character of NFKC output, case-folded if asked.
    fn out(&mut self, c: char) {
        if self.case_fold {
            let mut push = |x: char| self.push(x);
            fold_into(c, &mut push);
        } else {
            self.push(c);
        }
    }

    fn push(&mut self, c: char) {
        let buf = &mut *self.buf;
        if buf.len() >= self.chunk_bytes && (is_cut_point(buf.chars().next_back(), c) || buf.len() >= self.hard_limit) {
            (self.emit)(buf);
            buf.clear();
        }
        buf.push(c);
    }

    /// A run of stable characters (ASCII, CJK ideographs), appended in bulk when no chunk can end
    /// inside it; ASCII lower-casing is all the case folding they need.
    fn stable_run(&mut self, run: &str) {
        if self.buf.len() + run.len() < self.chunk_bytes {
            let at = self.buf.len();
            self.buf.push_str(run);
            if self.case_fold {
                self.buf[at..].make_ascii_lowercase();
            }
        } else {
            run.chars().for_each(|c| self.out(c));
        }
    }

    /// The full NFKC iterator over a piece without stable characters. It holds a run of
    /// non-starters (combining marks) until the next starter, to put them in canonical order:
    /// 500 million marks after one letter took gigabytes, without a point where the statement
    /// could be cancelled. So a run longer than [`MAX_NON_STARTERS`] is cut there and each part
    /// normalised on its own, which changes only texts with such runs (Unicode's stream-safe
    /// text has at most 30). The run counts the non-starters characters decompose into: a
    /// few starters (U+0F73, U+FF9E, ...) become marks only when decomposed.
    fn nfkc(&mut self, piece: &str) {
        // No character decomposes into more than one non-starter per byte of its UTF-8.
        if piece.len() <= MAX_NON_STARTERS {
            piece.nfkc().for_each(|c| self.out(c));
            return;
        }
        let (mut start, mut run) = (0, 0);
        for (at, c) in piece.char_indices() {
            let (marks, starter) = non_starters(c);
            run = if starter { marks } else { run + marks };
            if run > MAX_NON_STARTERS {
                piece[start..at].nfkc().for_each(|c| self.out(c));
                (start, run) = (at, marks);
            }
        }
        piece[start..].nfkc().for_each(|c| self.out(c));
    }

    fn finish(&mut self) {
        if !self.buf.is_empty() {
            (self.emit)(self.buf);
            self.buf.clear();
        }
    }
}

/// Normalises one non-ASCII block, emitting chunks cut at safe points.
///
/// NFKC leaves a stable character (see `is_stable`) as it is and never combines it with what
/// precedes it, so text splits before each one into pieces that normalise on their own. A
/// stable character is held back until the next character shows it starts no combining
/// sequence; pieces with anything else go through the full NFKC iterator, and runs of ASCII in
/// between are copied in bulk.
fn normalize_block(block: &str, case_fold: bool, chunk_bytes: usize, buf: &mut String, emit: &mut dyn FnMut(&str)) {
    let mut sink = Sink { buf, chunk_bytes, hard_limit: chunk_bytes.saturating_mul(HARD_LIMIT_FACTOR), case_fold, emit };
    let mut held: Option<(usize, char)> = None;
    let mut slow_from: Option<usize> = None;
    let mut pos = 0;
    while pos < block.len() {
        let (run_end, last) = stable_run(&block[pos..]);
        let (c, next) = if let Some(last) = last {
            // All but the last character of a run of stable characters are followed by a stable
            // character: close what came before and pass them through in bulk.
            if let Some(start) = slow_from.take() {
                sink.nfkc(&block[start..pos]);
            } else if let Some((_, h)) = held.take() {
                sink.out(h);
            }
            let end = pos + run_end;
            sink.stable_run(&block[pos..end - last.len_utf8()]);
            (last, end)
        } else {
            match block[pos..].chars().next() {
                Some(c) => (c, pos + c.len_utf8()),
                None => break,
            }
        };
        let at = next - c.len_utf8();
        if let Some(mapped) = simple_nfkc(c) {
            // Held as what NFKC makes of it; if a combining character follows, the slow piece
            // starts at its raw position and normalises it again from scratch.
            if let Some(start) = slow_from.take() {
                sink.nfkc(&block[start..at]);
            } else if let Some((_, h)) = held {
                sink.out(h);
            }
            held = Some((at, mapped));
        } else if slow_from.is_none() {
            // The piece starts at the held stable character, if any: it may combine with c.
            slow_from = Some(held.take().map_or(at, |(p, _)| p));
        }
        pos = next;
    }
    if let Some(start) = slow_from {
        sink.nfkc(&block[start..]);
    } else if let Some((_, h)) = held {
        sink.out(h);
    }
    sink.finish();
}

/// Length in bytes of the run of stable characters at the start of `text` and its last
/// character, when the run has at least two characters.
fn stable_run(text: &str) -> (usize, Option<char>) {
    let bytes = text.as_bytes();
    let (mut end, mut count, mut last_len) = (0, 0, 0);
    while end < bytes.len() {
        let len = if bytes[end] < 0x80 {
            1
        } else {
            match text[end..].chars().next() {
                Some(c) if is_stable(c) => c.len_utf8(),
                _ => break,
            }
        };
        end += len;
        last_len = len;
        count += 1;
    }
    let last = (count >= 2).then(|| text[end - last_len..end].chars().next()).flatten();
    (end, last)
}

/// Characters NFKC maps to themselves and never combines with a preceding character (starters
/// that are no composition's second element): ASCII and the CJK ideographs of the BMP.
#[inline]
fn is_stable(c: char) -> bool {
    matches!(c as u32, 0..=0x7F | 0x3400..=0x4DBF | 0x4E00..=0x9FFF)
}

/// What NFKC makes of a character that never combines with a preceding character and maps to
/// one character: itself for stable characters and for the CJK punctuation that NFKC keeps
/// (、。〈〉《》「」『』【】〔〕〖〗〘〙〚〛〜〝〞〟), its ASCII twin for a full-width ASCII form
/// (，（）：；！？１Ａ…), a space for the ideographic space. Chinese text is mostly these, so it
/// rarely needs the full NFKC iterator. A test checks every claim against the normaliser.
#[inline]
fn simple_nfkc(c: char) -> Option<char> {
    match c as u32 {
        0..=0x7F | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0x3001..=0x3002 | 0x3008..=0x301F => Some(c),
        0x3000 => Some(' '),
        0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0),
        _ => None,
    }
}

/// Case-folds one character. ASCII, CJK ideographs and Hangul syllables (nearly every character
/// of English and Chinese text) skip the folding tables: ASCII folds by lower-casing and the
/// others have no case (a test checks both claims against the tables).
#[inline]
fn fold_into(c: char, push: &mut impl FnMut(char)) {
    match c as u32 {
        0..=0x7F => push(c.to_ascii_lowercase()),
        0x3400..=0x9FFF | 0xAC00..=0xD7A3 => push(c),
        _ => std::iter::once(c).default_case_fold().for_each(push),
    }
}

/// The whole normalised text as one string (for tests and small inputs).
pub fn normalize(text: &str, case_fold: bool) -> String {
    let mut out = String::new();
    for_each_chunk(text, case_fold, usize::MAX, |chunk| out.push_str(&chunk.normalized()));
    out
}

/// True when a chunk may end between `prev` and `next`.
fn is_cut_point(prev: Option<char>, next: char) -> bool {
    match prev {
        None => false,
        Some(prev) => next.is_whitespace() || is_han(prev) != is_han(next),
    }
}

/// End of the raw block starting at `start`: the first ASCII white space at or after
/// `start + chunk_bytes`; failing that within the hard limit, the hard limit itself when the
/// block is all ASCII (normalised per character, so any cut is safe for normalisation);
/// otherwise the end of the text, whose chunks `normalize_block` then cuts as it streams.
fn block_end(text: &str, start: usize, chunk_bytes: usize) -> usize {
    let bytes = text.as_bytes();
    let from = start.saturating_add(chunk_bytes);
    if from >= bytes.len() {
        return bytes.len();
    }
    let hard = start.saturating_add(chunk_bytes.saturating_mul(HARD_LIMIT_FACTOR)).min(bytes.len());
    // An ASCII byte never occurs inside a multi-byte UTF-8 character, so this is a char boundary.
    if let Some(p) = bytes[from..hard].iter().position(|b| b.is_ascii_whitespace()) {
        return from + p;
    }
    if bytes[start..hard].is_ascii() {
        return hard;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_runs_of_combining_marks_are_cut_and_short_ones_kept() {
        // Runs up to MAX_NON_STARTERS normalise exactly as the whole text does.
        let short = format!("e{}x \u{0301}é{}", "\u{0301}\u{0323}".repeat(MAX_NON_STARTERS / 2), "\u{0308}".repeat(40));
        assert_eq!(normalize(&short, false), short.nfkc().collect::<String>());
        // A run 1000 times longer (the attack of issue 51 at a smaller scale) comes out in the
        // same order and count, cut into runs of at most MAX_NON_STARTERS marks.
        let marks = 1000 * MAX_NON_STARTERS;
        let long = format!("a{}b", "\u{0301}".repeat(marks));
        let mut chunks = 0;
        let mut out = String::new();
        for_each_chunk(&long, true, CHUNK_BYTES, |c| {
            chunks += 1;
            out.push_str(&c.normalized());
        });
        assert_eq!(out.chars().filter(|&c| c == '\u{0301}').count(), marks - 1);
        assert!(out.starts_with('á') && out.ends_with('b'));
        assert!(chunks >= 2, "a long piece reaches the caller in chunks ({chunks})");
        // Starters that decompose into marks count as those marks (U+0F73: two, U+FF9E: one).
        for (c, per) in [('\u{0F73}', 2), ('\u{FF9E}', 1)] {
            let long = format!("a{}b", c.to_string().repeat(300 * MAX_NON_STARTERS));
            let out = normalize(&long, true);
            assert_eq!(out.chars().filter(|&x| canonical_combining_class(x) != 0).count(), 300 * MAX_NON_STARTERS * per);
            assert_eq!(non_starters(c), (per, false));
        }
        assert_eq!(non_starters('a'), (0, true));
        assert_eq!(non_starters('\u{0301}'), (1, false));
        assert_eq!(non_starters('é'), (1, true), "e, then the acute accent");
    }

    #[test]
    fn fold_fast_paths_agree_with_the_tables() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let mut fast = String::new();
            fold_into(c, &mut |x| fast.push(x));
            assert_eq!(fast, caseless::default_case_fold_str(&c.to_string()), "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn simple_nfkc_agrees_with_the_normaliser() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            if let Some(mapped) = simple_nfkc(c) {
                assert_eq!(c.to_string().nfkc().collect::<String>(), mapped.to_string(), "U+{:04X}", c as u32);
                // It starts no composition with what precedes: NFKC of "a" + c is "a" + mapped.
                assert_eq!(format!("a{c}").nfkc().collect::<String>(), format!("a{mapped}"), "U+{:04X}", c as u32);
                assert_eq!(format!("\u{1100}{c}").nfkc().collect::<String>(), format!("\u{1100}{mapped}"));
                // A starter that never combines backwards (quick check not "Maybe").
                assert_eq!(unicode_normalization::char::canonical_combining_class(c), 0);
                assert!(!matches!(
                    unicode_normalization::is_nfkc_quick(std::iter::once(c)),
                    unicode_normalization::IsNormalized::Maybe
                ));
            }
        }
    }

    #[test]
    fn piecewise_nfkc_equals_whole_nfkc() {
        let pieces = [
            "e", "\u{301}", "\u{327}", "中", "，", "１", "Ａ", "ｶ", "\u{FF9E}", "\u{1100}", "\u{1161}", "\u{11A8}", "가",
            "ﬁ", "\u{2126}", " ", "a", "\u{F900}", "㊣", "\u{3099}", "か", "ß", "Σ", "\u{0B47}", "\u{0B3E}", "x",
            "。", "、", "《", "》", "\u{3000}", "（", "）", "：", "Ｚ", "ｚ", "～", "\u{FF5E}", "「", "\u{301C}",
        ];
        for s in crate::testing::random_strings(0x853c_49e6_748f_ea9b, 20000, 13, &pieces) {
            // A leading non-ASCII character keeps the block off the ASCII path.
            let s = format!("\u{E9}{s}");
            let expect: String = s.nfkc().collect();
            assert_eq!(normalize(&s, false), expect, "{s:?}");
            let folded: String = expect.chars().default_case_fold().collect();
            assert_eq!(normalize(&s, true), folded, "{s:?}");
        }
    }

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
    fn runs_without_boundaries_are_cut_at_the_hard_limit() {
        for text in ["x".repeat(10_000), "中".repeat(10_000), "ab中".repeat(3000) + &"é".repeat(5000)] {
            let mut sizes = Vec::new();
            let mut rebuilt = String::new();
            for_each_chunk(&text, false, 100, |c| {
                sizes.push(c.text.len());
                rebuilt.push_str(&c.normalized());
            });
            assert_eq!(rebuilt, normalize(&text, false));
            assert!(sizes.iter().all(|&n| n <= 100 * HARD_LIMIT_FACTOR + 4), "{sizes:?}");
        }
    }

    #[test]
    fn chunks_cut_only_at_safe_points_and_rebuild_the_text() {
        let text = "alpha beta 中文分词 gamma\tdelta 数据库系统 epsilon ".repeat(50);
        let whole = normalize(&text, true);
        for size in [1, 7, 64, 1000] {
            let mut chunks = Vec::new();
            for_each_chunk(&text, true, size, |c| chunks.push(c.normalized().into_owned()));
            assert_eq!(chunks.concat(), whole, "size {size}");
            for pair in chunks.windows(2) {
                let prev = pair[0].chars().next_back();
                let next = pair[1].chars().next().unwrap();
                assert!(is_cut_point(prev, next), "bad cut {:?} | {:?}", prev, next);
            }
        }
        let ascii = "word ".repeat(1000);
        let mut pieces = Vec::new();
        for_each_chunk(&ascii, true, 100, |c| pieces.push(c.normalized().into_owned()));
        assert!(pieces.len() > 10);
        assert_eq!(pieces.concat(), ascii);
    }
}
