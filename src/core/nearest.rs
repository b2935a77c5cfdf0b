//! Nearest-first order through block indexes: the rings a `ORDER BY fp <-> q` scan widens
//! through, and the order of the rows each ring adds.
//!
//! Block indexes answer "every fingerprint within k bits" exactly, but not "the next nearest".
//! A nearest-first scan therefore asks for rings: every row within radius r that an earlier,
//! smaller radius did not already return, sorted by distance. Rows come out in non-decreasing
//! distance with each row once, so whatever stops reading early (a LIMIT, a filter that has
//! seen enough) has seen exactly the nearest rows. Small radii are cheap index probes; the last
//! ring, 64, reads a whole covering index and so finishes the table.

use crate::distance::BITS;

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

/// A ring collected in one pass over every entry of an index, in at most about `cap` rows of
/// memory however big the table: rows are kept by distance, and when more than `cap` are kept,
/// the farthest distance still held is dropped whole and nothing beyond it is kept any more.
/// What remains is every row within the final `radius` (past `previous`): a complete ring. At
/// least the nearest distance seen is always kept, so a ring makes progress even when that one
/// distance alone holds more than `cap` rows.
pub struct BoundedRing<R> {
    previous: Option<u32>,
    cap: usize,
    kept: usize,
    radius: u32,
    /// The nearest distance held (BITS + 1 while none).
    nearest: u32,
    buckets: Vec<Vec<R>>,
}

impl<R: Ord> BoundedRing<R> {
    pub fn new(previous: Option<u32>, cap: usize) -> Self {
        BoundedRing {
            previous,
            cap: cap.max(1),
            kept: 0,
            radius: BITS,
            nearest: BITS + 1,
            buckets: (0..=BITS).map(|_| Vec::new()).collect(),
        }
    }

    /// Offers one row at `distance` from the query.
    pub fn offer(&mut self, distance: u32, row: R) {
        if distance > self.radius || self.previous.is_some_and(|p| distance <= p) {
            return;
        }
        self.buckets[distance as usize].push(row);
        self.kept += 1;
        self.nearest = self.nearest.min(distance);
        // Drop the farthest distance held while over the cap, down to the nearest one; each
        // step lowers the radius, so this costs little over the whole pass.
        while self.kept > self.cap && self.radius > self.nearest {
            let farthest = self.radius as usize;
            if farthest as u32 == self.nearest {
                break;
            }
            self.kept -= self.buckets[farthest].len();
            self.buckets[farthest] = Vec::new();
            self.radius -= 1;
        }
    }

    /// The ring's radius (64 when nothing had to be dropped: the last ring) and its rows by
    /// distance, then by row. Rows offered twice (found through two blocks) come once.
    pub fn finish(mut self) -> (u32, Vec<(u32, R)>) {
        let mut out = Vec::with_capacity(self.kept);
        for (d, bucket) in self.buckets.iter_mut().enumerate() {
            bucket.sort_unstable();
            bucket.dedup();
            out.extend(std::mem::take(bucket).into_iter().map(|r| (d as u32, r)));
        }
        (self.radius, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::hamming;

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
            let mut ring = BoundedRing::new(previous, usize::MAX);
            for (d, i) in found {
                ring.offer(d, i);
            }
            out.extend(ring.finish().1);
            previous = Some(r);
        }
        let distances: Vec<u32> = out.iter().map(|&(d, _)| d).collect();
        assert_eq!(distances, (0..=64).collect::<Vec<_>>());
        let mut seen: Vec<usize> = out.iter().map(|&(_, i)| i).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..rows.len()).collect::<Vec<_>>());
    }

    #[test]
    fn bounded_rings_are_complete_and_small() {
        // 3 rows at 12, 5 at 13, 100 at 20, offered in a scrambled order.
        let rows: Vec<(u32, u32)> = (0..3).map(|i| (12, i)).chain((0..5).map(|i| (13, 10 + i))).chain((0..100).map(|i| (20, 100 + i))).collect();
        let mut scrambled = rows.clone();
        scrambled.sort_by_key(|&(d, r)| (r * 7919) % 109 + d);
        let ring = |previous, cap| {
            let mut ring = BoundedRing::new(previous, cap);
            for &(d, r) in &scrambled {
                ring.offer(d, r);
            }
            ring.finish()
        };
        let (radius, got) = ring(Some(11), 8);
        assert_eq!((radius, got.len()), (19, 8)); // 12 and 13 whole, 20 dropped
        let (radius, got) = ring(Some(11), 3);
        assert_eq!((radius, got.len()), (12, 3));
        let (radius, got) = ring(Some(13), 10);
        assert_eq!((radius, got.len()), (20, 100)); // 20 alone exceeds the cap: kept whole
        assert!(got.windows(2).all(|w| w[0] <= w[1]));
        let (radius, got) = ring(Some(20), 10);
        assert_eq!((radius, got.len()), (64, 0)); // nothing left: the last ring
        let (radius, got) = ring(None, usize::MAX);
        assert_eq!((radius, got.len()), (64, rows.len()));
    }

    #[test]
    fn ties_come_in_row_order() {
        let mut ring = BoundedRing::new(Some(0), usize::MAX);
        for (d, r) in [(2, 9), (1, 5), (2, 3), (1, 5), (0, 7)] {
            ring.offer(d, r);
        }
        assert_eq!(ring.finish(), (64, vec![(1, 5), (2, 3), (2, 9)]));
    }
}
