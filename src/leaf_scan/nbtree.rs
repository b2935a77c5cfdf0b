//! The parts of nbtree (access/nbtree.h) that `leaf_scan` uses and pgrx does not bind. Their
//! layout is the same in every supported major: the fifth flag of the insertion key is
//! `pivotsearch` up to 16 and `backward` from 17, false for a forward search in both.
//!
//! Their layouts are written out by hand, so the assertions below check them against nbtree's
//! at compile time (64-bit machines, which pgrx supports): a wrong offset would have the
//! descent read its key from the wrong place.

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

// BTScanInsertData: five flags, the heap TID pointer at 8, keysz at 16, the scan keys at 24;
// BTPageOpaqueData: 16 bytes (two block numbers, the level, the flags, the cycle id).
const _: () = {
    assert!(std::mem::offset_of!(ScanInsert, scantid) == 8);
    assert!(std::mem::offset_of!(ScanInsert, keysz) == 16);
    assert!(std::mem::offset_of!(ScanInsert, scankeys) == 24);
    assert!(std::mem::size_of::<PageOpaque>() == 16);
    assert!(std::mem::offset_of!(PageOpaque, flags) == 12);
};

/// `BTP_DELETED | BTP_HALF_DEAD`: pages a scan steps over (`P_IGNORE`).
pub(crate) const IGNORE: u16 = (1 << 2) | (1 << 4);
/// `BTP_LEAF`.
pub(crate) const LEAF: u16 = 1;
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
        pub(super) fn _bt_getrootheight(rel: pg_sys::Relation) -> c_int;
        pub(super) fn _bt_checkpage(rel: pg_sys::Relation, buf: pg_sys::Buffer);
        #[cfg(not(any(feature = "pg17", feature = "pg18")))]
        pub(super) fn _bt_get_endpoint(rel: pg_sys::Relation, level: u32, rightmost: bool, snapshot: pg_sys::Snapshot) -> pg_sys::Buffer;
        #[cfg(any(feature = "pg17", feature = "pg18"))]
        pub(super) fn _bt_get_endpoint(rel: pg_sys::Relation, level: u32, rightmost: bool) -> pg_sys::Buffer;
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
///
/// # Safety
/// `index` must be an open, locked B-tree index; the key is palloc'd in the current context.
pub(crate) unsafe fn make_key(index: pg_sys::Relation) -> *mut ScanInsert {
    // SAFETY: `index` is an open, locked B-tree index (see # Safety); the ERRORs the two calls may
    // raise become panics through `guarded`, and `key` is the fresh palloc'd key the first returns.
    unsafe {
        let key = guarded(|| raw::_bt_mkscankey(index, std::ptr::null_mut()));
        guarded(|| raw::_bt_metaversion(index, &mut (*key).heapkeyspace, &mut (*key).allequalimage));
        key
    }
}

/// `_bt_relandgetbuf(.., BT_READ)`: lets go of `buf` and share-locks page `next`.
///
/// # Safety
/// `buf` must be a pinned, locked page of `index` and `next` one of its pages; `buf` is
/// not to be used again.
pub(crate) unsafe fn step_to(index: pg_sys::Relation, buf: pg_sys::Buffer, next: pg_sys::BlockNumber) -> pg_sys::Buffer {
    // SAFETY: `buf` is a pinned, locked page of `index` and `next` one of its pages (see # Safety).
    unsafe { guarded(|| raw::_bt_relandgetbuf(index, buf, next, READ)) }
}

/// `_bt_relbuf`: unlocks and unpins.
///
/// # Safety
/// `buf` must be a pinned, locked page of `index`, not used again.
pub(crate) unsafe fn release(index: pg_sys::Relation, buf: pg_sys::Buffer) {
    // SAFETY: `buf` is a pinned, locked page of `index`, released once (see # Safety).
    unsafe { guarded(|| raw::_bt_relbuf(index, buf)) }
}

/// `PredicateLockPage`.
///
/// # Safety
/// `index` must be open and `snapshot` valid; `block` one of its pages.
pub(crate) unsafe fn lock_page(index: pg_sys::Relation, block: pg_sys::BlockNumber, snapshot: pg_sys::Snapshot) {
    // SAFETY: `index` is open, `snapshot` valid and `block` one of its pages (see # Safety).
    unsafe { guarded(|| raw::PredicateLockPage(index, block, snapshot)) }
}

/// `PredicateLockRelation`.
///
/// # Safety
/// `index` must be open and `snapshot` valid.
pub(crate) unsafe fn lock_relation(index: pg_sys::Relation, snapshot: pg_sys::Snapshot) {
    // SAFETY: `index` is open and `snapshot` valid (see # Safety).
    unsafe { guarded(|| raw::PredicateLockRelation(index, snapshot)) }
}

/// `_bt_search(..., BT_READ)`: the leaf page (share-locked, pinned) where entries equal to
/// the key begin, or an invalid buffer for an empty index. The descent's stack is freed.
/// PostgreSQL 16 added the heap relation; 17 dropped the snapshot (old_snapshot_threshold).
///
/// # Safety
/// `index` must be an open, locked B-tree index of the open `heap`, `key` made for it by
/// `make_key` with its first argument set, `snapshot` valid; no buffer lock held.
pub(crate) unsafe fn search(
    index: pg_sys::Relation,
    heap: pg_sys::Relation,
    key: *mut ScanInsert,
    snapshot: pg_sys::Snapshot,
) -> pg_sys::Buffer {
    let mut buf: pg_sys::Buffer = pg_sys::InvalidBuffer as pg_sys::Buffer;
    let out = &mut buf as *mut pg_sys::Buffer;
    // SAFETY: `index`, `heap`, `key` and `snapshot` are as `_bt_search` needs them (see # Safety)
    // and `out` points to the local `buf`, which the descent fills in; the stack it returns is its
    // own palloc'd one, freed once here.
    unsafe {
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
}

/// `TestForOldSnapshot` on a page reached by its left sibling's link (the descent tests its
/// own pages): "snapshot too old" when old_snapshot_threshold pruned it, as nbtree's own
/// scans do. The setting is gone from PostgreSQL 17.
///
/// # Safety
/// `page` must be a pinned page of the open `index`; `snapshot` null or valid.
pub(crate) unsafe fn test_for_old_snapshot(snapshot: pg_sys::Snapshot, index: pg_sys::Relation, page: pg_sys::Page) {
    #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15", feature = "pg16"))]
    {
        // SAFETY: `snapshot` is null or valid and `page` a pinned page of `index` (see # Safety);
        // the page header's LSN is read under the pin, as PostgreSQL's TestForOldSnapshot does.
        unsafe {
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
    }
    #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15", feature = "pg16")))]
    {
        let _ = (snapshot, index, page);
    }
}

/// `_bt_getrootheight`: the level of the (fast) root, 0 when it is a leaf or the index is empty.
///
/// # Safety
/// `index` must be an open, locked B-tree index; no buffer lock held.
pub(crate) unsafe fn root_height(index: pg_sys::Relation) -> i32 {
    // SAFETY: `index` is an open, locked B-tree index (see # Safety).
    unsafe { guarded(|| raw::_bt_getrootheight(index)) }
}

/// `_bt_get_endpoint(index, level, false)`: the leftmost page of `level`, share-locked, or an
/// invalid buffer for an empty index.
///
/// # Safety
/// `index` must be an open, locked B-tree index whose root is at `level` or above; `snapshot`
/// valid; no buffer lock held.
pub(crate) unsafe fn leftmost(index: pg_sys::Relation, level: u32, snapshot: pg_sys::Snapshot) -> pg_sys::Buffer {
    // SAFETY: as for this function (see # Safety).
    unsafe {
        #[cfg(not(any(feature = "pg17", feature = "pg18")))]
        let buf = guarded(|| raw::_bt_get_endpoint(index, level, false, snapshot));
        #[cfg(any(feature = "pg17", feature = "pg18"))]
        let buf = {
            let _ = snapshot;
            guarded(|| raw::_bt_get_endpoint(index, level, false))
        };
        buf
    }
}

/// Page `block` of `index`, pinned and share-locked, found through `recent` (the shared buffer
/// it was last read from, or 0) when it is still there (`ReadRecentBuffer`, from PostgreSQL 14:
/// no buffer-table lookup), else read as usual. Local buffers (temporary indexes, negative
/// numbers) are never looked up by hint.
///
/// # Safety
/// `index` must be an open, locked index with at least `block + 1` pages; no buffer lock held.
pub(crate) unsafe fn read_hinted(index: pg_sys::Relation, block: pg_sys::BlockNumber, recent: pg_sys::Buffer) -> pg_sys::Buffer {
    // SAFETY: as for this function (see # Safety); ReadRecentBuffer checks the buffer's tag
    // under its header lock before it pins it.
    unsafe {
        #[cfg(feature = "pg13")]
        let found = {
            let _ = recent;
            false
        };
        #[cfg(any(feature = "pg14", feature = "pg15"))]
        let found = recent > 0 && pg_sys::ReadRecentBuffer((*index).rd_node, pg_sys::ForkNumber::MAIN_FORKNUM, block, recent);
        #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
        let found = recent > 0 && pg_sys::ReadRecentBuffer((*index).rd_locator, pg_sys::ForkNumber::MAIN_FORKNUM, block, recent);
        let buf = if found {
            recent
        } else {
            pg_sys::ReadBufferExtended(index, pg_sys::ForkNumber::MAIN_FORKNUM, block, pg_sys::ReadBufferMode::RBM_NORMAL, std::ptr::null_mut())
        };
        pg_sys::LockBuffer(buf, READ);
        buf
    }
}

/// `PageIsNew`: a page never initialised (all zeros).
///
/// # Safety
/// `page` must be a pinned page.
pub(crate) unsafe fn page_is_new(page: pg_sys::Page) -> bool {
    // SAFETY: `page` is pinned (see # Safety); its header is its first bytes.
    unsafe { (*page.cast::<pg_sys::PageHeaderData>()).pd_upper == 0 }
}

/// Whether the page's special space is a B-tree page's (`_bt_checkpage`'s test, without its
/// ERROR).
///
/// # Safety
/// `page` must be a pinned, initialised page.
pub(crate) unsafe fn is_btree_page(page: pg_sys::Page) -> bool {
    // SAFETY: `page` is pinned (see # Safety); its header is its first bytes.
    let special = unsafe { usize::from((*page.cast::<pg_sys::PageHeaderData>()).pd_special) };
    (pg_sys::BLCKSZ as usize).checked_sub(special) == Some(std::mem::size_of::<PageOpaque>())
}

/// `_bt_checkpage`: an ERROR for a zeroed page or one whose special space is not a B-tree's.
///
/// # Safety
/// `buf` must be a pinned page of the open `index`.
pub(crate) unsafe fn check_page(index: pg_sys::Relation, buf: pg_sys::Buffer) {
    // SAFETY: `buf` is a pinned page of `index` (see # Safety).
    unsafe { guarded(|| raw::_bt_checkpage(index, buf)) }
}

/// `RelationGetNumberOfBlocks`: the index's pages, at most its leaf pages and its highest block.
///
/// # Safety
/// `index` must be open and locked.
pub(crate) unsafe fn pages(index: pg_sys::Relation) -> pg_sys::BlockNumber {
    // SAFETY: `index` is open and locked (see # Safety).
    unsafe { pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM) }
}
