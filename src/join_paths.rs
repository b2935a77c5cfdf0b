//! Joins on `simhash_near(d.fp, n.fp, k)` (and every spelling `distance_bounds.rs` turns into
//! it) probe the covering block indexes once per outer row, as a constant lookup does.
//!
//! For a join, the support function (`planner.rs`) writes the lookup with the outer row's
//! fingerprint, `ctid = ANY(_simhash_index_probe(indexes, n.fp, k))`, beside the BitmapOr form.
//! PostgreSQL makes a TID scan driven by a join's outer row only for `ctid = n.some_tid`, never
//! for `= ANY`, although its executor evaluates either anew for each outer row. This
//! `set_rel_pathlist_hook` adds that path: a TID scan of `d` parameterized by the other tables of
//! the clause, which the planner then weighs, by cost, against the BitmapOr path and the rest
//! (a nested loop runs the probe per outer row and fetches only the rows within k). Without it
//! the clause is still exact, as a filter.

use pgrx::pg_sys;

use crate::ext_objects::ExtOids;
use crate::nodes::{cast, list_len, list_nth};

/// Adds the parameterized TID scans of `rel`, called by `paths_hook.rs` after PostgreSQL made
/// its own paths for it.
///
/// # Safety
/// The pointers are the planner's own, as `set_rel_pathlist_hook` receives them.
pub(crate) unsafe fn add_probe_paths(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
    rte: *mut pg_sys::RangeTblEntry,
) {
    // Where PostgreSQL itself would build a TID scan: a plain table read whole (no sample, no
    // inheritance children, which a TID scan of the parent would miss).
    // SAFETY: the planner's own pointers, as `set_rel_pathlist_hook` receives them (see # Safety):
    // `rte` and `rel` describe range table entry `rti` of `root`, joininfo is a list of
    // RestrictInfos, and the bitmapsets and path built here are palloc'd in the planner's memory
    // context.
    unsafe {
        let relkind = (*rte).relkind as u8;
        if (*rel).reloptkind != pg_sys::RelOptKind::RELOPT_BASEREL
            || (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION
            || (relkind != pg_sys::RELKIND_RELATION && relkind != pg_sys::RELKIND_MATVIEW)
            || (*rte).inh
            || !(*rte).tablesample.is_null()
            || (*rel).joininfo.is_null()
        {
            return;
        }
        let joininfo = (*rel).joininfo;
        for i in 0..list_len(joininfo) {
            let rinfo = list_nth(joininfo, i).cast::<pg_sys::RestrictInfo>();
            if (*rinfo).pseudoconstant
                || !pg_sys::restriction_is_securely_promotable(rinfo, rel)
                || !is_probe_of(root, rinfo, rel, rti)
                || !pg_sys::join_clause_is_movable_to(rinfo, rel)
            {
                continue;
            }
            let outer = pg_sys::bms_union(
                pg_sys::bms_difference((*rinfo).required_relids, (*rel).relids),
                (*rel).lateral_relids,
            );
            let tidquals = pg_sys::lappend(std::ptr::null_mut(), rinfo.cast());
            let path = pg_sys::create_tidscan_path(root, rel, tidquals, outer);
            pg_sys::add_path(rel, path.cast());
        }
    }
}

/// Whether `rinfo` is `ctid = ANY(_simhash_index_probe(...))` on the ctid of range table entry
/// `rti` (relation `rel`), the probe found by identity, with arguments a TID scan can compute
/// before reading `rel`: none of `rel`'s own columns (the scan has no row yet to take them
/// from) and nothing volatile. Our support function writes it so; a hand-written one may not.
///
/// # Safety
/// Called while planning: `root`, `rinfo` and `rel` must be the planner's valid pointers, with
/// `rel` the relation of range table entry `rti`.
unsafe fn is_probe_of(
    root: *mut pg_sys::PlannerInfo,
    rinfo: *mut pg_sys::RestrictInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
) -> bool {
    // SAFETY: the planner's valid pointers (see # Safety); `cast` checks each node's tag before it
    // is read as that type, and the two list elements read exist (the length is checked first).
    unsafe {
        let Some(saop) = cast::<pg_sys::ScalarArrayOpExpr>((*rinfo).clause.cast(), pg_sys::NodeTag::T_ScalarArrayOpExpr)
        else {
            return false;
        };
        if (*saop).opno != pg_sys::Oid::from(pg_sys::TIDEqualOperator) || !(*saop).useOr || list_len((*saop).args) != 2 {
            return false;
        }
        let is_own_ctid = cast::<pg_sys::Var>(list_nth((*saop).args, 0), pg_sys::NodeTag::T_Var).is_some_and(|var| {
            (*var).varno as pg_sys::Index == rti
                && (*var).varlevelsup == 0
                && (*var).varattno == pg_sys::SelfItemPointerAttributeNumber as pg_sys::AttrNumber
        });
        let Some(call) = cast::<pg_sys::FuncExpr>(list_nth((*saop).args, 1), pg_sys::NodeTag::T_FuncExpr) else {
            return false;
        };
        let computable_first = !crate::compat::uses_relation(root, call.cast(), (*rel).relid)
            && !pg_sys::contain_volatile_functions(call.cast());
        is_own_ctid
            && computable_first
            && ExtOids::of_member((*call).funcid)
                .is_some_and(|oids| oids.probe_fn == (*call).funcid || oids.sets.is_some_and(|s| s.probe_fn == (*call).funcid))
    }
}
