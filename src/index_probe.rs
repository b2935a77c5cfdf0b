//! `simhash_index_probe(indexes, q, k)`: the block-index lookup with the distance checked on
//! the index tuples, for covering block indexes (`(block) INCLUDE (fp)`).
//!
//! A BitmapOr over plain block indexes fetches the heap page of every candidate (every row that
//! shares a probed block value with the query: ~150 per 16-bit probe at 10M rows) just to reject
//! almost all of them. Here each probed value is read from the index's leaf pages by
//! `leaf_scan` (nbtree's descent, then the entries themselves, `fp` checked on each), and only
//! the TIDs within k bits are fetched from the table, through the index AM's own heap fetch
//! (which follows HOT chains and applies the snapshot, and under SERIALIZABLE takes the same
//! predicate locks as an index scan). The planner support function puts the result under a TID
//! scan: `ctid = ANY(simhash_index_probe(...))`.
//!
//! A `k` beyond what the blocks serve with at most `probe::MAX_PROBES` probed values (possible
//! when k is a parameter known only at run time) reads the whole first index instead, checking
//! every entry: as exact, and about as slow as a sequential scan.
//!
//! Called directly it is a read of the table, so it requires SELECT on the table (or on the
//! columns the indexes cover) and refuses tables whose row-level security applies to the caller.

use pgrx::pg_sys;
use pgrx::prelude::*;
use simhash_core::blocks::Block;
use simhash_core::probe::{self, BlockProbe, PlanError};

use crate::errors;
use crate::leaf_scan::LeafScan;
use crate::fingerprint::SimHash64;

/// The TIDs of the visible rows within `k` bits of `query`, found through the covering block
/// indexes `indexes` (index i on block i of `cardinality(indexes)` blocks), sorted, then one
/// NULL: so that `ctid = ANY(...)` is NULL, not false, for a row it did not find, and the
/// rewritten call keeps simhash_near's own three-valued answer everywhere (`NOT simhash_near(…)`
/// on a NULL fingerprint is NULL). TID scans skip the NULL. Only the
/// blocks `probe::plan` names are probed (for k < m, the first k + 1).
#[pg_extern(
    sql = r#"
CREATE FUNCTION simhash_index_probe(indexes regclass[], query simhash64, k int4) RETURNS tid[]
    STABLE STRICT PARALLEL SAFE COST 1000
    LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
"#,
    requires = ["simhash64_type"]
)]
fn simhash_index_probe(
    indexes: Array<pg_sys::Oid>,
    query: SimHash64,
    k: i32,
) -> Vec<Option<pg_sys::ItemPointerData>> {
    let oids: Vec<pg_sys::Oid> = indexes
        .iter()
        .map(|oid| oid.unwrap_or_else(|| errors::invalid_parameter("simhash_index_probe: indexes must not contain NULL")))
        .collect();
    if oids.is_empty() {
        errors::invalid_parameter("simhash_index_probe: indexes must not be empty");
    }
    // Evaluated once per row (in a select list, under NOT), the same arguments under the same
    // snapshot find the last answer in LAST_PROBE; the privilege checks run every time.
    // SAFETY: every relation is opened, checked and closed here; scans end before we return.
    let found = unsafe { probe_indexes(&oids, query.0, k) };
    found.into_iter().map(Some).chain(std::iter::once(None)).collect()
}

/// The last probe this backend ran and what it saw. A plan made for constant arguments (a
/// literal, or a parameter bound by a driver: a custom plan) has the planner run the probe once
/// to estimate its rows (`ctid = ANY(...)` is estimated from the array's value), then the
/// executor runs it again: twice the work for the same answer. The executor's call takes the
/// planner's answer when it would see exactly the same rows: same arguments, same user, same
/// transaction, subtransaction and command, and a snapshot with the same contents (no
/// transaction finished in between). Anything else probes afresh.
struct LastProbe {
    key: (Vec<pg_sys::Oid>, u64, u32),
    seen: Vec<u64>,
    result: Vec<pg_sys::ItemPointerData>,
}

thread_local! {
    static LAST_PROBE: std::cell::RefCell<Option<LastProbe>> = const { std::cell::RefCell::new(None) };
}

/// What decides which rows a probe finds, besides its arguments: the user (privileges), the
/// transaction and command (its own changes) and the snapshot's contents (everyone else's).
unsafe fn what_a_probe_sees(snapshot: pg_sys::Snapshot) -> Vec<u64> {
    let s = &*snapshot;
    let mut seen = vec![
        u64::from(pg_sys::GetUserId().to_u32()),
        u64::from(crate::compat::local_transaction_id()),
        u64::from(pg_sys::GetCurrentSubTransactionId()),
        u64::from(s.curcid),
        u64::from(s.xmin.into_inner()),
        u64::from(s.xmax.into_inner()),
        u64::from(s.suboverflowed),
        u64::from(s.takenDuringRecovery),
        u64::from(s.xcnt),
    ];
    if !s.xip.is_null() {
        seen.extend(std::slice::from_raw_parts(s.xip, s.xcnt as usize).iter().map(|x| u64::from(x.into_inner())));
    }
    let subxcnt = usize::try_from(s.subxcnt).unwrap_or(0);
    seen.push(subxcnt as u64);
    if !s.subxip.is_null() {
        seen.extend(std::slice::from_raw_parts(s.subxip, subxcnt).iter().map(|x| u64::from(x.into_inner())));
    }
    seen
}

unsafe fn probe_indexes(oids: &[pg_sys::Oid], query: u64, k: i32) -> Vec<pg_sys::ItemPointerData> {
    let heap_oid = pg_sys::IndexGetRelation(oids[0], true);
    if heap_oid == pg_sys::InvalidOid {
        errors::invalid_parameter(format!("simhash_index_probe: {} is not an index", relation_name(oids[0])));
    }
    let heap = pg_sys::table_open(heap_oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    let indexes: Vec<pg_sys::Relation> = oids.iter().map(|&oid| open_index_of(oid, heap_oid)).collect();
    // Privileges first: a caller who may not read the table learns nothing about its indexes.
    check_can_read(heap_oid, &indexes);
    indexes.iter().for_each(|&index| check_covering(index));
    // A k the blocks cannot serve with at most MAX_PROBES probes (a generic plan's `$2` can be
    // anything) is answered by reading all of the first index: slower, never wrong.
    let lookup = match probe::plan(query, i64::from(k), oids.len() as i64) {
        Ok(probes) => Lookup::Probes(probes),
        Err(PlanError::TooManyProbes { .. }) => Lookup::WholeIndex,
        Err(PlanError::Threshold(e)) => errors::invalid_parameter(e), // as simhash_near says it
        Err(e) => errors::invalid_parameter(format!("simhash_index_probe: {e}")),
    };
    let k = k as u32; // checked by plan: 0..=64

    // Without a statement snapshot, the transaction's for the probe's duration, so that this
    // backend's xmin holds while it reads.
    let pushed = !pg_sys::ActiveSnapshotSet();
    if pushed {
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
    }
    let snapshot = pg_sys::GetActiveSnapshot();
    if !matches!((*snapshot).snapshot_type, pg_sys::SnapshotType::SNAPSHOT_MVCC) {
        errors::feature_not_supported("simhash_index_probe: needs an MVCC snapshot");
    }
    let key = (oids.to_vec(), query, k);
    let seen = what_a_probe_sees(snapshot);
    let reused = LAST_PROBE.with(|last| {
        last.borrow().as_ref().filter(|l| l.key == key && l.seen == seen).map(|l| l.result.clone())
    });
    let found = match reused {
        Some(found) => found,
        None => {
            let found = find(heap, &indexes, &lookup, query, k, snapshot);
            LAST_PROBE.with(|last| *last.borrow_mut() = Some(LastProbe { key, seen, result: found.clone() }));
            found
        }
    };
    for index in indexes {
        pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
    }
    pg_sys::table_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
    if pushed {
        pg_sys::PopActiveSnapshot();
    }
    found
}

/// How the index entries within k are found.
enum Lookup {
    /// Block values to look up, block by block (`probe::plan`).
    Probes(Vec<BlockProbe>),
    /// Every entry of the first index, its block values read in ranges.
    WholeIndex,
}

/// Ranges a whole-index read is cut into: between them no buffer lock is held, so a cancel
/// is served within one range's worth of leaf pages.
const WHOLE_INDEX_RANGES: u64 = 1024;

/// The visible rows within `k` bits of `query`: the index entries within k bits, block by
/// block, each block's values in key order; then the rows themselves, sorted, each once.
unsafe fn find(
    heap: pg_sys::Relation,
    indexes: &[pg_sys::Relation],
    lookup: &Lookup,
    query: u64,
    k: u32,
    snapshot: pg_sys::Snapshot,
) -> Vec<pg_sys::ItemPointerData> {
    let mut candidates = Vec::new();
    match lookup {
        Lookup::Probes(probes) => {
            for block in probes {
                let mut scan = LeafScan::new(heap, indexes[block.index as usize], snapshot);
                let mut values: Vec<i64> = block.values.iter().map(|&v| v as i64).collect();
                values.sort_unstable();
                scan.entries(&values, query, k, &mut candidates);
            }
        }
        Lookup::WholeIndex => {
            // Block 0 of m holds values 0 .. 2^width - 1 (never negative; NULL keys, of NULL
            // fingerprints, sort last and never match).
            let width = Block::new(0, indexes.len() as i64).map_or(32, |b| b.width);
            let values = 1u64 << width;
            let step = values.div_ceil(WHOLE_INDEX_RANGES).max(1);
            let mut scan = LeafScan::new(heap, indexes[0], snapshot);
            let mut low = 0u64;
            while low < values {
                let high = (low + step - 1).min(values - 1);
                scan.range(low as i64, high as i64, query, k, &mut candidates);
                low += step;
            }
        }
    }
    candidates.sort_by_key(tid_order);
    candidates.dedup_by_key(|t| tid_order(t));
    // The rows themselves: the visible member of the HOT chain each entry points to, through
    // the index AM's heap fetch (snapshot, HOT chains, predicate locks on the tuples).
    let fetch = crate::compat::begin_index_scan(heap, indexes[0], snapshot);
    let slot = pg_sys::table_slot_create(heap, std::ptr::null_mut());
    let mut found = Vec::new();
    for (n, tid) in candidates.into_iter().enumerate() {
        if n % 1024 == 1023 {
            pg_sys::check_for_interrupts!();
        }
        // A new chain: index_rescan would clear xs_heap_continue, which index_beginscan leaves
        // as palloc found it, and a stale true skips the chain's root.
        (*fetch).xs_heaptid = tid;
        (*fetch).xs_heap_continue = false;
        while pg_sys::index_fetch_heap(fetch, slot) {
            found.push((*slot).tts_tid);
            if !(*fetch).xs_heap_continue {
                break;
            }
        }
    }
    pg_sys::index_endscan(fetch);
    pg_sys::ExecDropSingleTupleTableSlot(slot);
    found.sort_by_key(tid_order);
    found.dedup_by_key(|t| tid_order(t));
    found
}

/// Opens `oid`, which must be an index of `heap`.
unsafe fn open_index_of(oid: pg_sys::Oid, heap: pg_sys::Oid) -> pg_sys::Relation {
    if pg_sys::IndexGetRelation(oid, true) != heap {
        errors::invalid_parameter(format!(
            "simhash_index_probe: {} is not an index of the same table as {}",
            relation_name(oid),
            relation_name(heap)
        ));
    }
    pg_sys::index_open(oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE)
}

/// Checks that `index` is a covering block index: a valid, non-partial B-tree with exactly two
/// columns, an int8 key (a block column or the block expression) in ascending order and an
/// 8-byte by-value second column, which `leaf_scan` reads. What the columns hold (block i of the fingerprint column) the planner has checked
/// when it wrote the call; a hand-written call with other indexes gets wrong rows, never a crash
/// (and reads nothing its caller may not). An index made over broken HOT chains
/// (`indcheckxmin`) may lack entries older snapshots need, so it is never read here.
unsafe fn check_covering(index: pg_sys::Relation) {
    let form = (*index).rd_index;
    let desc = (*index).rd_att;
    let attrs = crate::compat::attributes(desc);
    let whole = pg_sys::heap_attisnull((*index).rd_indextuple, pg_sys::Anum_pg_index_indpred as i32, std::ptr::null_mut());
    let fits = (*(*index).rd_rel).relkind as u8 == pg_sys::RELKIND_INDEX // not a partitioned index
        && (*(*index).rd_rel).relam == pg_sys::BTREE_AM_OID
        && (*form).indisvalid
        && whole
        && attrs.len() == 2
        && attrs[0].atttypid == pg_sys::INT8OID
        && crate::leaf_scan::walkable(index)
        && !(*form).indcheckxmin
        && attrs.iter().all(|a| a.attlen == 8 && a.attbyval && a.attalign as u8 == pg_sys::TYPALIGN_DOUBLE)
        && std::mem::size_of::<pg_sys::IndexTupleData>() == 8;
    if !fits {
        errors::invalid_parameter(format!(
            "simhash_index_probe: index {} is not a covering block index, (block column) INCLUDE (simhash64 column), ascending",
            relation_name((*index).rd_id)
        ));
    }
}

/// SELECT on the table, or on every column the indexes hold; and no row-level security in the
/// way (the probe would see rows the policies hide).
unsafe fn check_can_read(heap: pg_sys::Oid, indexes: &[pg_sys::Relation]) {
    let user = pg_sys::GetUserId();
    let name = || relation_name(heap);
    let table_ok = pg_sys::pg_class_aclcheck(heap, user, pg_sys::ACL_SELECT as pg_sys::AclMode)
        == pg_sys::AclResult::ACLCHECK_OK;
    if !table_ok {
        let columns_ok = indexes.iter().all(|&index| {
            table_columns(index).into_iter().all(|attnum| {
                pg_sys::pg_attribute_aclcheck(heap, attnum, user, pg_sys::ACL_SELECT as pg_sys::AclMode)
                    == pg_sys::AclResult::ACLCHECK_OK
            })
        });
        if !columns_ok {
            errors::insufficient_privilege(format!("permission denied for table {}", name()));
        }
    }
    if pg_sys::check_enable_rls(heap, pg_sys::InvalidOid, false) == pg_sys::CheckEnableRlsResult::RLS_ENABLED as i32 {
        errors::insufficient_privilege(format!(
            "simhash_index_probe: row-level security applies to table {}; use simhash_near, which honours it",
            name()
        ));
    }
}

/// The table columns an index reads: its plain key and INCLUDE columns, and those its
/// expressions use (an expression column's attnum is 0, which names no column).
unsafe fn table_columns(index: pg_sys::Relation) -> Vec<pg_sys::AttrNumber> {
    let form = (*index).rd_index;
    let mut columns: Vec<pg_sys::AttrNumber> =
        (*form).indkey.values.as_slice((*form).indnatts as usize).iter().copied().filter(|&a| a != 0).collect();
    let expressions = pg_sys::RelationGetIndexExpressions(index);
    if !expressions.is_null() {
        let mut used: *mut pg_sys::Bitmapset = std::ptr::null_mut();
        pg_sys::pull_varattnos(expressions.cast(), 1, &mut used);
        let mut member = -1;
        loop {
            member = pg_sys::bms_next_member(used, member);
            if member < 0 {
                break;
            }
            columns.push((member + pg_sys::FirstLowInvalidHeapAttributeNumber) as pg_sys::AttrNumber);
        }
    }
    columns
}

/// A relation's name as PostgreSQL prints it in messages (quoted when needed), or its OID when
/// it does not exist.
unsafe fn relation_name(oid: pg_sys::Oid) -> String {
    let name = pg_sys::get_rel_name(oid);
    if name.is_null() {
        return format!("relation with OID {}", oid.to_u32());
    }
    std::ffi::CStr::from_ptr(pg_sys::quote_identifier(name)).to_string_lossy().into_owned()
}

fn tid_order(tid: &pg_sys::ItemPointerData) -> (u32, u16) {
    let block = (u32::from(tid.ip_blkid.bi_hi) << 16) | u32::from(tid.ip_blkid.bi_lo);
    (block, tid.ip_posid)
}
