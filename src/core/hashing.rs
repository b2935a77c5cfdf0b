//! Hash values for the hash opclass (hash joins, hash aggregates, hash indexes, partitioning).
//!
//! Fingerprints are already hash outputs, but their low bits are not uniform when a table holds
//! many near-copies, so they are mixed again with xxh3 instead of being truncated. PostgreSQL
//! requires the extended (seeded) hash with seed 0 to agree with the 32-bit hash in its low 32
//! bits; both are cut from the same xxh3 value, so they do.

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// The 32-bit hash used by hash joins and hash indexes.
#[inline]
pub fn hash32(fp: u64) -> u32 {
    xxh3_64(&fp.to_be_bytes()) as u32
}

/// The seeded 64-bit hash used by hash partitioning and parallel hash joins.
#[inline]
pub fn hash64(fp: u64, seed: u64) -> u64 {
    if seed == 0 {
        xxh3_64(&fp.to_be_bytes())
    } else {
        xxh3_64_with_seed(&fp.to_be_bytes(), seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_zero_agrees_with_the_32_bit_hash() {
        for fp in [0u64, 1, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert_eq!(hash64(fp, 0) as u32, hash32(fp));
        }
    }

    #[test]
    fn seeds_change_the_hash() {
        assert_ne!(hash64(42, 0), hash64(42, 1));
        assert_ne!(hash32(1), hash32(2));
    }
}
