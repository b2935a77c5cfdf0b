//! The distinct features of a text, counted within a memory budget.
//!
//! TF and TF-IDF fingerprints are sums over occurrences and need no table (`fingerprint`
//! streams them). Binary weighting, `top_k`, `simhash_features` and the feature sets of
//! `simhash_jaccard` need each distinct feature once, so they keep a table, and a table grows
//! with the text: with `{"tokenizer": "chars", "ngram": 8}` nearly every character starts a
//! feature of its own. Unbounded, a few megabytes of text took gigabytes, and an allocation
//! the system refuses aborts the backend, which restarts every session of the server.
//!
//! So a table is kept within a [`Budget`] of bytes. When a text's table would outgrow it, the
//! text is read again in several passes, each counting only the features whose hash falls in
//! one part of the hash space ([`Part`]): each distinct feature lives in exactly one part, and
//! what the callers compute from the table (vote sums, top-k, counts of shared features) adds
//! up over parts, so the answer is the same bit for bit, at the price of re-reading the text.
//! Parts split by the hash's top bits, so part order is hash order. More than
//! [`Budget::parts`] parts, or a result that itself outgrows the budget, is [`TooLarge`]; an
//! allocation the system refuses is [`TooLarge::OutOfMemory`] instead of an abort.

use rustc_hash::FxHashMap;
use std::fmt;

/// The floor of a table's budget, whatever `work_mem` says: 64 MB holds the features of texts
/// of a few megabytes in one pass.
pub const BUDGET_FLOOR_BYTES: usize = 64 << 20;

/// Most parts a text is read in, after the pass that found that it needs them: reading it more
/// often costs more than it is worth.
pub const MAX_PARTS: usize = 64;

/// How much memory a table of features may take, and in how many parts the text may be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub bytes: usize,
    pub parts: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { bytes: BUDGET_FLOOR_BYTES, parts: MAX_PARTS }
    }
}

impl Budget {
    /// A budget of `bytes`, at least [`BUDGET_FLOOR_BYTES`] (the extension passes `work_mem`).
    pub fn at_least_floor(bytes: usize) -> Budget {
        Budget { bytes: bytes.max(BUDGET_FLOOR_BYTES), parts: MAX_PARTS }
    }
}

/// A text whose features do not fit: the extension reports the first two as SQLSTATE 54000
/// (program limit exceeded) and the last as 53200 (out of memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TooLarge {
    /// The table needs more than `parts` parts of `bytes` each.
    Parts { bytes: usize, parts: usize },
    /// The result itself (the features listed, the kept top-k) needs more than `bytes`.
    Result { bytes: usize },
    /// The system refused an allocation of `bytes`.
    OutOfMemory { bytes: usize },
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TooLarge::Parts { bytes, parts } => write!(
                f,
                "the text has too many distinct features: they need more than {parts} passes of {} MB",
                bytes >> 20
            ),
            TooLarge::Result { bytes } => {
                write!(f, "the text's features need more than {} MB of memory", bytes >> 20)
            }
            TooLarge::OutOfMemory { bytes } => write!(f, "out of memory: an allocation of {bytes} bytes failed"),
        }
    }
}

impl std::error::Error for TooLarge {}

/// Part `index` of `of` equal parts of the 64-bit hash space, by the hash's top bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub index: usize,
    pub of: usize,
}

impl Part {
    pub const WHOLE: Part = Part { index: 0, of: 1 };

    /// Whether `hash` falls in this part.
    #[inline]
    pub fn holds(&self, hash: u64) -> bool {
        self.of == 1 || ((u128::from(hash) * self.of as u128) >> 64) as usize == self.index
    }

    /// This part cut in `n` equal parts, in hash order.
    fn split(self, n: usize) -> impl DoubleEndedIterator<Item = Part> {
        (0..n).map(move |i| Part { index: self.index * n + i, of: self.of * n })
    }
}

/// One distinct feature: its hash, the index of its first occurrence among all the text's
/// feature occurrences (so the order of first occurrences, whichever part it is in), how often
/// it occurs, the unit weight of its first occurrence, and its text when asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Distinct {
    pub hash: u64,
    pub first: u64,
    pub tf: i64,
    pub unit: i64,
    pub text: Option<String>,
}

/// A distinct feature while counting: 16 bytes (a 1 GB text has fewer than 2^32 occurrences,
/// and a unit weight is at most about 2^21), its text, when kept, in a map of its own.
struct Entry {
    first: u64,
    tf: u32,
    unit: i32,
}

/// Bytes a table holding `capacity` entries takes: hashbrown keeps at most 7 of 8 buckets full
/// and one control byte per bucket.
fn table_bytes(capacity: usize) -> usize {
    let bucket = std::mem::size_of::<(u64, Entry)>() + 1;
    capacity.saturating_mul(8) / 7 * bucket
}

/// The same for the map of kept texts (their bytes are counted apart).
fn text_table_bytes(capacity: usize) -> usize {
    let bucket = std::mem::size_of::<(u64, Box<str>)>() + 1;
    capacity.saturating_mul(8) / 7 * bucket
}

/// Why a pass stopped early.
#[derive(Debug)]
pub enum Stop {
    /// The part's table would outgrow the budget after `filled` of the part's `total`
    /// occurrences: split the part, in about `total / filled` parts.
    Full { filled: u64, total: u64 },
    /// Give up with this error.
    Fail(TooLarge),
}

impl From<TooLarge> for Stop {
    fn from(e: TooLarge) -> Stop {
        Stop::Fail(e)
    }
}

/// Reads the text part by part, in hash order, until every part fits: `read(part)` reads one
/// part (one pass), the whole text first; a part it finds `Full` is split in as many parts as
/// it seems to need (a power of two, from how far the full pass got, with a quarter to spare,
/// at most the parts left) and each one read again. Fails when a part is full and no two parts
/// are left of `budget.parts`.
pub fn by_parts(budget: Budget, read: &mut dyn FnMut(Part) -> Result<(), Stop>) -> Result<(), TooLarge> {
    // Parts still to read, the next one last; parts read.
    let mut todo = vec![Part::WHOLE];
    let mut done = 0;
    while let Some(part) = todo.pop() {
        match read(part) {
            Ok(()) => done += 1,
            Err(Stop::Full { filled, total }) => {
                // The estimate counts occurrences, and distinct features grow slower than that:
                // where it asks for more parts than are left, take what is left (a part that
                // is still too full splits again while parts remain).
                let need = (total as f64 * 1.25 / filled.max(1) as f64).ceil().clamp(2.0, 1024.0) as usize;
                let left = budget.parts.saturating_sub(done + todo.len());
                let n = need.next_power_of_two().min(if left >= 2 { 1 << left.ilog2() } else { 0 });
                if n < 2 {
                    return Err(TooLarge::Parts { bytes: budget.bytes, parts: budget.parts });
                }
                todo.extend(part.split(n).rev());
            }
            Err(Stop::Fail(e)) => return Err(e),
        }
    }
    Ok(())
}

/// Reads the feature occurrences `each` hands over, keeping the distinct ones of `part`,
/// within `bytes`. `each(emit)` must call `emit(hash, unit, text)` for every occurrence in text
/// order, and stop early when `emit` returns false.
fn count_part(
    part: Part,
    bytes: usize,
    keep_text: bool,
    each: &mut dyn FnMut(&mut dyn FnMut(u64, i64, &str) -> bool),
    take: &mut dyn FnMut(&mut dyn Iterator<Item = Distinct>) -> Result<(), TooLarge>,
) -> Result<(), Stop> {
    // Keys are xxh3 hashes already: Fx, a multiply, spreads them as well as SipHash, faster.
    let mut table: FxHashMap<u64, Entry> = FxHashMap::default();
    let mut texts: FxHashMap<u64, Box<str>> = FxHashMap::default();
    let mut text_bytes = 0usize;
    let mut occurrence = 0u64;
    // The part's occurrences, and how many came before the table filled up.
    let (mut in_part, mut filled) = (0u64, None);
    let mut stop = None;
    each(&mut |hash, unit, text| {
        let at = occurrence;
        occurrence += 1;
        if !part.holds(hash) {
            return true;
        }
        in_part += 1;
        if filled.is_some() {
            return true; // only counting, to know how many parts to split into
        }
        if let Some(entry) = table.get_mut(&hash) {
            entry.tf = entry.tf.saturating_add(1);
            return true;
        }
        if table.len() == table.capacity() {
            // Grow by doubling, counting the old table too: both are live while it moves.
            let grow = table.capacity().max(64);
            let now = table_bytes(table.capacity()) + text_table_bytes(texts.capacity());
            let after = now + table_bytes(table.capacity() + grow) + keep_text as usize * text_table_bytes(texts.capacity() + grow);
            if after + text_bytes > bytes {
                filled = Some(in_part);
                return true;
            }
            if table.try_reserve(grow).is_err() || (keep_text && texts.try_reserve(grow).is_err()) {
                stop = Some(Stop::Fail(TooLarge::OutOfMemory { bytes: after }));
                return false;
            }
        }
        if keep_text {
            text_bytes += text.len();
            if table_bytes(table.capacity()) + text_table_bytes(texts.capacity()) + text_bytes > bytes {
                filled = Some(in_part);
                return true;
            }
            let mut owned = String::new();
            if owned.try_reserve_exact(text.len()).is_err() {
                stop = Some(Stop::Fail(TooLarge::OutOfMemory { bytes: text.len() }));
                return false;
            }
            owned.push_str(text);
            texts.insert(hash, owned.into_boxed_str());
        }
        // Unit weights fit i32 (see Entry).
        table.insert(hash, Entry { first: at, tf: 1, unit: unit.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 });
        true
    });
    if let Some(stop) = stop {
        return Err(stop);
    }
    if let Some(filled) = filled {
        return Err(Stop::Full { filled, total: in_part });
    }
    // The features go to `take` straight from the table: no second copy.
    let mut distinct = table.into_iter().map(|(hash, e)| Distinct {
        hash,
        first: e.first,
        tf: i64::from(e.tf),
        unit: i64::from(e.unit),
        text: texts.remove(&hash).map(String::from),
    });
    Ok(take(&mut distinct)?)
}

/// Hands every distinct feature to `take`, a part at a time (parts in hash order, features of a
/// part in no particular order), each part's table within `budget` ([`by_parts`]). `each` is as
/// for [`count_part`]; `take` may refuse with its own [`TooLarge`].
pub fn for_each_part(
    budget: Budget,
    keep_text: bool,
    each: &mut dyn FnMut(&mut dyn FnMut(u64, i64, &str) -> bool),
    take: &mut dyn FnMut(&mut dyn Iterator<Item = Distinct>) -> Result<(), TooLarge>,
) -> Result<(), TooLarge> {
    by_parts(budget, &mut |part| count_part(part, budget.bytes, keep_text, each, take))
}

/// The distinct hashes of `part` among the occurrences `each` hands over (hash only), sorted,
/// within `bytes`: duplicates are dropped whenever the list fills up, before it grows. `Full`
/// when the distinct hashes alone outgrow the budget.
pub fn distinct_hashes(part: Part, bytes: usize, each: &mut dyn FnMut(&mut dyn FnMut(u64) -> bool)) -> Result<Vec<u64>, Stop> {
    let mut hashes: Vec<u64> = Vec::new();
    let mut failed = None;
    let (mut in_part, mut filled) = (0u64, None);
    each(&mut |hash| {
        if !part.holds(hash) {
            return true;
        }
        in_part += 1;
        if filled.is_some() {
            return true;
        }
        if hashes.len() == hashes.capacity() {
            // Grow while the budget allows (old and new buffer both live while it moves);
            // only then drop duplicates, and grow again if that freed too little.
            let grow = hashes.capacity().max(1024);
            let fits = (2 * hashes.capacity() + grow) * 8 <= bytes;
            if !fits {
                hashes.sort_unstable();
                hashes.dedup();
            }
            if fits || hashes.len() * 2 > hashes.capacity() {
                if (2 * hashes.capacity() + grow) * 8 > bytes {
                    filled = Some(in_part);
                    return true;
                }
                if hashes.try_reserve_exact(grow).is_err() {
                    failed = Some(Stop::Fail(TooLarge::OutOfMemory { bytes: (hashes.capacity() + grow) * 8 }));
                    return false;
                }
            }
        }
        hashes.push(hash);
        true
    });
    if let Some(e) = failed {
        return Err(e);
    }
    if let Some(filled) = filled {
        return Err(Stop::Full { filled, total: in_part });
    }
    hashes.sort_unstable();
    hashes.dedup();
    Ok(hashes)
}

/// Room for `n` more elements in `v`, or [`TooLarge::OutOfMemory`].
pub fn try_room<T>(v: &mut Vec<T>, n: usize) -> Result<(), TooLarge> {
    v.try_reserve(n).map_err(|_| TooLarge::OutOfMemory { bytes: n.saturating_mul(std::mem::size_of::<T>()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Occurrences of hashes spread over the space, with repeats.
    fn occurrences(n: u64) -> Vec<u64> {
        (0..n).map(|i| (i % (n / 3 + 1)).wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect()
    }

    fn collect(budget: Budget, occ: &[u64]) -> Result<(Vec<Distinct>, usize), TooLarge> {
        let mut all = Vec::new();
        let mut parts = 0;
        for_each_part(
            budget,
            false,
            &mut |emit| {
                for &h in occ {
                    if !emit(h, 7, "") {
                        return;
                    }
                }
            },
            &mut |part| {
                parts += 1;
                all.extend(part);
                Ok(())
            },
        )?;
        all.sort_by_key(|d| d.first);
        Ok((all, parts))
    }

    #[test]
    fn parts_split_the_hash_space_in_order() {
        let halves: Vec<Part> = Part::WHOLE.split(2).collect();
        assert!(halves[0].holds(0) && halves[0].holds(u64::MAX >> 1) && halves[1].holds(1 << 63) && halves[1].holds(u64::MAX));
        for h in [0u64, 1, 1 << 40, 1 << 63, u64::MAX, 0x1234_5678_9abc_def0] {
            let quarters: Vec<Part> = halves.iter().flat_map(|h| h.split(2)).collect();
            assert_eq!(quarters.iter().filter(|q| q.holds(h)).count(), 1);
            let q = quarters.iter().position(|q| q.holds(h)).unwrap();
            assert!(halves[q / 2].holds(h), "a quarter lies in its half");
        }
    }

    #[test]
    fn a_small_budget_gives_the_same_features_in_more_passes() {
        let occ = occurrences(30_000);
        let (whole, one) = collect(Budget::default(), &occ).unwrap();
        assert_eq!(one, 1);
        let (split, many) = collect(Budget { bytes: 200_000, parts: 64 }, &occ).unwrap();
        assert!(many > 1, "{many} parts");
        assert_eq!(whole, split);
        assert_eq!(whole.len(), 10_001);
        assert_eq!(whole.iter().map(|d| d.tf).sum::<i64>(), 30_000);
    }

    #[test]
    fn too_few_parts_is_an_error() {
        let occ = occurrences(30_000);
        assert_eq!(
            collect(Budget { bytes: 200_000, parts: 2 }, &occ).err(),
            Some(TooLarge::Parts { bytes: 200_000, parts: 2 })
        );
    }

    #[test]
    fn distinct_hashes_are_sorted_and_bounded() {
        let occ = occurrences(50_000);
        let mut want: Vec<u64> = occ.clone();
        want.sort_unstable();
        want.dedup();
        let run = |bytes| distinct_hashes(Part::WHOLE, bytes, &mut |emit| occ.iter().all(|&h| emit(h)).then_some(()).unwrap_or(()));
        assert_eq!(run(1 << 20).unwrap(), want);
        assert!(matches!(run(64 << 10), Err(Stop::Full { .. })));
    }
}
