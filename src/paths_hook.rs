//! The one `set_rel_pathlist_hook` of the extension: after PostgreSQL made its own paths for a
//! table, and after any hook installed before ours, it offers the parameterized TID scans of
//! joins (`join_paths.rs`) and the nearest-first scan (`nearest_scan.rs`), which the planner
//! then weighs by cost against its own.

use pgrx::pg_guard;
use pgrx::pg_sys;

/// The pathlist hook that was installed before ours.
static mut PREVIOUS: pg_sys::set_rel_pathlist_hook_type = None;

/// Installs the hook; called once per process from `_PG_init`.
pub fn install() {
    // SAFETY: _PG_init runs once per process, before any planning in it.
    unsafe {
        PREVIOUS = pg_sys::set_rel_pathlist_hook;
        pg_sys::set_rel_pathlist_hook = Some(add_paths);
    }
}

/// PostgreSQL calls it as `set_rel_pathlist_hook` while planning, with the planner's valid
/// `root`, the base relation `rel` at range-table index `rti`, and its `rte`.
#[pg_guard]
unsafe extern "C-unwind" fn add_paths(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
    rte: *mut pg_sys::RangeTblEntry,
) {
    // SAFETY: PREVIOUS is written only by `install`, once, before any planning in the process;
    // the previous hook takes the arguments PostgreSQL gave us.
    if let Some(previous) = unsafe { PREVIOUS } {
        // SAFETY: the hook installed before ours, called with what PostgreSQL passed us. A bare
        // function pointer is not one of pgrx's guarded bindings, so it goes through
        // `pg_guard_ffi_boundary` (nothing with a destructor in the closure): an ERROR it raises
        // comes back as a panic, which `#[pg_guard]` turns into that ERROR again.
        unsafe { pg_sys::ffi::pg_guard_ffi_boundary(|| previous(root, rel, rti, rte)) };
    }
    if !crate::settings::index_lookups() {
        return; // simhash_pg.enable_index_lookups = off: PostgreSQL's own paths only
    }
    // SAFETY: called from the pathlist hook with the planner's valid pointers, which is what
    // both functions require.
    unsafe {
        crate::join_paths::add_probe_paths(root, rel, rti, rte);
        crate::nearest_scan::add_nearest_path(root, rel, rti, rte);
    }
}
