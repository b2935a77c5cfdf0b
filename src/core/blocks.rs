//! How a fingerprint is cut into blocks for the pigeonhole lookup.
//!
//! Two fingerprints within k bits of each other, cut into m blocks, have some block in which they
//! differ by at most floor(k/m) bits (Manku et al., WWW 2007; Norouzi et al., CVPR 2012). With
//! m = k + 1 that block is equal, so an equality index on each block finds every candidate.
//!
//! The layout is part of the on-disk contract (block columns are stored), so it never changes:
//! blocks are contiguous, numbered from the most significant bit, and when 64 is not divisible by
//! m the first `64 % m` blocks are one bit wider than the rest.

use std::fmt;

pub use crate::distance::BITS;

/// Smallest number of blocks: one block would be the whole fingerprint.
pub const MIN_BLOCKS: u32 = 2;
/// Largest number of blocks: one bit each.
pub const MAX_BLOCKS: u32 = BITS;

/// A block request outside the layout; the extension reports it as SQLSTATE 22023.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockError {
    /// The number of blocks m was outside 2..=64.
    BadCount(i64),
    /// The block index i was outside 0..m.
    BadIndex { index: i64, count: u32 },
    /// A window of `len` blocks of `count`: it takes 1 to count - 1 blocks.
    BadWindow { len: u32, count: u32 },
    /// A key's leading blocks (bit i: block i of `count`): 1 to count - 1 of them, none beyond.
    BadKey { lead: u64, count: u32 },
    /// Keys of `blocks` of `count` blocks that make no family (`keys::tables`).
    BadFamily { blocks: u32, count: u32 },
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::BadCount(m) => write!(
                f,
                "number of blocks must be between {MIN_BLOCKS} and {MAX_BLOCKS}, got {m}"
            ),
            BlockError::BadIndex { index, count } => write!(
                f,
                "block index must be between 0 and {} for {count} blocks, got {index}",
                count - 1
            ),
            BlockError::BadWindow { len, count } => write!(
                f,
                "a window of {count} blocks takes 1 to {} of them, got {len}",
                count - 1
            ),
            BlockError::BadKey { lead, count } => write!(
                f,
                "a key of {count} blocks leads with 1 to {} of them (bit i for block i), got {lead:#x}",
                count - 1
            ),
            BlockError::BadFamily { blocks, count } => write!(
                f,
                "keys of {blocks} of {count} blocks make no family: it takes 3 to {} blocks, keys of 2 or more but not all, and at most {} tables",
                crate::keys::MAX_KEY_BLOCKS,
                crate::keys::MAX_KEY_TABLES
            ),
        }
    }
}

impl std::error::Error for BlockError {}

/// Where block `index` of `count` lies: its first bit counted from the most significant bit
/// (bit 0 = MSB) and its width in bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub start: u32,
    pub width: u32,
}

impl Block {
    /// Looks the block up, checking `count` in 2..=64 and `index` in 0..count.
    pub fn new(index: i64, count: i64) -> Result<Block, BlockError> {
        let count = u32::try_from(count)
            .ok()
            .filter(|m| (MIN_BLOCKS..=MAX_BLOCKS).contains(m))
            .ok_or(BlockError::BadCount(count))?;
        let index = u32::try_from(index)
            .ok()
            .filter(|&i| i < count)
            .ok_or(BlockError::BadIndex { index, count })?;
        let base = BITS / count;
        let wide = BITS % count; // the first `wide` blocks get one extra bit
        Ok(Block { start: index * base + index.min(wide), width: base + u32::from(index < wide) })
    }

    /// A window: the run of `len` consecutive blocks of `count` from block `index` on, wrapping
    /// past the last block to the first. A permuted index of block `index` holds it as its key's
    /// first bits (the rotation carries the following blocks, then the first ones, behind the
    /// block), so the same index answers a probe of the window as one key range: keys of
    /// several blocks (Manku et al.'s multi-block tables) without another index. `len` 1 is the
    /// block itself; a window never takes all the blocks (that would be the whole fingerprint).
    pub fn window(index: i64, count: i64, len: u32) -> Result<Block, BlockError> {
        let first = Block::new(index, count)?;
        let count = count as u32; // checked by Block::new
        if len == 0 || len >= count {
            return Err(BlockError::BadWindow { len, count });
        }
        let index = index as u32;
        let width = (0..len).map(|j| Block::new(i64::from((index + j) % count), i64::from(count)).map_or(0, |b| b.width)).sum();
        Ok(Block { start: first.start, width })
    }

    /// The block's bits of `fp` as an unsigned number; a window's may wrap past the last bit to
    /// the first (a block of 2 to 64 blocks is at most 32 bits wide, so it fits int8; a window is
    /// at most 63).
    #[inline]
    pub fn extract(self, fp: u64) -> u64 {
        fp.rotate_left(self.start) >> (BITS - self.width)
    }

    /// `fp` rotated left so that this block leads (Manku et al.'s permuted tables): one B-tree
    /// on the rotated fingerprint serves the block as a key prefix and still holds the whole
    /// fingerprint, so the distance is checked on the key itself (rotation keeps Hamming
    /// distances) and no block column or INCLUDE column is stored.
    #[inline]
    pub fn permute(self, fp: u64) -> u64 {
        fp.rotate_left(self.start)
    }

    /// The fingerprint a permuted key holds: `permute` undone.
    #[inline]
    pub fn unpermute(self, key: u64) -> u64 {
        key.rotate_right(self.start)
    }

    /// The permuted keys whose block lies in `low..=high`, as one unsigned range: the block is
    /// the key's top `width` bits.
    #[inline]
    pub fn permuted_range(self, low: u64, high: u64) -> (u64, u64) {
        prefix_range(self.width, low, high)
    }
}

/// The 64-bit keys whose first `width` bits (1 to 63) lie in `low..=high`, as one unsigned
/// range: a permuted block's (`Block::permuted_range`), a window's, a family key's lead
/// (`keys::BlockKey::range`).
#[inline]
pub fn prefix_range(width: u32, low: u64, high: u64) -> (u64, u64) {
    let rest = BITS - width;
    let below = (1u64 << rest) - 1;
    (low << rest, (high << rest) | below)
}

/// Convenience: the value of block `index` of `count` in `fp`.
pub fn block_value(fp: u64, index: i64, count: i64) -> Result<u64, BlockError> {
    Block::new(index, count).map(|b| b.extract(fp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_tile_the_fingerprint_widest_first() {
        for m in 2..=64i64 {
            let mut next = 0;
            let mut widths = Vec::new();
            for i in 0..m {
                let b = Block::new(i, m).unwrap();
                assert_eq!(b.start, next, "m={m} i={i}");
                next += b.width;
                widths.push(b.width);
            }
            assert_eq!(next, 64, "m={m}");
            assert!(widths.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1), "m={m}");
        }
    }

    #[test]
    fn documented_layouts() {
        // m = 4: four 16-bit blocks.
        let fp = 0x0123_4567_89ab_cdef;
        let vals: Vec<u64> = (0..4).map(|i| block_value(fp, i, 4).unwrap()).collect();
        assert_eq!(vals, [0x0123, 0x4567, 0x89ab, 0xcdef]);
        // m = 3: widths 22, 21, 21.
        assert_eq!(Block::new(0, 3).unwrap(), Block { start: 0, width: 22 });
        assert_eq!(Block::new(1, 3).unwrap(), Block { start: 22, width: 21 });
        assert_eq!(Block::new(2, 3).unwrap(), Block { start: 43, width: 21 });
        assert_eq!(block_value(u64::MAX, 0, 3).unwrap(), (1 << 22) - 1);
        assert_eq!(block_value(fp, 0, 3).unwrap(), fp >> 42);
        // m = 2: the halves, the largest values a block can hold.
        assert_eq!(block_value(u64::MAX, 0, 2).unwrap(), 0xffff_ffff);
        // m = 64: single bits, MSB first.
        assert_eq!(block_value(1 << 63, 0, 64).unwrap(), 1);
        assert_eq!(block_value(1, 63, 64).unwrap(), 1);
    }

    #[test]
    fn blocks_reassemble_the_fingerprint() {
        for fp in [0u64, u64::MAX, 0x0123_4567_89ab_cdef, 0x8000_0000_0000_0001] {
            for m in 2..=64 {
                let mut back = 0u64;
                for i in 0..m {
                    let b = Block::new(i, m).unwrap();
                    back = (back << b.width) | b.extract(fp);
                }
                assert_eq!(back, fp);
            }
        }
    }

    #[test]
    fn pigeonhole_holds_on_samples() {
        // Flip k bits anywhere; with m = k + 1 blocks some block is unchanged.
        let fp = 0x0123_4567_89ab_cdef_u64;
        for k in 0..8u32 {
            let m = i64::from(k) + 1;
            if m < 2 {
                continue;
            }
            for start in 0..64 - k {
                let other = fp ^ (((1u64 << k) - 1) << start);
                assert!((0..m).any(|i| block_value(fp, i, m) == block_value(other, i, m)));
            }
        }
    }

    #[test]
    fn permuted_keys_lead_with_their_block_and_keep_distances() {
        let fps = [0u64, u64::MAX, 0x0123_4567_89ab_cdef, 0x8000_0000_0000_0001, 0xdead_beef_0bad_f00d];
        for m in 2..=64 {
            for i in 0..m {
                let b = Block::new(i, m).unwrap();
                for &fp in &fps {
                    let key = b.permute(fp);
                    assert_eq!(key >> (64 - b.width), b.extract(fp), "m={m} i={i}");
                    assert_eq!(b.unpermute(key), fp);
                    let (low, high) = b.permuted_range(b.extract(fp), b.extract(fp));
                    assert!((low..=high).contains(&key));
                    for &other in &fps {
                        assert_eq!((key ^ b.permute(other)).count_ones(), (fp ^ other).count_ones());
                    }
                }
            }
        }
        // m = 4, block 1: 0x4567 leads.
        assert_eq!(Block::new(1, 4).unwrap().permute(0x0123_4567_89ab_cdef), 0x4567_89ab_cdef_0123);
        assert_eq!(Block::new(1, 4).unwrap().permuted_range(0x4567, 0x4568), (0x4567 << 48, (0x4569 << 48) - 1));
    }

    #[test]
    fn windows_are_the_first_bits_of_their_first_blocks_permuted_key() {
        let fps = [0u64, u64::MAX, 0x0123_4567_89ab_cdef, 0x8000_0000_0000_0001, 0xdead_beef_0bad_f00d];
        for m in 2..=16i64 {
            for i in 0..m {
                for len in 1..m as u32 {
                    let w = Block::window(i, m, len).unwrap();
                    let b = Block::new(i, m).unwrap();
                    assert_eq!(w.start, b.start);
                    // The blocks it takes, in order, wrapping: their values make the window's.
                    let mut want = 0u64;
                    let mut width = 0;
                    for j in 0..i64::from(len) {
                        let next = Block::new((i + j) % m, m).unwrap();
                        width += next.width;
                        want = (want << next.width) | next.extract(0x0123_4567_89ab_cdef);
                    }
                    assert_eq!(w.width, width, "m={m} i={i} len={len}");
                    assert_eq!(w.extract(0x0123_4567_89ab_cdef), want, "m={m} i={i} len={len}");
                    for &fp in &fps {
                        // The permuted key of block i leads with the window, so its key range
                        // holds the key.
                        let key = b.permute(fp);
                        let (low, high) = w.permuted_range(w.extract(fp), w.extract(fp));
                        assert!((low..=high).contains(&key), "m={m} i={i} len={len}");
                        assert_eq!(w.unpermute(key), fp);
                    }
                }
                assert_eq!(Block::window(i, m, 1), Block::new(i, m));
            }
        }
        // m = 4, window of blocks 3 and 0: 0xcdef then 0x0123.
        assert_eq!(Block::window(3, 4, 2).unwrap().extract(0x0123_4567_89ab_cdef), 0xcdef_0123);
        assert_eq!(Block::window(0, 4, 4), Err(BlockError::BadWindow { len: 4, count: 4 }));
        assert_eq!(Block::window(0, 4, 0), Err(BlockError::BadWindow { len: 0, count: 4 }));
        assert_eq!(Block::window(4, 4, 1), Err(BlockError::BadIndex { index: 4, count: 4 }));
    }

    #[test]
    fn bad_requests_are_errors() {
        assert_eq!(Block::new(0, 1), Err(BlockError::BadCount(1)));
        assert_eq!(Block::new(0, 65), Err(BlockError::BadCount(65)));
        assert_eq!(Block::new(0, -3), Err(BlockError::BadCount(-3)));
        assert_eq!(Block::new(4, 4), Err(BlockError::BadIndex { index: 4, count: 4 }));
        assert_eq!(Block::new(-1, 4), Err(BlockError::BadIndex { index: -1, count: 4 }));
    }
}
