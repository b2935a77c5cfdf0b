//! Distances between fingerprints.
//!
//! SimHash maps documents so that the Hamming distance between fingerprints estimates the angle
//! between the documents' weighted feature vectors (Charikar, STOC 2002): each bit differs with
//! probability theta / pi. Everything near-duplicate search does rests on these few lines.

use std::f64::consts::PI;
use std::fmt;

/// Number of bits in a fingerprint, and so the largest possible distance.
pub const BITS: u32 = 64;

/// Number of differing bits: XOR, then population count.
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// `1 - d/64`: the fraction of bits two fingerprints agree on, a number users can threshold.
#[inline]
pub fn similarity(a: u64, b: u64) -> f64 {
    1.0 - f64::from(hamming(a, b)) / f64::from(BITS)
}

/// `cos(pi * d / 64)`: Charikar's estimate of the cosine similarity of the weighted feature
/// vectors behind the fingerprints, since each bit differs with probability angle / pi.
#[inline]
pub fn cosine(a: u64, b: u64) -> f64 {
    (PI * f64::from(hamming(a, b)) / f64::from(BITS)).cos()
}

/// A distance bound outside 0..=64; the extension reports it as SQLSTATE 22023.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadThreshold(pub i64);

impl fmt::Display for BadThreshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "distance bound k must be between 0 and {BITS}, got {}", self.0)
    }
}

impl std::error::Error for BadThreshold {}

/// Checks a caller's bound k; a negative k would silently match nothing and a k above 64 would
/// silently match everything, so both are errors rather than surprises.
pub fn check_threshold(k: i64) -> Result<u32, BadThreshold> {
    u32::try_from(k).ok().filter(|&k| k <= BITS).ok_or(BadThreshold(k))
}

/// True when the fingerprints differ in at most `k` bits (`k` already checked).
#[inline]
pub fn within(a: u64, b: u64, k: u32) -> bool {
    hamming(a, b) <= k
}

/// The smallest distance between same-position fingerprints of two sets (element i of one
/// against element i of the other, up to the shorter set; missing elements skipped): two texts
/// are near when any of their b seeded fingerprint pairs is. `None` when no position has both.
pub fn min_hamming(a: impl IntoIterator<Item = Option<u64>>, b: impl IntoIterator<Item = Option<u64>>) -> Option<u32> {
    // Element by element, with no copy: sets arrive as arrays of any length.
    a.into_iter().zip(b).filter_map(|(x, y)| Some(hamming(x?, y?))).min()
}

/// Most rows [`distance_histogram`] compares: 5 * 10^9 pairs, seconds of work for one
/// fingerprint a row, minutes for wide sets (a cancel stops it after any row).
pub const MAX_HISTOGRAM_ROWS: usize = 100_000;

/// Why a histogram was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadHistogram(pub String);

impl fmt::Display for BadHistogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadHistogram {}

/// How many pairs of rows lie at each distance: `counts[d]` pairs are `d` bits apart, over every
/// pair of the rows of `fps`, each row `width` fingerprints in a row (a set's same-position
/// elements: its distance is the nearest pair's, as [`min_hamming`]). What k means on a table's
/// own data: the share of random pairs within k is the rate of false matches a lookup at k
/// meets there. `check` runs once a row, so a long run can be cancelled.
pub fn distance_histogram(fps: &[u64], width: usize, mut check: impl FnMut()) -> Result<[u64; BITS as usize + 1], BadHistogram> {
    if !(1..=BITS as usize).contains(&width) {
        return Err(BadHistogram(format!("width must be between 1 and {BITS}, got {width}")));
    }
    if fps.len() % width != 0 {
        return Err(BadHistogram(format!("{} fingerprints are not rows of {width}", fps.len())));
    }
    let rows = fps.len() / width;
    if rows > MAX_HISTOGRAM_ROWS {
        return Err(BadHistogram(format!("at most {MAX_HISTOGRAM_ROWS} rows, got {rows}")));
    }
    let mut counts = [0u64; BITS as usize + 1];
    for (i, a) in fps.chunks_exact(width).enumerate() {
        check();
        for b in fps.chunks_exact(width).skip(i + 1) {
            let d = a.iter().zip(b).map(|(x, y)| hamming(*x, *y)).min().unwrap_or(BITS);
            counts[d as usize] += 1;
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_count_every_pair_once() {
        let h = distance_histogram(&[0, 1, 3, u64::MAX], 1, || {}).unwrap();
        // 0-1: 1, 0-3: 2, 1-3: 1, 0-max: 64, 1-max: 63, 3-max: 62.
        assert_eq!(h.iter().sum::<u64>(), 6);
        assert_eq!((h[1], h[2], h[62], h[63], h[64]), (2, 1, 1, 1, 1));
        // Sets: the nearest same-position pair.
        let h = distance_histogram(&[0, 0xff, 0xf, 0xfe], 2, || {}).unwrap();
        assert_eq!(h[1], 1);
        assert_eq!(h.iter().sum::<u64>(), 1);
        // Fewer than two rows: no pair.
        assert_eq!(distance_histogram(&[7], 1, || {}).unwrap().iter().sum::<u64>(), 0);
        let mut calls = 0;
        distance_histogram(&[1, 2, 3], 1, || calls += 1).unwrap();
        assert_eq!(calls, 3);
        assert!(distance_histogram(&[1, 2, 3], 2, || {}).is_err());
        assert!(distance_histogram(&[1], 0, || {}).is_err());
        assert!(distance_histogram(&[1], 65, || {}).is_err());
        assert!(distance_histogram(&vec![0; MAX_HISTOGRAM_ROWS + 1], 1, || {}).is_err());
    }

    #[test]
    fn sets_are_as_near_as_their_nearest_same_position_pair() {
        assert_eq!(min_hamming([Some(0), Some(0xff)], [Some(0xf), Some(0xfe)]), Some(1));
        assert_eq!(min_hamming([Some(0), None], [Some(1), Some(0)]), Some(1));
        assert_eq!(min_hamming([Some(0), Some(0)], [Some(3)]), Some(2), "up to the shorter set");
        assert_eq!(min_hamming([None], [Some(0)]), None);
        assert_eq!(min_hamming([None::<u64>; 0], []), None);
    }

    #[test]
    fn hamming_counts_differing_bits() {
        assert_eq!(hamming(0, 0), 0);
        assert_eq!(hamming(0, u64::MAX), 64);
        assert_eq!(hamming(0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210), 64);
        assert_eq!(hamming(0b1011, 0b0001), 2);
        assert_eq!(hamming(1 << 63, 0), 1);
    }

    #[test]
    fn hamming_is_a_metric_on_samples() {
        let xs = [0u64, 1, 0xdead_beef, u64::MAX, 0x8000_0000_0000_0001, 42 << 40];
        for &a in &xs {
            for &b in &xs {
                assert_eq!(hamming(a, b), hamming(b, a));
                assert_eq!(hamming(a, b) == 0, a == b);
                for &c in &xs {
                    assert!(hamming(a, c) <= hamming(a, b) + hamming(b, c));
                }
            }
        }
    }

    #[test]
    fn similarity_and_cosine_follow_the_distance() {
        assert_eq!(similarity(7, 7), 1.0);
        assert_eq!(similarity(0, u64::MAX), 0.0);
        assert_eq!(similarity(0, 0xffff_ffff), 0.5);
        assert_eq!(cosine(7, 7), 1.0);
        assert!((cosine(0, 0xffff_ffff)).abs() < 1e-15);
        assert_eq!(cosine(0, u64::MAX), -1.0);
    }

    #[test]
    fn thresholds_outside_0_to_64_are_rejected() {
        assert_eq!(check_threshold(0), Ok(0));
        assert_eq!(check_threshold(64), Ok(64));
        assert_eq!(check_threshold(-1), Err(BadThreshold(-1)));
        assert_eq!(check_threshold(65), Err(BadThreshold(65)));
        assert_eq!(check_threshold(i64::MIN), Err(BadThreshold(i64::MIN)));
        assert!(within(0, 0b111, 3));
        assert!(!within(0, 0b111, 2));
    }
}
