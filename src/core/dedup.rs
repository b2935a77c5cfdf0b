//! Which rows of an ordered batch to keep when each row is dropped if it lies within k bits of
//! an earlier kept row: the in-batch half of `simhash_ingest` (the other half, the rows already
//! in the table, is a lookup per row, one pass over a covering block index, or hash joins).
//!
//! The rule is sequential (whether row j stays depends on which earlier rows stayed), so it is
//! answered in one pass in order, with the kept rows in an in-memory block index (`near_set`).

use crate::memory::{vec_with_room, MemoryError, Meter};
use crate::near_set::NearSet;

/// For each row (a row is `width` fingerprints: one, or a set's elements, position by position),
/// whether it stays: a row stays unless some earlier row that stayed has, at some position
/// where both have a fingerprint, one within `k` bits. A row without fingerprints always stays.
/// `fps.len()` must be a multiple of `width`; `check` runs now and then (cancellation). The
/// kept rows' in-memory index takes what `meter` allows ([`MemoryError`] past it).
pub fn keep_first_of_near(
    fps: &[Option<u64>],
    width: usize,
    k: u32,
    meter: Meter,
    check: &mut dyn FnMut(),
) -> Result<Vec<bool>, MemoryError> {
    keep_first_of_confirmed(fps, width, k, meter, &mut |_, _| true, check)
}

/// The same rule when nearness is only a proposal: a near earlier row that stayed drops `row`
/// only when `confirm(earlier, row)` says so (the exact check of a verified `simhash_ingest`,
/// comparing the two texts). A row that no near earlier row confirms stays. `check` also runs
/// every few thousand confirmations: where every row is near every kept one (k = 64, or a
/// crowded batch) but few are confirmed, a row alone can take millions.
pub fn keep_first_of_confirmed(
    fps: &[Option<u64>],
    width: usize,
    k: u32,
    mut meter: Meter,
    confirm: &mut dyn FnMut(usize, usize) -> bool,
    check: &mut dyn FnMut(),
) -> Result<Vec<bool>, MemoryError> {
    if width == 0 {
        return Ok(Vec::new());
    }
    let rows = fps.len() / width;
    // The kept rows, one set per position (width is a set's size: at most MAX_SET_SIZE), all
    // counted against one limit.
    let mut kept: Vec<NearSet> = (0..width).map(|_| NearSet::new(k, rows)).collect();
    let mut keep: Vec<bool> = vec_with_room(rows)?;
    keep.resize(rows, false);
    let mut confirms = 0u32;
    for row in 0..rows {
        if row % 4096 == 4095 {
            check();
        }
        let own = &fps[row * width..(row + 1) * width];
        let near = own.iter().zip(&kept).any(|(fp, set)| {
            fp.is_some_and(|q| {
                set.find(q, &mut |earlier, _| {
                    confirms = confirms.wrapping_add(1);
                    if confirms % 4096 == 0 {
                        check();
                    }
                    confirm(earlier as usize, row)
                })
            })
        });
        if near {
            continue;
        }
        keep[row] = true;
        for (fp, set) in own.iter().zip(&mut kept) {
            if let Some(q) = *fp {
                set.insert(row as u32, q, &mut meter)?;
            }
        }
    }
    Ok(keep)
}

/// The same rule with some rows out (`gone[row]`: near a row the table holds): which of the
/// others stay, each dropped if within `k` bits of an earlier row that stays. A gone row never
/// stays and drops nothing. What a concurrent `simhash_ingest` decides again when rows another
/// ingest committed meanwhile took some of its rows: one pass, as the first decision was.
/// `gone` has one entry per row.
pub fn keep_first_of_rest(
    fps: &[Option<u64>],
    width: usize,
    gone: &[bool],
    k: u32,
    meter: Meter,
    check: &mut dyn FnMut(),
) -> Result<Vec<bool>, MemoryError> {
    if width == 0 {
        return Ok(Vec::new());
    }
    let rows = fps.len() / width;
    // The rows still in play, in order, and where each came from. bounded: at most the
    // input's own length, reserved fallibly.
    let mut rest: Vec<Option<u64>> = vec_with_room(fps.len())?;
    let mut from: Vec<usize> = vec_with_room(rows)?;
    for row in (0..rows).filter(|&row| !gone.get(row).copied().unwrap_or(false)) {
        rest.extend_from_slice(&fps[row * width..(row + 1) * width]);
        from.push(row);
    }
    let kept = keep_first_of_near(&rest, width, k, meter, check)?;
    let mut keep: Vec<bool> = vec_with_room(rows)?;
    keep.resize(rows, false);
    for (row, stays) in from.into_iter().zip(kept) {
        keep[row] = stays;
    }
    Ok(keep)
}

/// For each row of `fps` (rows of `width` fingerprints), whether one of its fingerprints lies
/// within `k` bits of one of `others`: the rows of a `simhash_ingest` batch that rows another
/// ingest committed meanwhile may have made near-copies (each is then confirmed against the
/// table). `others` goes into an in-memory block index counted on `meter`.
pub fn near_any_of(
    fps: &[Option<u64>],
    width: usize,
    others: &[Option<u64>],
    k: u32,
    mut meter: Meter,
    check: &mut dyn FnMut(),
) -> Result<Vec<bool>, MemoryError> {
    if width == 0 {
        return Ok(Vec::new());
    }
    let rows = fps.len() / width;
    let mut near: Vec<bool> = vec_with_room(rows)?;
    near.resize(rows, false);
    if others.iter().all(Option::is_none) {
        return Ok(near);
    }
    let set = NearSet::of(others, k, &mut meter)?;
    for (row, slot) in near.iter_mut().enumerate() {
        if row % 4096 == 4095 {
            check();
        }
        *slot = fps[row * width..(row + 1) * width].iter().flatten().any(|&q| set.any_near(q));
    }
    Ok(near)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::hamming;

    /// The rule written out: compare with every earlier kept row.
    fn brute(fps: &[Option<u64>], width: usize, k: u32) -> Vec<bool> {
        let rows = fps.len() / width;
        let mut keep = vec![false; rows];
        for j in 0..rows {
            keep[j] = !(0..j).any(|i| {
                keep[i] && (0..width).any(|e| match (fps[i * width + e], fps[j * width + e]) {
                    (Some(a), Some(b)) => hamming(a, b) <= k,
                    _ => false,
                })
            });
        }
        keep
    }

    use crate::testing::near_batch as batch;

    #[test]
    fn equals_the_rule_for_every_k_and_width() {
        for width in [1usize, 3] {
            let fps = batch(600 * width, 7 + width as u64);
            for k in [0u32, 1, 2, 3, 5, 7, 9, 12, 20, 40, 64] {
                assert_eq!(keep_first_of_near(&fps, width, k, Meter::unlimited("t"), &mut || {}).unwrap(), brute(&fps, width, k), "k {k} width {width}");
            }
        }
    }

    #[test]
    fn confirmed_equals_the_rule_with_its_check() {
        // Confirm only pairs whose row numbers have the same parity: the rule written out with
        // the same check.
        let mut parity = |i: usize, j: usize| i % 2 == j % 2;
        for width in [1usize, 2] {
            let fps = batch(500 * width, 11 + width as u64);
            let rows = fps.len() / width;
            for k in [0u32, 3, 7, 12, 64] {
                let mut want = vec![false; rows];
                for j in 0..rows {
                    want[j] = !(0..j).any(|i| {
                        want[i]
                            && parity(i, j)
                            && (0..width).any(|e| match (fps[i * width + e], fps[j * width + e]) {
                                (Some(a), Some(b)) => hamming(a, b) <= k,
                                _ => false,
                            })
                    });
                }
                assert_eq!(keep_first_of_confirmed(&fps, width, k, Meter::unlimited("t"), &mut parity, &mut || {}).unwrap(), want, "k {k} width {width}");
            }
        }
    }

    #[test]
    fn near_any_of_equals_every_pair_compared() {
        for width in [1usize, 3] {
            let fps = batch(400 * width, 3 + width as u64);
            let others = batch(300, 5);
            for k in [0u32, 1, 3, 7, 12, 64] {
                let want: Vec<bool> = fps
                    .chunks(width)
                    .map(|row| row.iter().flatten().any(|&a| others.iter().flatten().any(|&b| hamming(a, b) <= k)))
                    .collect();
                assert_eq!(near_any_of(&fps, width, &others, k, Meter::unlimited("t"), &mut || {}).unwrap(), want, "k {k} width {width}");
            }
        }
        assert_eq!(near_any_of(&[Some(1), None], 1, &[None], 64, Meter::unlimited("t"), &mut || {}).unwrap(), vec![false, false]);
        assert!(near_any_of(&[], 1, &[Some(1)], 3, Meter::unlimited("t"), &mut || {}).unwrap().is_empty());
    }

    #[test]
    fn rest_equals_the_rule_without_the_gone_rows() {
        for width in [1usize, 3] {
            let fps = batch(500 * width, 13 + width as u64);
            let rows = fps.len() / width;
            let gone: Vec<bool> = (0..rows).map(|row| row % 7 == 3 || row % 11 == 0).collect();
            for k in [0u32, 1, 3, 7, 12, 64] {
                // The rule written out over the rows not gone, a gone row never staying.
                let mut want = vec![false; rows];
                for j in (0..rows).filter(|&j| !gone[j]) {
                    want[j] = !(0..j).any(|i| {
                        want[i] && (0..width).any(|e| match (fps[i * width + e], fps[j * width + e]) {
                            (Some(a), Some(b)) => hamming(a, b) <= k,
                            _ => false,
                        })
                    });
                }
                assert_eq!(keep_first_of_rest(&fps, width, &gone, k, Meter::unlimited("t"), &mut || {}).unwrap(), want, "k {k} width {width}");
            }
            // Nothing gone: the rule itself.
            assert_eq!(keep_first_of_rest(&fps, width, &vec![false; rows], 3, Meter::unlimited("t"), &mut || {}).unwrap(), brute(&fps, width, 3));
        }
        // A dropped earlier row does not drop a later one: b goes, so c (near b only) stays.
        assert_eq!(keep_first_of_rest(&[Some(0), Some(0b11), Some(0b111)], 1, &[false, true, false], 1, Meter::unlimited("t"), &mut || {}).unwrap(), vec![true, false, true]);
        assert_eq!(keep_first_of_rest(&[Some(0b1), Some(0b11)], 1, &[true, false], 1, Meter::unlimited("t"), &mut || {}).unwrap(), vec![false, true]);
        assert!(keep_first_of_rest(&[], 1, &[], 3, Meter::unlimited("t"), &mut || {}).unwrap().is_empty());
    }

    #[test]
    fn order_decides_and_dropped_rows_do_not_count() {
        // b is within 2 of a, c within 2 of b but 4 of a: a stays, b goes, c stays.
        let a = 0u64;
        let b = 0b11;
        let c = 0b1111;
        assert_eq!(keep_first_of_near(&[Some(a), Some(b), Some(c)], 1, 2, Meter::unlimited("t"), &mut || {}).unwrap(), vec![true, false, true]);
        assert_eq!(keep_first_of_near(&[Some(b), Some(a), Some(c)], 1, 2, Meter::unlimited("t"), &mut || {}).unwrap(), vec![true, false, false]);
        assert_eq!(keep_first_of_near(&[None, None], 1, 64, Meter::unlimited("t"), &mut || {}).unwrap(), vec![true, true]);
        assert!(keep_first_of_near(&[], 1, 3, Meter::unlimited("t"), &mut || {}).unwrap().is_empty());
    }
}
