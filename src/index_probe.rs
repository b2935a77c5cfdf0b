//! `simhash_index_probe(indexes, q, k)`: the block-index lookup with the distance checked on
//! the index tuples, for covering block indexes (`(block) INCLUDE (fp)`).
//!
//! A BitmapOr over plain block indexes fetches the heap page of every candidate (every row that
//! shares a probed block value with the query: ~150 per 16-bit probe at 10M rows) just to reject
//! almost all of them. Here each probe is an ordinary B-tree scan that reads `fp` from the index
//! tuple, keeps only the tuples within k bits, and only then fetches the table row, through the
//! index AM's own fetch (which follows HOT chains and applies the snapshot, and under
//! SERIALIZABLE takes the same predicate locks as an index scan). The planner support function
//! puts the result under a TID scan: `ctid = ANY(simhash_index_probe(...))`.
//!
//! Called directly it is a read of the table, so it requires SELECT on the table (or on the
//! columns the indexes cover) and refuses tables whose row-level security applies to the caller.

use pgrx::pg_sys;
use pgrx::prelude::*;
use simhash_core::probe::{self, BlockProbe};

use crate::errors;
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
    fcinfo: pg_sys::FunctionCallInfo,
) -> Vec<Option<pg_sys::ItemPointerData>> {
    let oids: Vec<pg_sys::Oid> = indexes
        .iter()
        .map(|oid| oid.unwrap_or_else(|| errors::invalid_parameter("simhash_index_probe: indexes must not contain NULL")))
        .collect();
    if oids.is_empty() {
        errors::invalid_parameter("simhash_index_probe: indexes must not be empty");
    }
    // Outside a TID scan (in a select list, under NOT) the call is evaluated once per row with
    // the same arguments: answer those from the first call's result, kept with the call site
    // for the rest of this execution (and so under its snapshot).
    // SAFETY: fn_extra belongs to this call site and lives in its fn_mcxt.
    let mut cache = unsafe { pgrx::fcinfo::pg_func_extra(fcinfo, ProbeCache::default) };
    let key = (oids, query.0, k);
    if cache.key.as_ref() != Some(&key) {
        // SAFETY: every relation is opened, checked and closed here; scans end before we return.
        let found = unsafe { probe_indexes(&key.0, query.0, k) };
        cache.result = found.into_iter().map(Some).chain(std::iter::once(None)).collect();
        cache.key = Some(key);
    }
    cache.result.clone()
}

/// The last arguments and answer of one call site of simhash_index_probe.
#[derive(Default)]
struct ProbeCache {
    key: Option<(Vec<pg_sys::Oid>, u64, i32)>,
    result: Vec<Option<pg_sys::ItemPointerData>>,
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
    let probes: Vec<BlockProbe> = probe::plan(query, i64::from(k), oids.len() as i64)
        .unwrap_or_else(|e| errors::invalid_parameter(format!("simhash_index_probe: {e}")));
    let k = k as u32; // checked by plan: 0..=64

    let mut snapshot = pg_sys::GetActiveSnapshot();
    if snapshot.is_null() {
        snapshot = pg_sys::GetTransactionSnapshot();
    }
    let slot = pg_sys::table_slot_create(heap, std::ptr::null_mut());
    let mut found = Vec::new();
    let mut seen = 0u32;
    for block in &probes {
        let scan = crate::compat::begin_index_scan(heap, indexes[block.index as usize], snapshot);
        (*scan).xs_want_itup = true;
        // One scan for all of the block's values, as `block = ANY('{...}')`, in key order.
        let mut values = block.values.clone();
        values.sort_unstable();
        let array = crate::layout::int8_array(&values);
        let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
        pg_sys::ScanKeyEntryInitialize(
            &mut key,
            pg_sys::SK_SEARCHARRAY as i32,
            1,
            pg_sys::BTEqualStrategyNumber as pg_sys::StrategyNumber,
            pg_sys::INT8OID,
            pg_sys::InvalidOid,
            pg_sys::Oid::from(pg_sys::F_INT8EQ),
            pg_sys::Datum::from(array),
        );
        pg_sys::index_rescan(scan, &mut key, 1, std::ptr::null_mut(), 0);
        while !pg_sys::index_getnext_tid(scan, pg_sys::ScanDirection::ForwardScanDirection).is_null() {
            seen = seen.wrapping_add(1);
            if seen % 1024 == 0 {
                pg_sys::check_for_interrupts!();
            }
            if !within(scan, query, k) {
                continue;
            }
            // The row itself: the visible member of the HOT chain the index entry points to.
            while pg_sys::index_fetch_heap(scan, slot) {
                found.push((*slot).tts_tid);
                if !(*scan).xs_heap_continue {
                    break;
                }
            }
        }
        pg_sys::index_endscan(scan);
    }
    pg_sys::ExecDropSingleTupleTableSlot(slot);
    for index in indexes {
        pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
    }
    pg_sys::table_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
    found.sort_by_key(tid_order);
    found.dedup_by_key(|t| tid_order(t));
    found
}

/// Where the fingerprint sits in a covering block index tuple without NULLs: after the 8-byte
/// header (IndexTupleData, MAXALIGNed) and the 8-byte, 8-aligned block value.
/// `open_covering_index` checks the layout that makes this true.
const FP_OFFSET: usize = 16;

/// Whether the index tuple just returned holds a fingerprint within `k` bits of `query`. A tuple
/// with a NULL never does (a NULL fingerprint has NULL blocks, which no probe matches anyway).
unsafe fn within(scan: pg_sys::IndexScanDesc, query: u64, k: u32) -> bool {
    let tuple = (*scan).xs_itup;
    if tuple.is_null() {
        error!("simhash_index_probe: the index did not return its tuple");
    }
    let info = usize::from((*tuple).t_info);
    let (nulls, size) = (pg_sys::INDEX_NULL_MASK as usize, pg_sys::INDEX_SIZE_MASK as usize);
    if info & nulls != 0 || (info & size) < FP_OFFSET + 8 {
        return false;
    }
    let fp = std::ptr::read_unaligned(tuple.cast::<u8>().add(FP_OFFSET).cast::<u64>());
    (fp ^ query).count_ones() <= k
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
/// columns, an int8 key (a block column or the block expression) and an 8-byte by-value second
/// column. What the columns hold (block i of the fingerprint column) the planner has checked
/// when it wrote the call; a hand-written call with other indexes can only miss rows, never crash.
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
        && attrs.iter().all(|a| a.attlen == 8 && a.attbyval && a.attalign as u8 == pg_sys::TYPALIGN_DOUBLE)
        && std::mem::size_of::<pg_sys::IndexTupleData>() == 8;
    if !fits {
        errors::invalid_parameter(format!(
            "simhash_index_probe: index {} is not a covering block index, (block column) INCLUDE (simhash64 column)",
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
