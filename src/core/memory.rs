//! The memory one call's in-memory work may take, and allocations that fail as errors.
//!
//! Rust ends the process when an allocation fails, and PostgreSQL then restarts every session
//! of the server; any role may call the functions that build these structures. So the batch
//! structures sized by a caller's data (the in-memory block index of a batch, the graph of
//! pairs, the candidates of a pass) count what they hold against a limit the extension takes
//! from `maintenance_work_mem` ([`MemoryError::OverBudget`], SQLSTATE 54000) and grow with
//! `try_reserve` ([`MemoryError::OutOfMemory`], SQLSTATE 53200). The text pipeline's tables of
//! features have their own budget (`feature_table`).

use std::fmt;

/// The floor of an ETL call's memory limit, whatever `maintenance_work_mem` says: enough for
/// batches of a few million rows.
pub const LIMIT_FLOOR_BYTES: usize = 1 << 30;

/// Why in-memory work stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryError {
    /// `what` would take more than `limit` bytes.
    OverBudget { what: &'static str, limit: usize },
    /// The system refused an allocation of `bytes`.
    OutOfMemory { bytes: usize },
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MemoryError::OverBudget { what, limit } => {
                write!(f, "{what} would take more than {} MB of memory", limit >> 20)
            }
            MemoryError::OutOfMemory { bytes } => write!(f, "out of memory: an allocation of {bytes} bytes failed"),
        }
    }
}

impl std::error::Error for MemoryError {}

/// Room for `n` more elements in `v`, or [`MemoryError::OutOfMemory`].
pub fn room<T>(v: &mut Vec<T>, n: usize) -> Result<(), MemoryError> {
    v.try_reserve(n).map_err(|_| MemoryError::OutOfMemory { bytes: n.saturating_mul(std::mem::size_of::<T>()) })
}

/// A vector with room for `n` elements, or [`MemoryError::OutOfMemory`].
pub fn vec_with_room<T>(n: usize) -> Result<Vec<T>, MemoryError> {
    let mut v = Vec::new();
    room(&mut v, n)?;
    Ok(v)
}

/// What a structure holds, counted against a limit.
#[derive(Debug)]
pub struct Meter {
    what: &'static str,
    limit: usize,
    used: usize,
}

impl Meter {
    pub fn new(what: &'static str, limit: usize) -> Meter {
        Meter { what, limit, used: 0 }
    }

    /// No limit (tests, and callers that bound their input otherwise).
    pub fn unlimited(what: &'static str) -> Meter {
        Meter::new(what, usize::MAX)
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Counts `bytes` more, or [`MemoryError::OverBudget`] when that passes the limit.
    pub fn add(&mut self, bytes: usize) -> Result<(), MemoryError> {
        self.used = self.used.saturating_add(bytes);
        if self.used > self.limit {
            return Err(MemoryError::OverBudget { what: self.what, limit: self.limit });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meter_stops_past_its_limit() {
        let mut m = Meter::new("a batch", 100);
        assert!(m.add(60).is_ok() && m.add(40).is_ok());
        assert_eq!(m.add(1), Err(MemoryError::OverBudget { what: "a batch", limit: 100 }));
        assert!(Meter::unlimited("x").add(usize::MAX).is_ok());
    }

    #[test]
    fn a_refused_allocation_is_an_error() {
        let mut v: Vec<u64> = Vec::new();
        assert!(matches!(room(&mut v, usize::MAX / 4), Err(MemoryError::OutOfMemory { .. })));
        assert!(vec_with_room::<u8>(16).is_ok_and(|v| v.capacity() >= 16));
    }
}
