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

/// True when `expr` reads a column of the relation `var` belongs to.
pub(crate) unsafe fn uses_relation_of(root: *mut pg_sys::PlannerInfo, expr: *mut pg_sys::Node, var: *mut pg_sys::Var) -> bool {
    uses_relation(root, expr, (*var).varno as pg_sys::Index)
}

/// True when `expr` reads a column of range table entry `rti`. `pull_varnos` takes the planner
/// root from PostgreSQL 14 on; `varno` is unsigned before 15.
pub(crate) unsafe fn uses_relation(root: *mut pg_sys::PlannerInfo, expr: *mut pg_sys::Node, rti: pg_sys::Index) -> bool {
    let varno = rti as i32;
    #[cfg(not(feature = "pg13"))]
    let varnos = pg_sys::pull_varnos(root, expr);
    #[cfg(feature = "pg13")]
    let varnos = {
        let _ = root;
        pg_sys::pull_varnos(expr)
    };
    pg_sys::bms_is_member(varno, varnos)
}

/// Whether a sort key is ascending with NULLs last, the order a nearest-first scan returns.
/// PostgreSQL 18 keeps the direction as a CompareType instead of a B-tree strategy number.
pub(crate) unsafe fn ascending_nulls_last(pathkey: *mut pg_sys::PathKey) -> bool {
    #[cfg(not(feature = "pg18"))]
    let ascending = (*pathkey).pk_strategy == pg_sys::BTLessStrategyNumber as i32;
    #[cfg(feature = "pg18")]
    let ascending = (*pathkey).pk_cmptype == pg_sys::CompareType::COMPARE_LT;
    ascending && !(*pathkey).pk_nulls_first
}

/// The B-tree strategy of a sort key (`BTLessStrategyNumber` ascending,
/// `BTGreaterStrategyNumber` descending): PostgreSQL 18 keeps a CompareType instead.
pub(crate) unsafe fn pathkey_strategy(pathkey: *mut pg_sys::PathKey) -> u16 {
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

/// `tuplesort_begin_heap` with no parallel coordination and forward reads only: its last
/// argument is a flag word from PostgreSQL 15 on, `randomAccess` before.
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

/// The flag by which a custom path says it can project (PostgreSQL 15 on; before, every custom
/// scan was taken to project).
#[cfg(any(feature = "pg13", feature = "pg14"))]
pub(crate) const CUSTOM_SCAN_PROJECTS: u32 = 0;
#[cfg(not(any(feature = "pg13", feature = "pg14")))]
pub(crate) const CUSTOM_SCAN_PROJECTS: u32 = pg_sys::CUSTOMPATH_SUPPORT_PROJECTION;

/// `index_beginscan` with one scan key (for scans that only fetch by TID, the number is
/// arbitrary), which takes instrumentation from PostgreSQL 18 on (none here).
pub(crate) unsafe fn begin_index_scan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
) -> pg_sys::IndexScanDesc {
    begin_index_scan_with_keys(heap, index, snapshot, 1)
}

/// `index_beginscan` for `nkeys` scan keys: every `index_rescan` of the scan must pass exactly
/// that many.
pub(crate) unsafe fn begin_index_scan_with_keys(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    #[cfg(not(feature = "pg18"))]
    {
        pg_sys::index_beginscan(heap, index, snapshot, nkeys, 0)
    }
    #[cfg(feature = "pg18")]
    {
        pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), nkeys, 0)
    }
}

/// The parts of nbtree (access/nbtree.h) that `leaf_scan` uses and pgrx does not bind. Their
/// layout is the same in every supported major: the fifth flag of the insertion key is
/// `pivotsearch` up to 16 and `backward` from 17, false for a forward search in both.
pub(crate) mod nbtree {
    use pgrx::pg_sys;
    use std::ffi::c_int;

    /// `BTScanInsertData`: the search key `_bt_search` descends with.
    #[repr(C)]
    pub(crate) struct ScanInsert {
        pub heapkeyspace: bool,
        pub allequalimage: bool,
        pub anynullkeys: bool,
        pub nextkey: bool,
        pub pivotsearch_or_backward: bool,
        pub scantid: *mut pg_sys::ItemPointerData,
        pub keysz: c_int,
        /// As many as the index has key columns (at least one): only the first is used.
        pub scankeys: [pg_sys::ScanKeyData; 1],
    }

    /// `BTPageOpaqueData`, the special space of every B-tree page (PostgreSQL 13 calls the
    /// third field a union of level and xact; same size and place).
    #[repr(C)]
    pub(crate) struct PageOpaque {
        pub prev: pg_sys::BlockNumber,
        pub next: pg_sys::BlockNumber,
        pub level: u32,
        pub flags: u16,
        pub cycleid: u16,
    }

    /// `BTP_DELETED | BTP_HALF_DEAD`: pages a scan steps over (`P_IGNORE`).
    pub(crate) const IGNORE: u16 = (1 << 2) | (1 << 4);
    /// `P_NONE`: no right sibling.
    pub(crate) const NONE: pg_sys::BlockNumber = 0;
    /// `P_HIKEY`: the high key's line pointer on every page but the rightmost of a level.
    pub(crate) const HIKEY: pg_sys::OffsetNumber = 1;
    /// `BT_READ`.
    pub(crate) const READ: c_int = pg_sys::BUFFER_LOCK_SHARE as c_int;

    /// The C functions, unguarded: call them through the wrappers below, which turn an ERROR
    /// raised inside into a Rust panic as pgrx's own bindings do.
    mod raw {
        use super::ScanInsert;
        use pgrx::pg_sys;
        use std::ffi::{c_int, c_void};

        unsafe extern "C-unwind" {
            pub(super) fn _bt_mkscankey(rel: pg_sys::Relation, itup: pg_sys::IndexTuple) -> *mut ScanInsert;
            pub(super) fn _bt_freestack(stack: *mut c_void);
            pub(super) fn _bt_metaversion(rel: pg_sys::Relation, heapkeyspace: *mut bool, allequalimage: *mut bool);
            pub(super) fn _bt_relandgetbuf(
                rel: pg_sys::Relation,
                obuf: pg_sys::Buffer,
                blkno: pg_sys::BlockNumber,
                access: c_int,
            ) -> pg_sys::Buffer;
            pub(super) fn _bt_relbuf(rel: pg_sys::Relation, buf: pg_sys::Buffer);
            pub(super) fn PredicateLockPage(rel: pg_sys::Relation, blkno: pg_sys::BlockNumber, snapshot: pg_sys::Snapshot);
            pub(super) fn PredicateLockRelation(rel: pg_sys::Relation, snapshot: pg_sys::Snapshot);
            #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
            pub(super) fn _bt_search(
                rel: pg_sys::Relation,
                key: *mut ScanInsert,
                buf: *mut pg_sys::Buffer,
                access: c_int,
                snapshot: pg_sys::Snapshot,
            ) -> *mut c_void;
            #[cfg(feature = "pg16")]
            pub(super) fn _bt_search(
                rel: pg_sys::Relation,
                heaprel: pg_sys::Relation,
                key: *mut ScanInsert,
                buf: *mut pg_sys::Buffer,
                access: c_int,
                snapshot: pg_sys::Snapshot,
            ) -> *mut c_void;
            #[cfg(any(feature = "pg17", feature = "pg18"))]
            pub(super) fn _bt_search(
                rel: pg_sys::Relation,
                heaprel: pg_sys::Relation,
                key: *mut ScanInsert,
                buf: *mut pg_sys::Buffer,
                access: c_int,
            ) -> *mut c_void;
        }
    }

    use pg_sys::ffi::pg_guard_ffi_boundary as guarded;

    /// `_bt_mkscankey(index, NULL)`: an insertion key whose arguments are NULL placeholders,
    /// with the index's own version from its metapage (`_bt_mkscankey` assumes the current
    /// one without a tuple; an index pg_upgraded from PostgreSQL 11 or older is not, and is
    /// searched differently), as `_bt_first` does.
    pub(crate) unsafe fn make_key(index: pg_sys::Relation) -> *mut ScanInsert {
        let key = guarded(|| raw::_bt_mkscankey(index, std::ptr::null_mut()));
        guarded(|| raw::_bt_metaversion(index, &mut (*key).heapkeyspace, &mut (*key).allequalimage));
        key
    }

    /// `_bt_relandgetbuf(.., BT_READ)`: lets go of `buf` and share-locks page `next`.
    pub(crate) unsafe fn step_to(index: pg_sys::Relation, buf: pg_sys::Buffer, next: pg_sys::BlockNumber) -> pg_sys::Buffer {
        guarded(|| raw::_bt_relandgetbuf(index, buf, next, READ))
    }

    /// `_bt_relbuf`: unlocks and unpins.
    pub(crate) unsafe fn release(index: pg_sys::Relation, buf: pg_sys::Buffer) {
        guarded(|| raw::_bt_relbuf(index, buf))
    }

    /// `PredicateLockPage`.
    pub(crate) unsafe fn lock_page(index: pg_sys::Relation, block: pg_sys::BlockNumber, snapshot: pg_sys::Snapshot) {
        guarded(|| raw::PredicateLockPage(index, block, snapshot))
    }

    /// `PredicateLockRelation`.
    pub(crate) unsafe fn lock_relation(index: pg_sys::Relation, snapshot: pg_sys::Snapshot) {
        guarded(|| raw::PredicateLockRelation(index, snapshot))
    }

    /// `_bt_search(..., BT_READ)`: the leaf page (share-locked, pinned) where entries equal to
    /// the key begin, or an invalid buffer for an empty index. The descent's stack is freed.
    /// PostgreSQL 16 added the heap relation; 17 dropped the snapshot (old_snapshot_threshold).
    pub(crate) unsafe fn search(
        index: pg_sys::Relation,
        heap: pg_sys::Relation,
        key: *mut ScanInsert,
        snapshot: pg_sys::Snapshot,
    ) -> pg_sys::Buffer {
        let mut buf: pg_sys::Buffer = pg_sys::InvalidBuffer as pg_sys::Buffer;
        let out = &mut buf as *mut pg_sys::Buffer;
        #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
        let stack = {
            let _ = heap;
            guarded(|| raw::_bt_search(index, key, out, READ, snapshot))
        };
        #[cfg(feature = "pg16")]
        let stack = guarded(|| raw::_bt_search(index, heap, key, out, READ, snapshot));
        #[cfg(any(feature = "pg17", feature = "pg18"))]
        let stack = {
            let _ = snapshot;
            guarded(|| raw::_bt_search(index, heap, key, out, READ))
        };
        guarded(|| raw::_bt_freestack(stack));
        buf
    }

    /// `TestForOldSnapshot` on a page reached by its left sibling's link (the descent tests its
    /// own pages): "snapshot too old" when old_snapshot_threshold pruned it, as nbtree's own
    /// scans do. The setting is gone from PostgreSQL 17.
    pub(crate) unsafe fn test_for_old_snapshot(snapshot: pg_sys::Snapshot, index: pg_sys::Relation, page: pg_sys::Page) {
        #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15", feature = "pg16"))]
        {
            let mvcc = !snapshot.is_null()
                && matches!(
                    (*snapshot).snapshot_type,
                    pg_sys::SnapshotType::SNAPSHOT_MVCC | pg_sys::SnapshotType::SNAPSHOT_TOAST
                );
            if pg_sys::old_snapshot_threshold >= 0 && mvcc && (*snapshot).lsn != 0 {
                let header = page.cast::<pg_sys::PageHeaderData>();
                let lsn = (u64::from((*header).pd_lsn.xlogid) << 32) | u64::from((*header).pd_lsn.xrecoff);
                if lsn > (*snapshot).lsn {
                    pg_sys::TestForOldSnapshot_impl(snapshot, index);
                }
            }
        }
        #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15", feature = "pg16")))]
        {
            let _ = (snapshot, index, page);
        }
    }
}

/// `pgstat_count_index_scan`: one more scan in pg_stat_user_indexes.idx_scan, so that indexes
/// read by `leaf_scan` do not look unused to whoever looks for indexes to drop.
pub(crate) unsafe fn count_index_scan(index: pg_sys::Relation) {
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

/// This backend's local transaction id (`MyProc->lxid`; `MyProc->vxid.lxid` from PostgreSQL 17),
/// which tells one transaction of the backend from the next even when neither has an xid.
pub(crate) unsafe fn local_transaction_id() -> u32 {
    #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15", feature = "pg16"))]
    {
        (*pg_sys::MyProc).lxid
    }
    #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15", feature = "pg16")))]
    {
        (*pg_sys::MyProc).vxid.lxid
    }
}
