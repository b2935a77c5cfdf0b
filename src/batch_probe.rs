//! Which rows of a batch lie within k bits of a row of a big table, in one pass over one of the
//! table's covering block indexes: the target side of `simhash_ingest`.
//!
//! A lookup per batch row costs each row a few B-tree descents and, through narrow blocks,
//! thousands of index entries (8-bit blocks at 10M rows: about 156,000 per row at k = 3); the
//! hash joins on masked keys read the whole target once per key. Here the batch goes into an
//! in-memory block index (`simhash_core::near_set`) and one covering index is read whole off
//! its leaf pages (`leaf_scan`), each entry's fingerprint asked against the batch: the target
//! is read once, for any k. `simhash_core::batch::batch_method` chooses among the three.
//!
//! The entries found are then fetched from the table, as the lookup does, through the index
//! AM's heap fetch (snapshot, HOT chains, predicate locks): only a visible row counts. The
//! candidates are checked every `VERIFY_EVERY` of them, and a batch row once confirmed is not
//! looked for again, so memory stays bounded when a batch row is near thousands of rows.

use pgrx::pg_sys;
use pgrx::prelude::*;
use simhash_core::batch::{self, BatchMethod};
use simhash_core::blocks::Block;
use simhash_core::near_set::NearSet;

use crate::args::{Name, Table};
use crate::errors;
use crate::memory;
use crate::ext_objects::ExtOids;
use crate::simhash64::SimHash64;
use crate::index_probe::{check_block_index, check_can_read, tid_order, Gives};
use crate::layout;
use crate::leaf_scan::{whole_index_ranges, LeafScan, Shape};

/// Candidates (index entry, batch row) collected before they are fetched from the table.
const VERIFY_EVERY: usize = 1 << 16;

/// How `simhash_ingest` should find the rows of a batch of `batch_rows` rows within `k` bits
/// of a row of plain table `tbl` (column `col`): `lookups`, `pass` or `joins`, whichever
/// `simhash_core::batch::batch_method` finds cheapest for the table's size and block layouts.
/// The pass is offered only where `_simhash_batch_near` can run: a covering layout, and no
/// row-level security for the caller (the lookups honour it); neither it nor the lookups on a
/// table that reads no row by ctid.
#[pg_extern(stable, strict, parallel_safe)]
fn _simhash_ingest_method(tbl: Table, col: Name, k: i32, batch_rows: f64, fcinfo: pg_sys::FunctionCallInfo) -> &'static str {
    let Ok(k) = u32::try_from(k) else {
        errors::invalid_parameter(format!("k must be between 0 and 64, got {k}"));
    };
    // SAFETY: the function's own OID from fcinfo; `tbl` is open (AccessShareLock).
    let (lookup, pass, rows) = unsafe {
        let rel = tbl.as_ptr();
        let layouts = ExtOids::of_member((*(*fcinfo).flinfo).fn_oid)
            .zip(crate::table_info::attnum_of(rel, col.bytes()))
            .map(|(oids, attnum)| layout::layouts(&layout::block_columns(rel, &oids), attnum, None))
            .unwrap_or_default();
        let rls = pg_sys::check_enable_rls(tbl.oid(), pg_sys::InvalidOid, true)
            == pg_sys::CheckEnableRlsResult::RLS_ENABLED as i32;
        // A table that reads no row by ctid (columnar) has no indexed lookups (`lookup_cost`
        // is None); the pass, not tested there, is not offered either: the joins.
        let pass = crate::table_info::reads_rows_by_tid(rel) && !rls && layouts.iter().any(|l| l.covering.is_some());
        (crate::table_info::lookup_cost(rel, &layouts, k as i32), pass, crate::table_info::rows_estimate(rel))
    };
    match batch::batch_method(k, batch_rows, rows, lookup, pass) {
        BatchMethod::Lookups => "lookups",
        BatchMethod::Pass => "pass",
        BatchMethod::Joins => "joins",
    }
}

/// The positions (1-based) of the fingerprints of `fps` within `k` bits of a visible row of
/// plain table `tbl`, found by one read of a covering block index of column `col`, in order;
/// NULL when `col` has no covering block layout. Reads the table, so it needs SELECT on it (or
/// on the indexed columns), and refuses a table whose row-level security applies (42501).
#[pg_extern(
    sql = r#"
CREATE FUNCTION _simhash_batch_near(tbl regclass, col text, fps simhash64[], k int4) RETURNS int8[]
    STABLE STRICT PARALLEL SAFE COST 10000
    LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
"#,
    requires = ["simhash64_type"]
)]
fn _simhash_batch_near(
    tbl: Table,
    col: Name,
    fps: Array<SimHash64>,
    k: i32,
    fcinfo: pg_sys::FunctionCallInfo,
) -> Option<Vec<i64>> {
    let k = simhash_core::distance::check_threshold(i64::from(k)).unwrap_or_else(|e| errors::invalid_parameter(e));
    let fps = crate::etl::fingerprints(&fps, "simhash_ingest");
    // SAFETY: the function's own OID from fcinfo; `tbl` is open (AccessShareLock); the index is
    // opened, checked and closed here, and its scans end before we return.
    unsafe {
        let rel = tbl.as_ptr();
        let oids = ExtOids::of_member((*(*fcinfo).flinfo).fn_oid)?;
        let attnum = crate::table_info::attnum_of(rel, col.bytes())?;
        let layouts = layout::layouts(&layout::block_columns(rel, &oids), attnum, None);
        let (count, index_oid) = layouts.iter().find_map(|l| Some((l.count, *l.covering.as_ref()?.first()?)))?;
        let index = pg_sys::index_open(index_oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        check_can_read(tbl.oid(), &[index], "simhash_ingest", Gives::Values);
        let shape = check_block_index(index);
        let near = near_rows(rel, index, shape, count, &fps, k);
        pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
        Some(near.iter().enumerate().filter(|(_, &n)| n).map(|(i, _)| i as i64 + 1).collect())
    }
}

/// For each of `fps`, whether a visible row of `heap` lies within `k` bits: every entry of
/// `index` (block 0 of a `blocks`-block covering layout) asked against the batch.
///
/// # Safety
/// `heap` and `index` must be open and locked; `index` a checked covering block index of `heap`.
unsafe fn near_rows(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    shape: Shape,
    blocks: u32,
    fps: &[Option<u64>],
    k: u32,
) -> Vec<bool> {
    let mut meter = memory::etl_meter("the batch's in-memory index");
    let set = NearSet::of(fps, k, &mut meter).unwrap_or_else(|e| errors::memory("simhash_ingest", e));
    let mut near = vec![false; fps.len()];
    // The candidates of one range wait for their rows' visibility under the same limit: a
    // crowded batch against a crowded table (every empty text's fingerprint is 0) can pair every
    // entry with every row. Past it, the range stops collecting, and the call ends once the
    // range's buffer lock is released.
    let mut limit = memory::etl_meter("the pass's candidate rows");
    let mut over: Option<simhash_core::memory::MemoryError> = None;
    // Without a statement snapshot, the transaction's for the read's duration.
    // SAFETY: inside a transaction with `heap` and `index` open and locked, `index` a checked
    // covering block index (see # Safety): the snapshot pushed here (or the statement's) stays
    // active until the PopActiveSnapshot at the end, the leaf scan and the fetch read the two
    // relations under it, and the scan has released its buffers (dropped) before the fetch ends.
    unsafe {
        let pushed = !pg_sys::ActiveSnapshotSet();
        if pushed {
            pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
        }
        let snapshot = pg_sys::GetActiveSnapshot();
        if !matches!((*snapshot).snapshot_type, pg_sys::SnapshotType::SNAPSHOT_MVCC) {
            errors::feature_not_supported("simhash_ingest: needs an MVCC snapshot");
        }
        let width = Block::new(0, i64::from(blocks)).map_or(32, |b| b.width);
        let mut scan = LeafScan::new(heap, index, snapshot, shape);
        let mut fetch = Fetch::new(heap, index, snapshot);
        let mut candidates: Vec<(pg_sys::ItemPointerData, u32)> = Vec::new();
        for (low, high) in whole_index_ranges(width) {
            scan.range_of_fingerprints(low, high, &mut |fp, tid| {
                set.find(fp, &mut |row, _| {
                    if !near[row as usize] && over.is_none() {
                        let entry = std::mem::size_of::<(pg_sys::ItemPointerData, u32)>();
                        match limit.add(entry).and_then(|()| simhash_core::memory::room(&mut candidates, 1)) {
                            Ok(()) => candidates.push((tid, row)),
                            Err(e) => over = Some(e),
                        }
                    }
                    false
                });
            });
            if let Some(e) = over {
                errors::memory("simhash_ingest", e);
            }
            if candidates.len() >= VERIFY_EVERY {
                fetch.confirm(&mut candidates, &mut near);
                limit = memory::etl_meter("the pass's candidate rows");
            }
        }
        fetch.confirm(&mut candidates, &mut near);
        drop(scan);
        fetch.end();
        if pushed {
            pg_sys::PopActiveSnapshot();
        }
        near
    }
}

/// The table side: whether an index entry's TID leads to a row the snapshot sees.
struct Fetch {
    scan: pg_sys::IndexScanDesc,
    slot: *mut pg_sys::TupleTableSlot,
}

impl Fetch {
    /// # Safety
    /// As `near_rows`: `heap` and `index` open and locked, `snapshot` active until [`Fetch::end`],
    /// which must be called before the relations are closed.
    unsafe fn new(heap: pg_sys::Relation, index: pg_sys::Relation, snapshot: pg_sys::Snapshot) -> Fetch {
        // SAFETY: the caller's contract (see # Safety).
        unsafe {
            Fetch {
                scan: crate::compat::begin_index_scan(heap, index, snapshot),
                slot: pg_sys::table_slot_create(heap, std::ptr::null_mut()),
            }
        }
    }

    /// Marks `near` the batch rows of `candidates` whose entry leads to a visible row (the
    /// visible member of its HOT chain, whose fingerprint is the entry's: HOT never changes an
    /// indexed column), and empties `candidates`.
    ///
    /// # Safety
    /// As `near_rows`; no buffer lock held.
    unsafe fn confirm(&mut self, candidates: &mut Vec<(pg_sys::ItemPointerData, u32)>, near: &mut [bool]) {
        candidates.sort_unstable_by_key(|(tid, row)| (tid_order(tid), *row));
        let (mut i, mut fetched) = (0, 0usize);
        while i < candidates.len() {
            let tid = candidates[i].0;
            let same = candidates[i..].iter().take_while(|(t, _)| tid_order(t) == tid_order(&tid)).count();
            let rows = &candidates[i..i + same];
            i += same;
            if rows.iter().all(|&(_, row)| near[row as usize]) {
                continue;
            }
            fetched += 1;
            if fetched % 1024 == 0 {
                pg_sys::check_for_interrupts!();
            }
            // SAFETY: as for this function: `self.scan` is live and no buffer lock is held.
            if unsafe { self.visible(tid) } {
                rows.iter().for_each(|&(_, row)| near[row as usize] = true);
            }
        }
        candidates.clear();
    }

    /// Whether the HOT chain at `tid` has a member the snapshot sees.
    ///
    /// # Safety
    /// `self` must be live (not yet ended), its relations still open and its snapshot active; no
    /// buffer lock held.
    unsafe fn visible(&mut self, tid: pg_sys::ItemPointerData) -> bool {
        // A new chain: index_rescan would clear xs_heap_continue, which index_beginscan leaves
        // as palloc found it, and a stale true skips the chain's root.
        // SAFETY: `self.scan` and `self.slot` are live (see # Safety); a TID scan starts a new HOT
        // chain by setting the TID and clearing xs_heap_continue.
        unsafe {
            (*self.scan).xs_heaptid = tid;
            (*self.scan).xs_heap_continue = false;
            pg_sys::index_fetch_heap(self.scan, self.slot)
        }
    }

    /// Ends the index scan and drops the slot.
    ///
    /// # Safety
    /// As [`Fetch::visible`]; the heap and index must still be open.
    unsafe fn end(self) {
        // SAFETY: `self` is live and its relations open (see # Safety); consuming `self` ends each
        // once.
        unsafe {
            pg_sys::index_endscan(self.scan);
            pg_sys::ExecDropSingleTupleTableSlot(self.slot);
        }
    }
}
