//! What differs between the PostgreSQL majors simhash_pg builds for (13-18), in one place.

use pgrx::pg_sys;

/// The attributes of a tuple descriptor, in column order. PostgreSQL 18 puts an array of
/// `CompactAttribute`s first and the full `pg_attribute` rows after it (its `TupleDescAttr`).
///
/// # Safety
/// `desc` must point to a valid tuple descriptor that outlives `'a` and is not changed while the
/// slice is in use (a relcache entry's `rd_att` while the relation stays open, for instance).
pub(crate) unsafe fn attributes<'a>(desc: pg_sys::TupleDesc) -> &'a [pg_sys::FormData_pg_attribute] {
    // SAFETY: `desc` is a valid descriptor (see # Safety), followed by `natts` attribute rows.
    unsafe {
        let natts = (*desc).natts as usize;
        #[cfg(not(feature = "pg18"))]
        {
            (*desc).attrs.as_slice(natts)
        }
        #[cfg(feature = "pg18")]
        {
            // TupleDescAttr: the full rows start right after the `natts` CompactAttributes.
            let first = (*desc).compact_attrs.as_ptr().add(natts).cast::<pg_sys::FormData_pg_attribute>();
            std::slice::from_raw_parts(first, natts)
        }
    }
}

/// True when the table is read with another role's rights (it sits behind a view): the probe
/// function checks the current user's, so it must not be used there. PostgreSQL 16 moved
/// `checkAsUser` from the range table entry to its RTEPermissionInfo.
///
/// # Safety
/// Called while planning: `root` must be the planner's valid root and `rte` a valid entry of
/// its query's range table.
#[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
pub(crate) unsafe fn read_as_other_user(_root: *mut pg_sys::PlannerInfo, rte: *mut pg_sys::RangeTblEntry) -> bool {
    // SAFETY: `rte` is a valid range table entry (see # Safety).
    unsafe { (*rte).checkAsUser != pg_sys::InvalidOid }
}

/// See the version above.
///
/// # Safety
/// Called while planning: `root` must be the planner's valid root and `rte` a valid entry of
/// its query's range table (getRTEPermissionInfo raises an error when the entry has none).
#[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
pub(crate) unsafe fn read_as_other_user(root: *mut pg_sys::PlannerInfo, rte: *mut pg_sys::RangeTblEntry) -> bool {
    // SAFETY: `root` and `rte` are valid and `rte` belongs to `root->parse` (see # Safety).
    unsafe {
        if (*rte).perminfoindex == 0 {
            return false;
        }
        let info = pg_sys::getRTEPermissionInfo((*(*root).parse).rteperminfos, rte);
        !info.is_null() && (*info).checkAsUser != pg_sys::InvalidOid
    }
}

/// The columns an UPDATE assigns, of the range table entry `rte` of plan `planned` (attribute
/// numbers offset by `FirstLowInvalidHeapAttributeNumber`, as PostgreSQL keeps them); null when
/// the plan does not say. PostgreSQL 16 moved them to the plan's RTEPermissionInfo list.
///
/// # Safety
/// `planned` must be a valid PlannedStmt and `rte` a valid entry of its range table.
#[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
pub(crate) unsafe fn updated_columns(_planned: *mut pg_sys::PlannedStmt, rte: *mut pg_sys::RangeTblEntry) -> *mut pg_sys::Bitmapset {
    // SAFETY: `rte` is a valid range table entry (see # Safety).
    unsafe { (*rte).updatedCols }
}

/// See the version above.
///
/// # Safety
/// As above.
#[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
pub(crate) unsafe fn updated_columns(planned: *mut pg_sys::PlannedStmt, rte: *mut pg_sys::RangeTblEntry) -> *mut pg_sys::Bitmapset {
    // SAFETY: `planned` and `rte` are valid (see # Safety); the index is checked against the list.
    unsafe {
        let index = (*rte).perminfoindex as usize;
        if index == 0 || index > crate::nodes::list_len((*planned).permInfos) {
            return std::ptr::null_mut();
        }
        let info = crate::nodes::list_nth((*planned).permInfos, index - 1) as *mut pg_sys::RTEPermissionInfo;
        (*info).updatedCols
    }
}

/// True when `expr` reads a column of the relation `var` belongs to.
///
/// # Safety
/// As for [`uses_relation`]; `var` must point to a valid Var.
pub(crate) unsafe fn uses_relation_of(root: *mut pg_sys::PlannerInfo, expr: *mut pg_sys::Node, var: *mut pg_sys::Var) -> bool {
    // SAFETY: `var` is a valid Var and the rest is passed on under the same contract (# Safety).
    unsafe { uses_relation(root, expr, (*var).varno as pg_sys::Index) }
}

/// True when `expr` reads a column of range table entry `rti`. `pull_varnos` takes the planner
/// root from PostgreSQL 14 on; `varno` is unsigned before 15.
///
/// # Safety
/// Called while planning, in a memory context that may take the bitmapset `pull_varnos`
/// allocates: `root` must be the planner's valid root and `expr` null or a valid expression.
pub(crate) unsafe fn uses_relation(root: *mut pg_sys::PlannerInfo, expr: *mut pg_sys::Node, rti: pg_sys::Index) -> bool {
    let varno = rti as i32;
    // SAFETY: `root` and `expr` are valid (see # Safety); the bitmapset is freshly made.
    unsafe {
        #[cfg(not(feature = "pg13"))]
        let varnos = pg_sys::pull_varnos(root, expr);
        #[cfg(feature = "pg13")]
        let varnos = {
            let _ = root;
            pg_sys::pull_varnos(expr)
        };
        pg_sys::bms_is_member(varno, varnos)
    }
}

/// Whether a sort key is ascending with NULLs last, the order a nearest-first scan returns.
/// PostgreSQL 18 keeps the direction as a CompareType instead of a B-tree strategy number.
///
/// # Safety
/// `pathkey` must point to a valid PathKey.
pub(crate) unsafe fn ascending_nulls_last(pathkey: *mut pg_sys::PathKey) -> bool {
    // SAFETY: `pathkey` is valid (see # Safety); only its fields are read.
    unsafe {
        #[cfg(not(feature = "pg18"))]
        let ascending = (*pathkey).pk_strategy == pg_sys::BTLessStrategyNumber as i32;
        #[cfg(feature = "pg18")]
        let ascending = (*pathkey).pk_cmptype == pg_sys::CompareType::COMPARE_LT;
        ascending && !(*pathkey).pk_nulls_first
    }
}

/// The B-tree strategy of a sort key (`BTLessStrategyNumber` ascending,
/// `BTGreaterStrategyNumber` descending): PostgreSQL 18 keeps a CompareType instead.
///
/// # Safety
/// `pathkey` must point to a valid PathKey.
pub(crate) unsafe fn pathkey_strategy(pathkey: *mut pg_sys::PathKey) -> u16 {
    // SAFETY: `pathkey` is valid (see # Safety); only its fields are read.
    unsafe {
        #[cfg(not(feature = "pg18"))]
        {
            (*pathkey).pk_strategy as u16
        }
        #[cfg(feature = "pg18")]
        {
            if (*pathkey).pk_cmptype == pg_sys::CompareType::COMPARE_GT {
                pg_sys::BTGreaterStrategyNumber as u16
            } else {
                pg_sys::BTLessStrategyNumber as u16
            }
        }
    }
}

/// `tuplesort_begin_heap` with no parallel coordination and forward reads only: its last
/// argument is a flag word from PostgreSQL 15 on, `randomAccess` before.
///
/// # Safety
/// Inside a transaction, with the memory context the sort should live in current: `desc` must
/// be a valid tuple descriptor that outlives the sort, the four slices must have the same length
/// (one entry per sort column, attribute numbers of `desc`), and the sort must be ended with
/// `tuplesort_end` before the transaction ends.
pub(crate) unsafe fn begin_heap_sort(
    desc: pg_sys::TupleDesc,
    attnums: &mut [pg_sys::AttrNumber],
    sortops: &mut [pg_sys::Oid],
    collations: &mut [pg_sys::Oid],
    nulls_first: &mut [bool],
) -> *mut pg_sys::Tuplesortstate {
    let n = attnums.len() as i32;
    #[cfg(any(feature = "pg13", feature = "pg14"))]
    let option = false;
    #[cfg(not(any(feature = "pg13", feature = "pg14")))]
    let option = 0;
    // SAFETY: `desc` is valid and the slices hold `n` entries each (see # Safety);
    // tuplesort_begin_heap copies what it needs from them.
    unsafe {
        pg_sys::tuplesort_begin_heap(
            desc,
            n,
            attnums.as_mut_ptr(),
            sortops.as_mut_ptr(),
            collations.as_mut_ptr(),
            nulls_first.as_mut_ptr(),
            pg_sys::work_mem,
            std::ptr::null_mut(),
            option,
        )
    }
}

/// The flag by which a custom path says it can project (PostgreSQL 15 on; before, every custom
/// scan was taken to project).
#[cfg(any(feature = "pg13", feature = "pg14"))]
pub(crate) const CUSTOM_SCAN_PROJECTS: u32 = 0;
#[cfg(not(any(feature = "pg13", feature = "pg14")))]
pub(crate) const CUSTOM_SCAN_PROJECTS: u32 = pg_sys::CUSTOMPATH_SUPPORT_PROJECTION;

/// `index_beginscan` with one scan key (for scans that only fetch by TID, the number is
/// arbitrary), which takes instrumentation from PostgreSQL 18 on (none here).
///
/// # Safety
/// As for [`begin_index_scan_with_keys`].
pub(crate) unsafe fn begin_index_scan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
) -> pg_sys::IndexScanDesc {
    // SAFETY: the same contract, passed on (see # Safety).
    unsafe { begin_index_scan_with_keys(heap, index, snapshot, 1) }
}

/// `index_beginscan` for `nkeys` scan keys: every `index_rescan` of the scan must pass exactly
/// that many.
///
/// # Safety
/// Inside a transaction: `heap` must be an open table and `index` an open index on it, both
/// locked and kept open until the scan is ended with `index_endscan`, and `snapshot` a
/// registered or active snapshot that outlives the scan.
pub(crate) unsafe fn begin_index_scan_with_keys(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    // SAFETY: open, locked relations and a live snapshot (see # Safety).
    unsafe {
        #[cfg(not(feature = "pg18"))]
        {
            pg_sys::index_beginscan(heap, index, snapshot, nkeys, 0)
        }
        #[cfg(feature = "pg18")]
        {
            pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), nkeys, 0)
        }
    }
}


/// `pgstat_count_index_scan`: one more scan in pg_stat_user_indexes.idx_scan, so that indexes
/// read by `leaf_scan` do not look unused to whoever looks for indexes to drop.
///
/// # Safety
/// Inside a transaction: `index` must be a valid, open relation (its relcache entry, whose
/// `pgstat_info` belongs to this backend).
pub(crate) unsafe fn count_index_scan(index: pg_sys::Relation) {
    // SAFETY: `index` is open (see # Safety); its pgstat_info is null or this backend's
    // pending counts, which only this backend writes.
    unsafe {
        #[cfg(any(feature = "pg13", feature = "pg14"))]
        {
            let info = (*index).pgstat_info;
            if !info.is_null() {
                (*info).t_counts.t_numscans += 1;
            }
        }
        #[cfg(not(any(feature = "pg13", feature = "pg14")))]
        {
            if (*index).pgstat_info.is_null() && (*index).pgstat_enabled {
                pg_sys::pgstat_assoc_relation(index);
            }
            let info = (*index).pgstat_info;
            if !info.is_null() {
                #[cfg(feature = "pg15")]
                {
                    (*info).t_counts.t_numscans += 1;
                }
                #[cfg(not(feature = "pg15"))]
                {
                    (*info).counts.numscans += 1;
                }
            }
        }
    }
}

/// This backend's local transaction id (`MyProc->lxid`; `MyProc->vxid.lxid` from PostgreSQL 17),
/// which tells one transaction of the backend from the next even when neither has an xid.
///
/// # Safety
/// Must run in a backend that has a PGPROC (`MyProc` set), i.e. any regular backend after
/// startup.
pub(crate) unsafe fn local_transaction_id() -> u32 {
    // SAFETY: MyProc points to this backend's PGPROC (see # Safety); lxid is only written by
    // this backend.
    unsafe {
        #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15", feature = "pg16"))]
        {
            (*pg_sys::MyProc).lxid
        }
        #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15", feature = "pg16")))]
        {
            (*pg_sys::MyProc).vxid.lxid
        }
    }
}

/// Replaces MERGE's ON condition by `f` of it. PostgreSQL 17 keeps it in `mergeJoinCondition`
/// until planning starts; before 17 it is the quals of a JoinExpr of the join tree, which
/// `distance_bounds.rs` reaches as any other.
///
/// # Safety
/// `query` must point to a valid Query that the caller may modify (the planner's own parse
/// tree, before or during planning), and `f` must return a valid expression node.
pub(crate) unsafe fn map_merge_condition(query: *mut pg_sys::Query, f: impl FnOnce(*mut pg_sys::Node) -> *mut pg_sys::Node) {
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    // SAFETY: `query` is valid and ours to change (see # Safety).
    unsafe {
        if !(*query).mergeJoinCondition.is_null() {
            (*query).mergeJoinCondition = f((*query).mergeJoinCondition);
        }
    }
    #[cfg(not(any(feature = "pg17", feature = "pg18")))]
    let _ = (query, f);
}

/// Whether rows of range table entry `rti` may be read again in a newer version than the
/// statement's snapshot shows (EvalPlanQual, under READ COMMITTED): the rows an UPDATE, DELETE or
/// MERGE changes (in every partition or child) and the rows a FOR UPDATE/SHARE clause locks. A
/// condition on such rows must hold for every version of the row, so it may not depend on where
/// the probe found the version it saw. The result relations of a query on a partitioned or
/// inherited table are only known from PostgreSQL 14 on as a set; PostgreSQL 13 plans each child
/// as the result relation in turn.
///
/// # Safety
/// Called while planning: `root` must be the planner's valid root (its `parse`, row marks and
/// result relids are read).
pub(crate) unsafe fn rows_rechecked(root: *mut pg_sys::PlannerInfo, rti: pg_sys::Index) -> bool {
    // SAFETY: `root` is the planner's valid root (see # Safety), so its query, its bitmapset of
    // result relations and its list of PlanRowMarks are valid; `i` stays below the list length.
    unsafe {
        let parse = (*root).parse;
        if (*parse).resultRelation as pg_sys::Index == rti || !pg_sys::get_parse_rowmark(parse, rti).is_null() {
            return true;
        }
        #[cfg(not(feature = "pg13"))]
        if pg_sys::bms_is_member(rti as i32, (*root).all_result_relids) {
            return true;
        }
        let marks = (*root).rowMarks;
        (0..crate::nodes::list_len(marks)).any(|i| {
            let mark = crate::nodes::list_nth(marks, i).cast::<pg_sys::PlanRowMark>();
            // ROW_MARK_REFERENCE and ROW_MARK_COPY re-read the version the snapshot saw.
            (*mark).rti == rti && (*mark).markType <= pg_sys::RowMarkType::ROW_MARK_KEYSHARE
        })
    }
}

/// Reserves a settings prefix for the extension's own settings: from PostgreSQL 15 a setting
/// under it that the extension does not define is an error (`MarkGUCPrefixReserved`); before
/// that PostgreSQL can only warn about the ones already set (`EmitWarningsOnPlaceholders`).
pub(crate) fn reserve_setting_prefix(prefix: &'static std::ffi::CStr) {
    // SAFETY: called from _PG_init, where PostgreSQL expects settings to be defined; the
    // prefix is a static C string.
    unsafe {
        #[cfg(any(feature = "pg13", feature = "pg14"))]
        pg_sys::EmitWarningsOnPlaceholders(prefix.as_ptr());
        #[cfg(not(any(feature = "pg13", feature = "pg14")))]
        pg_sys::MarkGUCPrefixReserved(prefix.as_ptr());
    }
}

/// What PostgreSQL calls on a syscache invalidation: the entry's cache and hash.
pub(crate) type SyscacheCallback = unsafe extern "C-unwind" fn(pg_sys::Datum, i32, u32);

/// `CacheRegisterSyscacheCallback`, which pgrx's bindings for PostgreSQL 13 leave out (they do
/// not include `utils/inval.h`): declared here for 13, pgrx's elsewhere.
///
/// # Safety
/// Must run in a backend whose caches are set up; PostgreSQL has a fixed number of callback
/// slots, so a caller registers once per process, and `callback` must stay valid for its life.
pub(crate) unsafe fn register_syscache_callback(cache: i32, callback: SyscacheCallback) {
    #[cfg(feature = "pg13")]
    {
        unsafe extern "C-unwind" {
            fn CacheRegisterSyscacheCallback(cacheid: i32, func: Option<SyscacheCallback>, arg: pg_sys::Datum);
        }
        // SAFETY: the declaration matches PostgreSQL 13's utils/inval.h; see # Safety.
        unsafe { pg_sys::ffi::pg_guard_ffi_boundary(|| CacheRegisterSyscacheCallback(cache, Some(callback), pg_sys::Datum::from(0))) }
    }
    #[cfg(not(feature = "pg13"))]
    // SAFETY: see # Safety.
    unsafe {
        pg_sys::CacheRegisterSyscacheCallback(cache, Some(callback), pg_sys::Datum::from(0))
    }
}

pub(crate) type RelcacheCallback = unsafe extern "C-unwind" fn(pg_sys::Datum, pg_sys::Oid);

/// `CacheRegisterRelcacheCallback`, left out of pgrx's bindings for PostgreSQL 13 as the
/// syscache one is.
///
/// # Safety
/// As `register_syscache_callback`.
pub(crate) unsafe fn register_relcache_callback(callback: RelcacheCallback) {
    #[cfg(feature = "pg13")]
    {
        unsafe extern "C-unwind" {
            fn CacheRegisterRelcacheCallback(func: Option<RelcacheCallback>, arg: pg_sys::Datum);
        }
        // SAFETY: the declaration matches PostgreSQL 13's utils/inval.h; see # Safety.
        unsafe { pg_sys::ffi::pg_guard_ffi_boundary(|| CacheRegisterRelcacheCallback(Some(callback), pg_sys::Datum::from(0))) }
    }
    #[cfg(not(feature = "pg13"))]
    // SAFETY: see # Safety.
    unsafe {
        pg_sys::CacheRegisterRelcacheCallback(Some(callback), pg_sys::Datum::from(0))
    }
}

/// A relation's file number (relfilenode; `rd_locator.relNumber` from PostgreSQL 16).
///
/// # Safety
/// `rel` must be open.
pub(crate) unsafe fn relation_file(rel: pg_sys::Relation) -> u32 {
    // SAFETY: `rel` is open (see # Safety).
    unsafe {
        #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
        let file = (*rel).rd_node.relNode;
        #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
        let file = (*rel).rd_locator.relNumber;
        u32::from(file)
    }
}

/// Whether the relation's file was made in this transaction (CREATE, REINDEX, TRUNCATE): it may
/// yet be rolled back, or truncated in place.
///
/// # Safety
/// `rel` must be open.
pub(crate) unsafe fn file_new_in_transaction(rel: pg_sys::Relation) -> bool {
    // SAFETY: `rel` is open (see # Safety).
    unsafe {
        #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
        let first = (*rel).rd_firstRelfilenodeSubid;
        #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
        let first = (*rel).rd_firstRelfilelocatorSubid;
        (*rel).rd_createSubid != 0 || first != 0
    }
}

/// Turns relation entry `rte` into a call of a set-returning function (the routed lookup,
/// `routed.rs`), LATERAL when the call reads other entries' columns. The table's privileges are
/// checked where the function reads it; its RTEPermissionInfo (16 on), no longer named by an
/// entry, is left out of the plan by the planner.
///
/// # Safety
/// `rte` must be a valid relation entry of the Query being planned, `function` a valid
/// RangeTblFunction; both in the planner's memory context.
pub(crate) unsafe fn relation_to_function(rte: *mut pg_sys::RangeTblEntry, function: *mut pg_sys::RangeTblFunction, lateral: bool) {
    // SAFETY: `rte` and `function` are valid (see # Safety).
    unsafe {
        (*rte).rtekind = pg_sys::RTEKind::RTE_FUNCTION;
        (*rte).functions = pg_sys::lappend(std::ptr::null_mut(), function.cast());
        (*rte).funcordinality = false;
        (*rte).relid = pg_sys::InvalidOid;
        (*rte).relkind = 0;
        (*rte).rellockmode = 0;
        (*rte).tablesample = std::ptr::null_mut();
        (*rte).inh = false;
        (*rte).lateral = lateral;
        #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
        {
            (*rte).requiredPerms = 0;
            (*rte).checkAsUser = pg_sys::InvalidOid;
            (*rte).selectedCols = std::ptr::null_mut();
        }
        #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
        {
            (*rte).perminfoindex = 0;
        }
    }
}
