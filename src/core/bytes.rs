//! The binary form of a fingerprint: 8 bytes, most significant first (network order).
//!
//! The same order serves `send`/`recv`, the `bytea` cast and the hex text, so the three forms
//! of one fingerprint always agree byte for byte.

use std::fmt;

/// Number of bytes in a fingerprint.
pub const BYTES: usize = 8;

/// A byte string that is not exactly 8 bytes long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongByteLength(pub usize);

impl fmt::Display for WrongByteLength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a simhash64 needs exactly {BYTES} bytes, got {}", self.0)
    }
}

impl std::error::Error for WrongByteLength {}

/// Reads exactly 8 big-endian bytes.
pub fn from_bytes(bytes: &[u8]) -> Result<u64, WrongByteLength> {
    <[u8; BYTES]>::try_from(bytes).map(u64::from_be_bytes).map_err(|_| WrongByteLength(bytes.len()))
}

/// Writes 8 big-endian bytes.
pub fn to_bytes(fp: u64) -> [u8; BYTES] {
    fp.to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_order_round_trip() {
        assert_eq!(to_bytes(0x0123_4567_89ab_cdef), [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
        assert_eq!(from_bytes(&to_bytes(u64::MAX - 5)), Ok(u64::MAX - 5));
        assert_eq!(from_bytes(&[1, 2, 3]), Err(WrongByteLength(3)));
        assert_eq!(from_bytes(&[0; 9]), Err(WrongByteLength(9)));
        assert_eq!(from_bytes(&[]), Err(WrongByteLength(0)));
    }
}
