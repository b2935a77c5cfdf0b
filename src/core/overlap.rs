//! The exact similarity of two texts: the check that decides whether a pair SimHash proposes
//! really is a near-copy.
//!
//! A fingerprint within k bits is evidence, not proof: texts that share a template, a long
//! boilerplate footer or most of their words land close without being copies. Counting the
//! features two texts share settles it. Each text is reduced to its set of distinct features,
//! with the same normalisation, tokenizer, shingles and markup handling as `simhash` with the
//! same options (`fingerprint::feature_set`), so a user verifies with exactly the words the
//! fingerprint was made of; with `{"ngram": 3}` these are the word 3-shingles of Broder's
//! resemblance.

use crate::feature_table::{by_parts, Budget, TooLarge};
use crate::fingerprint::{feature_hashes_of_part, read_text};
use crate::options::Options;

/// How two feature sets overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlap {
    /// Distinct features of each text.
    pub a: usize,
    pub b: usize,
    /// Distinct features both have.
    pub common: usize,
}

impl Overlap {
    /// The overlap of two feature sets, each sorted and without duplicates
    /// (`fingerprint::feature_set`).
    pub fn of_sets(x: &[u64], y: &[u64]) -> Overlap {
        Overlap { a: x.len(), b: y.len(), common: common(x, y) }
    }

    /// |A ∩ B| / |A ∪ B|: 1 for the same set (two texts without features included), 0 for none
    /// in common.
    pub fn jaccard(&self) -> f64 {
        let union = self.a + self.b - self.common;
        if union == 0 {
            1.0
        } else {
            self.common as f64 / union as f64
        }
    }

    /// |A ∩ B| / |A|: how much of the first text the second holds (a text quoted whole inside a
    /// longer one scores 1). A first text without features is contained in anything.
    pub fn containment(&self) -> f64 {
        if self.a == 0 {
            1.0
        } else {
            self.common as f64 / self.a as f64
        }
    }
}

/// The overlap of the feature sets of `a` and `b` under `opts`; `check` runs between chunks.
/// The two sets share `budget`: texts with more features are compared a part of the hash space
/// at a time (`feature_table::by_parts`), the counts adding up over parts.
pub fn overlap(a: &str, b: &str, opts: &Options, budget: Budget, check: &mut dyn FnMut()) -> Result<Overlap, TooLarge> {
    let (a, b) = (read_text(a, opts, check), read_text(b, opts, check));
    let mut total = Overlap { a: 0, b: 0, common: 0 };
    by_parts(budget, &mut |part| {
        let x = feature_hashes_of_part(&a, opts, part, budget.bytes / 2, check)?;
        let y = feature_hashes_of_part(&b, opts, part, budget.bytes / 2, check)?;
        let o = Overlap::of_sets(&x, &y);
        (total.a, total.b, total.common) = (total.a + o.a, total.b + o.b, total.common + o.common);
        Ok(())
    })?;
    Ok(total)
}

/// Elements two sorted, duplicate-free lists share.
fn common(x: &[u64], y: &[u64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(a: &str, b: &str, options: &str) -> Overlap {
        overlap(a, b, &Options::from_json_str(options).unwrap(), Budget::default(), &mut || {}).unwrap()
    }

    #[test]
    fn counts_shared_distinct_features() {
        // Words: {red, cat, sat} and {red, cat, ran}: 2 shared of 4 (case and repeats aside).
        let x = o("Red cat sat, red cat!", "red CAT ran", "{}");
        assert_eq!(x, Overlap { a: 3, b: 3, common: 2 });
        assert_eq!(x.jaccard(), 0.5);
        assert!((x.containment() - 2.0 / 3.0).abs() < 1e-12);
        // Word 2-shingles: {x y, y z} against {x y, y z, z w}.
        let y = o("x y z", "x y z w", r#"{"ngram": 2}"#);
        assert_eq!((y.jaccard(), y.containment()), (2.0 / 3.0, 1.0));
    }

    #[test]
    fn empty_texts_and_markup() {
        assert_eq!(o("", "", "{}").jaccard(), 1.0);
        assert_eq!(o("", "words", "{}").jaccard(), 0.0);
        assert_eq!(o("", "words", "{}").containment(), 1.0);
        // The same visible text under different markup is the same set.
        let html = o("<div><p>Fish &amp; chips</p></div>", "<td>Fish & chips</td><script>x()</script>", r#"{"markup": "html"}"#);
        assert_eq!(html.jaccard(), 1.0);
        assert!(o("<div><p>Fish &amp; chips</p></div>", "<td>Fish & chips</td>", "{}").jaccard() < 1.0);
    }
}
