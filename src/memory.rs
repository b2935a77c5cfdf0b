//! The memory limits of in-memory work, from this backend's settings: a text's table of
//! distinct features takes `work_mem` (`simhash_core::feature_table`), an ETL call's batch
//! structures take `maintenance_work_mem` (`simhash_core::memory`), each with a floor. Past a
//! limit, or when the system refuses an allocation, the call ends in an ERROR (54000, 53200)
//! instead of the abort a failed Rust allocation is, which restarts every session.

use pgrx::pg_sys;
use simhash_core::feature_table::Budget;
use simhash_core::memory::{Meter, LIMIT_FLOOR_BYTES};

/// A setting in kB as bytes.
fn kb(setting: i32) -> usize {
    usize::try_from(setting).unwrap_or(0).saturating_mul(1024)
}

/// The memory a table of a text's distinct features may take: `work_mem`, at least 64 MB.
pub(crate) fn feature_budget() -> Budget {
    // SAFETY: a plain read of a setting of this backend.
    Budget::at_least_floor(kb(unsafe { pg_sys::work_mem }))
}

/// The memory an ETL call may take: `maintenance_work_mem`, at least 1 GB.
pub(crate) fn etl_limit() -> usize {
    // SAFETY: a plain read of a setting of this backend.
    kb(unsafe { pg_sys::maintenance_work_mem }).max(LIMIT_FLOOR_BYTES)
}

/// The memory `what` may take in an ETL call: [`etl_limit`].
pub(crate) fn etl_meter(what: &'static str) -> Meter {
    Meter::new(what, etl_limit())
}
