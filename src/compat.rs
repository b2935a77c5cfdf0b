//! What differs between the PostgreSQL majors simhash_pg builds for (13-18), in one place.

use pgrx::pg_sys;

/// The attributes of a tuple descriptor, in column order. PostgreSQL 18 puts an array of
/// `CompactAttribute`s first and the full `pg_attribute` rows after it (its `TupleDescAttr`).
pub(crate) unsafe fn attributes<'a>(desc: pg_sys::TupleDesc) -> &'a [pg_sys::FormData_pg_attribute] {
    let natts = (*desc).natts as usize;
    #[cfg(not(feature = "pg18"))]
    {
        (*desc).attrs.as_slice(natts)
    }
    #[cfg(feature = "pg18")]
    {
        let first = (*desc).compact_attrs.as_ptr().add(natts).cast::<pg_sys::FormData_pg_attribute>();
        std::slice::from_raw_parts(first, natts)
    }
}

/// True when the table is read with another role's rights (it sits behind a view): the probe
/// function checks the current user's, so it must not be used there. PostgreSQL 16 moved
/// `checkAsUser` from the range table entry to its RTEPermissionInfo.
#[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
pub(crate) unsafe fn read_as_other_user(_root: *mut pg_sys::PlannerInfo, rte: *mut pg_sys::RangeTblEntry) -> bool {
    (*rte).checkAsUser != pg_sys::InvalidOid
}

#[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
pub(crate) unsafe fn read_as_other_user(root: *mut pg_sys::PlannerInfo, rte: *mut pg_sys::RangeTblEntry) -> bool {
    if (*rte).perminfoindex == 0 {
        return false;
    }
    let info = pg_sys::getRTEPermissionInfo((*(*root).parse).rteperminfos, rte);
    !info.is_null() && (*info).checkAsUser != pg_sys::InvalidOid
}

/// True when `expr` reads a column of the relation `var` belongs to. `pull_varnos` takes the
/// planner root from PostgreSQL 14 on; `varno` is unsigned before 15.
pub(crate) unsafe fn uses_relation_of(root: *mut pg_sys::PlannerInfo, expr: *mut pg_sys::Node, var: *mut pg_sys::Var) -> bool {
    let varno = (*var).varno as i32;
    #[cfg(not(feature = "pg13"))]
    let varnos = pg_sys::pull_varnos(root, expr);
    #[cfg(feature = "pg13")]
    let varnos = {
        let _ = root;
        pg_sys::pull_varnos(expr)
    };
    pg_sys::bms_is_member(varno, varnos)
}

/// `index_beginscan`, which takes instrumentation from PostgreSQL 18 on (none here).
pub(crate) unsafe fn begin_index_scan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
) -> pg_sys::IndexScanDesc {
    #[cfg(not(feature = "pg18"))]
    {
        pg_sys::index_beginscan(heap, index, snapshot, 1, 0)
    }
    #[cfg(feature = "pg18")]
    {
        pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), 1, 0)
    }
}
