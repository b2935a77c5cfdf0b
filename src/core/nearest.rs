//! Nearest-first order through block indexes: the rings a `ORDER BY fp <-> q` scan widens
//! through, and the order of the rows each ring adds.
//!
//! Block indexes answer "every fingerprint within k bits" exactly, but not "the next nearest".
//! A nearest-first scan therefore asks for rings: every row within radius r that an earlier,
//! smaller radius did not already return, sorted by distance. Rows come out in non-decreasing
//! distance with each row once, so whatever stops reading early (a LIMIT, a filter that has
//! seen enough) has seen exactly the nearest rows. Small radii are cheap index probes; the last
//! ring, 64, reads a whole covering index and so finishes the table.

/// The radii a nearest-first scan widens through, smallest first, ending with every distance.
/// Near-duplicates (the case users order by distance for) lie within the first three rings;
/// random fingerprints' nearest neighbours at a million rows lie around 10-15 bits away. Each
/// step roughly doubles the probes of the one before, so no ring costs much more than all the
/// earlier ones together.
pub const RINGS: [u32; 8] = [0, 1, 3, 7, 11, 15, 23, 64];

/// The radius after `previous` (None: the first ring), or None when `previous` was the last.
pub fn next_ring(previous: Option<u32>) -> Option<u32> {
    match previous {
        None => Some(RINGS[0]),
        Some(r) => RINGS.iter().copied().find(|&next| next > r),
    }
}

/// One ring's rows in the order they are returned: the candidates (distance, row) farther than
/// `previous` (None: nothing returned yet), by distance, then by row; a row found through
/// several blocks once. `row` is any key whose order is stable (a TID's block and offset).
pub fn ring_order<R: Ord + Copy>(mut candidates: Vec<(u32, R)>, previous: Option<u32>) -> Vec<(u32, R)> {
    candidates.retain(|&(distance, _)| previous.is_none_or(|p| distance > p));
    candidates.sort_unstable();
    candidates.dedup();
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::{hamming, BITS};

    #[test]
    fn rings_grow_and_end_with_every_distance() {
        let mut rings = Vec::new();
        let mut previous = None;
        while let Some(r) = next_ring(previous) {
            rings.push(r);
            previous = Some(r);
        }
        assert_eq!(rings, RINGS);
        assert!(rings.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(rings.last(), Some(&BITS));
    }

    #[test]
    fn rings_return_every_row_once_nearest_first() {
        // Fingerprints at every distance from the query, some found "through two blocks".
        let query = 0x0123_4567_89ab_cdefu64;
        let rows: Vec<u64> = (0..=64u32).map(|d| query ^ if d == 64 { u64::MAX } else { (1u64 << d) - 1 }).collect();
        let mut out = Vec::new();
        let mut previous = None;
        while let Some(r) = next_ring(previous) {
            // A ring's probe finds every row within r, some twice.
            let found: Vec<(u32, usize)> = rows
                .iter()
                .enumerate()
                .map(|(i, &fp)| (hamming(fp, query), i))
                .filter(|&(d, _)| d <= r)
                .flat_map(|c| [c, c])
                .collect();
            out.extend(ring_order(found, previous));
            previous = Some(r);
        }
        let distances: Vec<u32> = out.iter().map(|&(d, _)| d).collect();
        assert_eq!(distances, (0..=64).collect::<Vec<_>>());
        let mut seen: Vec<usize> = out.iter().map(|&(_, i)| i).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..rows.len()).collect::<Vec<_>>());
    }

    #[test]
    fn ties_come_in_row_order() {
        let ring = ring_order(vec![(2, 9), (1, 5), (2, 3), (1, 5), (0, 7)], Some(0));
        assert_eq!(ring, vec![(1, 5), (2, 3), (2, 9)]);
    }
}
