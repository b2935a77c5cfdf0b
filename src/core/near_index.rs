//! A set of fingerprints that grows as rows are kept: "does a member lie within k bits of this
//! one?", then the ones that stay become members. It is `simhash_ingest`'s rule (drop a row near
//! a row of the table or an earlier kept row of the batch) for a client that holds the table's
//! fingerprints itself: the Python package's `NearIndex`, with which an ETL job loads by plain
//! COPY and the server does no lookups.
//!
//! Members live in two `NearSet`s: a frozen one over most of them (16 bytes a member a probed
//! block, built by a counting sort) and a growing one over the newest (hash buckets, about 120
//! bytes a member a block). When the growing part reaches an eighth of the frozen part (at least
//! `FIRST_GENERATION`), everything is frozen again. The eighth bounds the growing part's memory
//! to about 60 bytes a frozen member (4 blocks), beside the frozen part's 72; a set grown from
//! n0 to n members is rebuilt about 8.5 ln(n / n0) times, each rebuild a counting sort.

use std::fmt;

use crate::memory::{room, MemoryError, Meter};
use crate::near_set::NearSet;

/// The growing part's size before the first rebuild.
const FIRST_GENERATION: usize = 1 << 16;

/// Why a `NearIndex` call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NearIndexError {
    /// An allocation failed, or members would pass 2^32.
    Memory(MemoryError),
    /// An earlier call failed half-way, so the members may be in one structure and not the
    /// other: the index answers nothing rather than answer wrongly.
    Broken,
}

impl fmt::Display for NearIndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NearIndexError::Memory(e) => e.fmt(f),
            NearIndexError::Broken => write!(f, "this index ran out of memory in an earlier call; make a new one"),
        }
    }
}

impl std::error::Error for NearIndexError {}

impl From<MemoryError> for NearIndexError {
    fn from(e: MemoryError) -> Self {
        NearIndexError::Memory(e)
    }
}

/// Fingerprints to check new ones against within `k` bits.
pub struct NearIndex {
    k: u32,
    /// Every member, in the order added: `members[..frozen_len]` are in `frozen`, the rest in
    /// `growing`.
    members: Vec<u64>,
    frozen: Option<NearSet>,
    frozen_len: usize,
    growing: NearSet,
    broken: bool,
}

impl NearIndex {
    /// An empty index for lookups within `k` bits (0..=64).
    pub fn new(k: u32) -> NearIndex {
        NearIndex {
            k,
            members: Vec::new(),
            frozen: None,
            frozen_len: 0,
            growing: NearSet::new_laid_out(k, FIRST_GENERATION),
            broken: false,
        }
    }

    pub fn k(&self) -> u32 {
        self.k
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether some member lies within `k` bits of `query`.
    pub fn any_near(&self, query: u64) -> Result<bool, NearIndexError> {
        self.usable()?;
        Ok(self.frozen.as_ref().is_some_and(|f| f.any_near(query)) || self.growing.any_near(query))
    }

    /// Adds every fingerprint of `fps` as a member, near ones included (the rows a table
    /// already holds).
    pub fn extend(&mut self, fps: &[u64]) -> Result<(), NearIndexError> {
        self.usable()?;
        self.guard(|me| {
            me.reserve(fps.len())?;
            let start = me.members.len();
            me.members.extend_from_slice(fps);
            if me.members.len() - me.frozen_len >= me.generation() {
                return me.refreeze();
            }
            for row in start..me.members.len() {
                me.growing.insert(row as u32, me.members[row], &mut Meter::unlimited("a NearIndex"))?;
            }
            Ok(())
        })
    }

    /// `simhash_ingest`'s rule for an ordered batch: a fingerprint stays unless a member, or
    /// an earlier fingerprint of the batch that stayed, lies within `k` bits; the ones that
    /// stay become members. `None` (a row without a fingerprint) stays and adds nothing.
    /// `check` runs every few thousand rows (cancellation).
    pub fn keep_new(&mut self, fps: &[Option<u64>], check: &mut dyn FnMut()) -> Result<Vec<bool>, NearIndexError> {
        self.usable()?;
        let mut keep = Vec::new();
        room(&mut keep, fps.len())?;
        self.guard(|me| {
            for (i, fp) in fps.iter().enumerate() {
                if i % 4096 == 4095 {
                    check();
                }
                let stays = match *fp {
                    None => true,
                    Some(q) if me.any_near(q)? => false,
                    Some(q) => {
                        me.push(q)?;
                        true
                    }
                };
                keep.push(stays);
            }
            Ok(())
        })?;
        Ok(keep)
    }

    fn usable(&self) -> Result<(), NearIndexError> {
        if self.broken {
            return Err(NearIndexError::Broken);
        }
        Ok(())
    }

    /// Runs a change; if it fails, later calls fail too.
    fn guard(&mut self, change: impl FnOnce(&mut Self) -> Result<(), NearIndexError>) -> Result<(), NearIndexError> {
        let done = change(self);
        if done.is_err() {
            self.broken = true;
        }
        done
    }

    /// Room for `n` more members: row numbers are 32 bits.
    fn reserve(&mut self, n: usize) -> Result<(), NearIndexError> {
        if self.members.len().saturating_add(n) > u32::MAX as usize {
            return Err(MemoryError::OverBudget { what: "a NearIndex of more than 2^32 fingerprints", limit: usize::MAX }.into());
        }
        Ok(room(&mut self.members, n)?)
    }

    fn push(&mut self, fp: u64) -> Result<(), NearIndexError> {
        self.reserve(1)?;
        self.members.push(fp);
        if self.members.len() - self.frozen_len >= self.generation() {
            return self.refreeze();
        }
        let row = self.members.len() - 1;
        Ok(self.growing.insert(row as u32, fp, &mut Meter::unlimited("a NearIndex"))?)
    }

    /// The growing part's size that triggers a rebuild.
    fn generation(&self) -> usize {
        (self.frozen_len / 8).max(FIRST_GENERATION)
    }

    /// Freezes every member into one set and starts an empty growing one.
    fn refreeze(&mut self) -> Result<(), NearIndexError> {
        let members = self.members.iter().enumerate().map(|(row, &fp)| (row as u32, fp));
        let frozen = NearSet::laid_out_of(members, self.k, &mut Meter::unlimited("a NearIndex"))?;
        // The old sets go before the new growing one is sized.
        self.frozen = Some(frozen);
        self.frozen_len = self.members.len();
        self.growing = NearSet::new_laid_out(self.k, self.generation());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::keep_first_of_near;
    use crate::distance::hamming;

    use crate::testing::near_batch as batch;

    #[test]
    fn keeps_what_the_in_batch_rule_keeps_across_calls_and_rebuilds() {
        // One long batch through keep_first_of_near, and the same rows through a NearIndex in
        // uneven calls that pass several rebuilds: the same rows stay.
        let rows = batch(300_000, 7);
        for k in [0u32, 3, 7] {
            let want = keep_first_of_near(&rows, 1, k, Meter::unlimited("t"), &mut || ()).unwrap();
            let mut index = NearIndex::new(k);
            let mut got = Vec::new();
            let mut start = 0;
            for size in [1usize, 10, 70_000, 1000, 150_000].iter().cycle() {
                let end = (start + size).min(rows.len());
                got.extend(index.keep_new(&rows[start..end], &mut || ()).unwrap());
                start = end;
                if start == rows.len() {
                    break;
                }
            }
            assert_eq!(got, want, "k {k}");
            assert_eq!(index.len(), want.iter().zip(&rows).filter(|(k, r)| **k && r.is_some()).count());
        }
    }

    #[test]
    fn extend_adds_near_members_and_lookups_are_exact() {
        let table: Vec<u64> = batch(200_000, 3).into_iter().flatten().collect();
        let queries: Vec<u64> = batch(2_000, 4).into_iter().flatten().chain(table.iter().take(500).map(|fp| fp ^ 0b1011)).collect();
        for k in [2u32, 5, 9] {
            let mut index = NearIndex::new(k);
            // Small extends into the growing part, then one big one that refreezes.
            index.extend(&table[..1000]).unwrap();
            index.extend(&table[1000..1500]).unwrap();
            index.extend(&table[1500..]).unwrap();
            assert_eq!(index.len(), table.len());
            for &q in &queries {
                let want = table.iter().any(|&fp| hamming(fp, q) <= k);
                assert_eq!(index.any_near(q).unwrap(), want, "k {k}");
            }
            // A member is near itself; a kept new row becomes one.
            assert_eq!(index.keep_new(&[Some(table[7]), Some(!table[7]), Some(!table[7])], &mut || ()).unwrap()[0], false);
        }
    }

    #[test]
    fn past_2_to_the_32_members_is_an_error_and_a_failed_change_breaks_the_index() {
        let mut index = NearIndex::new(3);
        assert!(matches!(index.reserve(u32::MAX as usize + 1), Err(NearIndexError::Memory(MemoryError::OverBudget { .. }))));
        // A change that fails half-way leaves the index answering nothing.
        let failed = index.guard(|me| {
            me.members.push(1);
            Err(MemoryError::OutOfMemory { bytes: 1 }.into())
        });
        assert!(failed.is_err());
        assert_eq!(index.any_near(1), Err(NearIndexError::Broken));
        assert_eq!(index.keep_new(&[Some(1)], &mut || ()), Err(NearIndexError::Broken));
        assert_eq!(index.extend(&[1]), Err(NearIndexError::Broken));
    }
}
