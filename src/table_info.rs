//! What the planner sees of a table's block columns, as SQL: `simhash_block_columns(tbl)`.
//! The index helpers in `sql/index.sql` (`simhash_create_index`, `simhash_drop_index`) read it
//! too, so they, the planner and the user agree on which columns are block columns.

use pgrx::prelude::*;
use pgrx::PgRelation;

use crate::args::{Name, Table};
use crate::ext_objects::ExtOids;
use crate::layout::{self, Reader};

/// Every block column of `tbl`: the column (NULL when an expression index holds the block),
/// the simhash64 column it is computed from, which block of how many it holds, the B-tree index
/// the lookup uses, by name (NULL: none, so that layout is not used), whether that index covers
/// the fingerprint (`INCLUDE (col)`), which lets the lookup check distances without reading the
/// table, for a set column (`simhash64[]`) which element the block is taken from, and whether
/// the index is a permuted one (`_simhash_permute(col, i, m)`, covering by nature).
#[pg_extern(stable, strict, parallel_safe)]
fn simhash_block_columns(
    tbl: Table,
    fcinfo: pg_sys::FunctionCallInfo,
) -> TableIterator<
    'static,
    (
        name!(column_name, Option<String>),
        name!(source_column, String),
        name!(block, i32),
        name!(blocks, i32),
        name!(index, Option<String>),
        name!(covering, bool),
        name!(element, Option<i32>),
        name!(permuted, bool),
    ),
> {
    // SAFETY: PostgreSQL passes a valid fcinfo; catalog reads in a transaction; the relation is
    // opened and closed here.
    let rows = unsafe {
        // This very function is ours: its extension's objects are the ones to look for.
        let Some(oids) = ExtOids::of_member((*(*fcinfo).flinfo).fn_oid) else {
            return TableIterator::new(Vec::new());
        };
        let rel = tbl.as_ptr();
        let columns = layout::block_columns(rel, &oids);
        let desc = (*rel).rd_att;
        let attrs = crate::compat::attributes(desc);
        let name_of = |attnum: i16| {
            let attr = &attrs[attnum as usize - 1];
            std::ffi::CStr::from_ptr(attr.attname.data.as_ptr()).to_string_lossy().into_owned()
        };
        let mut rows: Vec<_> = columns
            .iter()
            .filter(|c| c.key_blocks == 1) // families of keys: simhash_block_keys
            .map(|c| {
                let column = (c.attnum != 0).then(|| c.name.clone());
                let element = c.element.map(|e| e as i32);
                (column, name_of(c.source), c.index as i32, c.count as i32, c.covering.or(c.btree), c.attnum, c.covering.is_some(), element, c.permuted)
            })
            .collect();
        rows.sort_by_key(|r| (r.1.clone(), r.7, r.3, r.2, r.8, r.5));
        rows
    };
    TableIterator::new(rows.into_iter().map(|(a, b, c, d, e, _, covering, element, permuted)| {
        // SAFETY: a catalog lookup of an index found just now (and locked).
        let index = e.map(|oid| unsafe {
            std::ffi::CStr::from_ptr(pg_sys::get_rel_name(oid)).to_string_lossy().into_owned()
        });
        (a, b, c, d, index, covering, element, permuted)
    }))
}

/// Every table of a family of keys of several blocks of `tbl` (`simhash_core::keys`): the
/// simhash64 column it is computed from, the family (keys of `key_blocks` of `blocks` blocks),
/// the blocks this table's key leads with, its place in the family, and its index, by name. A
/// family serves lookups when all C(blocks, key_blocks) tables are there.
#[pg_extern(stable, strict, parallel_safe)]
fn simhash_block_keys(
    tbl: Table,
    fcinfo: pg_sys::FunctionCallInfo,
) -> TableIterator<
    'static,
    (
        name!(source_column, String),
        name!(blocks, i32),
        name!(key_blocks, i32),
        name!(lead, Vec<i32>),
        name!(position, i32),
        name!(index, String),
    ),
> {
    // SAFETY: as simhash_block_columns.
    let rows = unsafe {
        let Some(oids) = ExtOids::of_member((*(*fcinfo).flinfo).fn_oid) else {
            return TableIterator::new(Vec::new());
        };
        let rel = tbl.as_ptr();
        let columns = layout::block_columns(rel, &oids);
        let attrs = crate::compat::attributes((*rel).rd_att);
        let mut rows: Vec<_> = columns
            .iter()
            .filter(|c| c.key_blocks > 1)
            .filter_map(|c| {
                let source = std::ffi::CStr::from_ptr(attrs[c.source as usize - 1].attname.data.as_ptr()).to_string_lossy().into_owned();
                let lead = *simhash_core::keys::leads(c.count, c.key_blocks).get(c.index as usize)?;
                let blocks: Vec<i32> = (0..c.count as i32).filter(|i| lead >> i & 1 == 1).collect();
                let index = std::ffi::CStr::from_ptr(pg_sys::get_rel_name(c.covering?)).to_string_lossy().into_owned();
                Some((source, c.count as i32, c.key_blocks as i32, blocks, c.index as i32, index))
            })
            .collect();
        rows.sort_by(|a, b| (&a.0, a.1, a.2, a.4, &a.5).cmp(&(&b.0, b.1, b.2, b.4, &b.5)));
        rows
    };
    TableIterator::new(rows)
}

/// The number of column `col` of `rel` (a live column, by its exact name).
///
/// # Safety
/// `rel` must be open (any lock) and stay open during the call.
pub(crate) unsafe fn attnum_of(rel: pg_sys::Relation, col: &[u8]) -> Option<i16> {
    // SAFETY: `rel` is open (see # Safety), so its tuple descriptor stays valid while we read it,
    // and every attribute name is a NUL-terminated NameData.
    unsafe {
        let attrs = crate::compat::attributes((*rel).rd_att);
        let index = attrs
            .iter()
            .position(|a| !a.attisdropped && std::ffi::CStr::from_ptr(a.attname.data.as_ptr()).to_bytes() == col)?;
        i16::try_from(index + 1).ok()
    }
}

/// `_simhash_unique_key(tbl, key_column)`: whether a valid unique index of `tbl` on `key_column`
/// alone (not partial) makes the key name one row, which the ETL helpers and routed layouts
/// (sql/routed.sql, `routed::untrusted`) rely on: checked at once (not deferrable: a deferred
/// check lets a transaction hold two rows of a key), in the column's own collation and with its
/// type's default B-tree class, so that rows of different keys are also different under the
/// column's own `=` and `<` (an index under another collation keeps apart keys a
/// nondeterministic collation calls equal; issue 63). False for a column it lacks.
#[pg_extern(stable, strict, parallel_safe, name = "_simhash_unique_key")]
fn simhash_unique_key(tbl: Table, key_column: Name) -> bool {
    // SAFETY: `tbl` is open (AccessShareLock) inside the function's transaction.
    unsafe { attnum_of(tbl.as_ptr(), key_column.bytes()).is_some_and(|attnum| unique_key(tbl.as_ptr(), attnum)) }
}

/// The rule of [`simhash_unique_key`] for column `attnum` of the open table `rel`, from the
/// relcache (no catalog query: a routed lookup checks it each time it is planned).
///
/// # Safety
/// Inside a transaction; `rel` must be an open table and `attnum` one of its columns.
pub(crate) unsafe fn unique_key(rel: pg_sys::Relation, attnum: pg_sys::AttrNumber) -> bool {
    // SAFETY: `rel` is open (see # Safety); each index is opened under AccessShareLock (kept, as
    // PostgreSQL keeps its own) and read through its relcache entry before it is closed; the
    // list is the relcache's copy, and the key arrays hold `indnatts` entries.
    unsafe {
        let relid = (*rel).rd_id;
        let (mut typ, mut typmod, mut collation) = (pg_sys::InvalidOid, -1, pg_sys::InvalidOid);
        pg_sys::get_atttypetypmodcoll(relid, attnum, &mut typ, &mut typmod, &mut collation);
        let default_class = pg_sys::GetDefaultOpClass(typ, pg_sys::BTREE_AM_OID);
        let indexes = pg_sys::RelationGetIndexList(rel);
        let mut unique = false;
        for i in 0..crate::nodes::list_len(indexes) {
            let oid = pg_sys::list_nth_oid(indexes, i as i32);
            let index = pg_sys::index_open(oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
            let form = (*index).rd_index;
            unique = (*form).indisunique
                && (*form).indisvalid
                && (*form).indimmediate
                && (*form).indnkeyatts == 1
                && (*form).indkey.values.as_slice(1)[0] == attnum
                && pg_sys::RelationGetIndexPredicate(index).is_null()
                && *(*index).rd_indcollation == collation
                && default_class != pg_sys::InvalidOid
                && pg_sys::get_index_column_opclass(oid, 1) == default_class;
            pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
            if unique {
                break;
            }
        }
        unique
    }
}

/// `_simhash_set_size(tbl, col)`: how many fingerprints every row of set column `col` holds,
/// when it is generated by `simhash_set(text, b, ...)` with a constant `b`; NULL otherwise.
/// `simhash_create_index` indexes that many elements, and the planner uses the indexes of a set
/// column only when this holds (no row can then have an element they miss).
#[pg_extern(stable, strict, parallel_safe)]
fn _simhash_set_size(tbl: Table, col: Name, fcinfo: pg_sys::FunctionCallInfo) -> Option<i32> {
    // SAFETY: as simhash_block_columns.
    unsafe {
        let oids = ExtOids::of_member((*(*fcinfo).flinfo).fn_oid)?;
        let rel = tbl.as_ptr();
        layout::set_size(rel, attnum_of(rel, col.bytes())?, &oids).map(|b| b as i32)
    }
}

/// `_simhash_layout_to_build(max_k, rows, permuted_ok, blocks)`: the layout
/// `simhash_create_index` builds for lookups up to `max_k` on about `rows` rows
/// (`layouts::layout_to_build`), or with `blocks` given that block count: its block count,
/// whether permuted, and what a lookup at k = max_k costs: B-tree descents, leaf entries read,
/// and the two together in entries (a descent counted as `batch::descent_in_entries`). No row when the layout cannot serve max_k. The
/// create function and `simhash_index_report` both ask here, so they weigh layouts alike.
#[pg_extern(immutable, parallel_safe)]
fn _simhash_layout_to_build(
    max_k: Option<i32>,
    rows: Option<f64>,
    permuted_ok: Option<bool>,
    blocks: default!(Option<i32>, "NULL"),
) -> TableIterator<
    'static,
    (name!(blocks, i32), name!(permuted, bool), name!(descents, i64), name!(entries, f64), name!(cost, f64)),
> {
    let (Some(max_k), Some(rows), Some(permuted_ok)) = (max_k, rows, permuted_ok) else {
        return TableIterator::new(None.into_iter());
    };
    let rows = if rows.is_nan() { 0.0 } else { rows.max(0.0) };
    let chosen = u32::try_from(max_k).ok().and_then(|k| match blocks {
        None => simhash_core::layouts::layout_to_build(k, rows, permuted_ok),
        Some(m) => simhash_core::layouts::layout_of(k, u32::try_from(m).ok()?, rows, permuted_ok),
    });
    TableIterator::new(
        chosen
            .into_iter()
            .map(|b| (b.blocks as i32, b.permuted, b.cost.probes as i64, b.cost.candidates, b.entries)),
    )
}

/// `_simhash_keyed_to_build(max_k, rows, blocks, key_blocks)`: the family of keys of several
/// blocks (`simhash_core::keys`) worth naming beside the permuted block layout
/// `simhash_create_index` builds for max_k on about `rows` rows (`layouts::keyed_alternative`:
/// the best family, when it reads at most half the entries), or with `blocks` and `key_blocks`
/// given that family:
/// its blocks, key blocks, tables (indexes), B-tree descents, leaf entries read, the two together
/// in entries, and how many times cheaper a lookup through it is than through the permuted block
/// layout `simhash_create_index` builds there, each index weighed (`layouts::family_pays`; below
/// 1 the blocks are cheaper). No row when it cannot serve max_k. `simhash_create_index` and
/// `simhash_index_report` ask here.
#[pg_extern(immutable, parallel_safe)]
fn _simhash_keyed_to_build(
    max_k: Option<i32>,
    rows: Option<f64>,
    blocks: default!(Option<i32>, "NULL"),
    key_blocks: default!(Option<i32>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(blocks, i32),
        name!(key_blocks, i32),
        name!(tables, i32),
        name!(descents, i64),
        name!(entries, f64),
        name!(cost, f64),
        name!(pays, f64),
    ),
> {
    let (Some(max_k), Some(rows)) = (max_k, rows) else {
        return TableIterator::new(None.into_iter());
    };
    let rows = if rows.is_nan() { 0.0 } else { rows.max(0.0) };
    let chosen = u32::try_from(max_k).ok().and_then(|k| match (blocks, key_blocks) {
        (None, None) => {
            let chosen = simhash_core::layouts::layout_to_build(k, rows, true)?;
            simhash_core::layouts::keyed_alternative(k, rows, &chosen)
        }
        (Some(m), Some(c)) => simhash_core::layouts::keyed_of(k, u32::try_from(m).ok()?, u32::try_from(c).ok()?, rows),
        _ => None,
    });
    TableIterator::new(chosen.into_iter().filter_map(move |b| {
        let tables = simhash_core::keys::tables(b.blocks, b.key_blocks)?;
        // Against the permuted layout simhash_create_index would build, indexes weighed.
        let blocks = simhash_core::layouts::layout_to_build(u32::try_from(max_k).ok()?, rows, true)?;
        let pays = simhash_core::layouts::family_pays(b.entries, tables, blocks.entries, blocks.blocks);
        Some((b.blocks as i32, b.key_blocks as i32, tables as i32, b.cost.probes as i64, b.cost.candidates, b.entries, pays))
    }))
}

/// Bytes a layout of `blocks` blocks of each of `fingerprints` fingerprints a row takes on
/// `rows` rows as `simhash_create_index` builds it (`simhash_core::layouts::layout_bytes`):
/// `holding` is `permuted`, `covering columns`, `columns`, `expressions` or `covering
/// expressions`; another, or blocks or fingerprints below 1, is SQLSTATE 22023.
#[pg_extern(immutable, strict, parallel_safe)]
fn _simhash_layout_bytes(rows: f64, blocks: i32, fingerprints: i32, holding: &str) -> f64 {
    use simhash_core::layouts::Holding;
    let holding = match holding {
        "permuted" => Holding::Permuted,
        "covering columns" => Holding::CoveringColumns,
        "columns" => Holding::Columns,
        "expressions" => Holding::Expressions { covering: false },
        "covering expressions" => Holding::Expressions { covering: true },
        other => crate::errors::invalid_parameter(format!(
            "holding must be permuted, covering columns, columns, expressions or covering expressions, got {other:?}"
        )),
    };
    let (Ok(blocks @ 1..), Ok(fingerprints @ 1..)) = (u32::try_from(blocks), u32::try_from(fingerprints)) else {
        crate::errors::invalid_parameter(format!("blocks and fingerprints must be 1 or more, got {blocks} and {fingerprints}"));
    };
    let rows = if rows.is_nan() { 0.0 } else { rows };
    simhash_core::layouts::layout_bytes(rows, blocks, fingerprints, holding)
}

/// What one lookup within `k` bits of column `col` of plain table `tbl` costs through its
/// cheapest fully indexed block layout, in index entries read (a descent, or a heap fetch,
/// counts as `descent_in_entries`); NULL without one (or when it cannot serve `k`).
/// `simhash_ingest` and `simhash_pairs_between` weigh it against hash joins.
#[pg_extern(stable, strict, parallel_safe)]
fn _simhash_lookup_cost(tbl: Table, col: Name, k: i32, fcinfo: pg_sys::FunctionCallInfo) -> Option<f64> {
    // SAFETY: as simhash_block_columns.
    unsafe {
        let oids = ExtOids::of_member((*(*fcinfo).flinfo).fn_oid)?;
        let rel = tbl.as_ptr();
        let columns = layout::block_columns(rel, &oids);
        lookup_cost(rel, &layout::layouts(&columns, attnum_of(rel, col.bytes())?, None), k)
    }
}

/// `_simhash_lookup_cost` for open `rel` and the `layouts` of one of its columns; None also for
/// a table that reads no row by ctid, where no lookup uses the block indexes.
///
/// # Safety
/// `rel` must be open.
pub(crate) unsafe fn lookup_cost(rel: pg_sys::Relation, layouts: &[layout::Layout], k: i32) -> Option<f64> {
    // SAFETY: `rel` is open (see # Safety).
    if !unsafe { reads_rows_by_tid(rel) } {
        return None;
    }
    // SAFETY: as above.
    let rows = unsafe { rows_estimate(rel) };
    let (chosen, _) = layout::best_layout(layouts.to_vec(), k, rows, Reader::Probe)?;
    let cost = simhash_core::probe::lookup_cost(i64::from(k), i64::from(chosen.count), rows)?;
    // A covering (or permuted) index is read by the probe, each probed value from its leaf page
    // through the leaf map (layouts::probe_descent_in_entries: 150 entries at any size, where a
    // descent grows with the tree: at 100M rows the grown descent made 100,000 lookups look
    // 3.5x dearer than they were, 8.0 s against the pass's 12.0 s it chose), a candidate an
    // entry read on the leaf page. A plain index is read by a bitmap scan: a descent per probed
    // value and a heap fetch (about a descent) per candidate.
    let descent = simhash_core::batch::descent_in_entries(rows);
    let (per_probe, per_candidate) = if chosen.covering.is_some() {
        (simhash_core::layouts::probe_descent_in_entries(rows), 1.0)
    } else {
        (descent, descent)
    };
    Some(cost.probes as f64 * per_probe + cost.candidates * per_candidate)
}

/// Whether `rel` stores its rows in the heap, where a row is read back by its ctid: the
/// covering probe runs as a TID scan. Other access methods (Citus's columnar) refuse TID scans
/// and have no bitmap scans, so no lookup there uses the block indexes: it scans the table.
///
/// # Safety
/// `rel` must be open (any lock).
pub(crate) unsafe fn reads_rows_by_tid(rel: pg_sys::Relation) -> bool {
    // SAFETY: `rel` is open (see # Safety): its pg_class row is valid.
    unsafe { (*(*rel).rd_rel).relam == pg_sys::HEAP_TABLE_AM_OID }
}

/// How many rows the planner would expect in `rel`: PostgreSQL's own estimate
/// (`estimate_rel_size`, what the planner uses for every table): `reltuples` scaled to the
/// table's current size, or before the first VACUUM or ANALYZE an estimate from its pages. The
/// one definition of "how big is this table" for the planner rewrite (`planner.rs`) and the
/// helpers in SQL (`_simhash_rows_estimate`, which sums a partitioned table's leaves): a freshly
/// loaded table is neither taken for empty nor for a million rows, and a table analysed small
/// and loaded since is taken at its new size.
///
/// # Safety
/// `rel` must be open (any lock).
pub(crate) unsafe fn rows_estimate(rel: pg_sys::Relation) -> f64 {
    // SAFETY: `rel` is open (see # Safety): its relcache entry and pg_class row are valid, and
    // estimate_rel_size only reads the relation and writes the three out-parameters.
    unsafe {
        let form = &*(*rel).rd_rel;
        let relkind = form.relkind as u8;
        if relkind != pg_sys::RELKIND_RELATION && relkind != pg_sys::RELKIND_MATVIEW {
            return f64::from(form.reltuples).max(0.0);
        }
        let mut pages: pg_sys::BlockNumber = 0;
        let mut tuples = 0.0f64;
        let mut all_visible = 0.0f64;
        pg_sys::estimate_rel_size(rel, std::ptr::null_mut(), &mut pages, &mut tuples, &mut all_visible);
        tuples.max(0.0)
    }
}

/// `rows_estimate` for SQL, summed over the leaves of a partitioned table or of a table with
/// inheritance children: the helpers of `sql/etl.sql` and `sql/index.sql` size their work by it.
/// Each table under `tbl` counts once, found by a walk with a set of the tables seen (a
/// recursion per path took 2^60 steps over 60 levels of multiple inheritance, without a point
/// where it could be cancelled), and each step lets the statement be cancelled.
#[pg_extern(stable, strict, parallel_safe)]
fn _simhash_rows_estimate(tbl: Table) -> f64 {
    let mut seen = std::collections::HashSet::from([tbl.oid()]);
    let mut total = 0.0;
    // One table open at a time: a parent may have many thousands of partitions.
    let mut todo = Vec::new();
    let mut next = Some(tbl.into_inner());
    while let Some(rel) = next.take() {
        pgrx::check_for_interrupts!();
        // SAFETY: PgRelation holds the table open, locked: its pg_class row is valid.
        let (relkind, has_children) = unsafe { ((*(*rel.as_ptr()).rd_rel).relkind as u8, (*(*rel.as_ptr()).rd_rel).relhassubclass) };
        // A partitioned table has no rows of its own; an inheritance parent does.
        if relkind != pg_sys::RELKIND_PARTITIONED_TABLE {
            // SAFETY: as above.
            total += unsafe { rows_estimate(rel.as_ptr()) };
        }
        if relkind == pg_sys::RELKIND_PARTITIONED_TABLE || has_children {
            // SAFETY: a SQL function runs inside a transaction, as inheritance_children requires.
            todo.extend(unsafe { inheritance_children(rel.oid()) }.into_iter().filter(|&child| seen.insert(child)));
        }
        drop(rel);
        while next.is_none() {
            let Some(child) = todo.pop() else { break };
            // SAFETY: opened here and closed when dropped, locked as the parent is; a child
            // dropped meanwhile is skipped.
            let opened = unsafe { pg_sys::try_relation_open(child, pg_sys::AccessShareLock as pg_sys::LOCKMODE) };
            if !opened.is_null() {
                // SAFETY: `opened` is open; PgRelation closes it when dropped (the lock stays to
                // the transaction's end, as PostgreSQL keeps it).
                next = Some(unsafe { PgRelation::from_pg_owned(opened) });
            }
        }
    }
    total
}

/// pg_inherits and its index on inhparent (fixed OIDs; pgrx binds neither `find_all_inheritors`
/// nor these names).
const INHERITS_RELATION: u32 = 2611;
const INHERITS_PARENT_INDEX: u32 = 2187;
const INHERITS_PARENT_ATTNUM: pg_sys::AttrNumber = 2;

/// The direct children of `parent` in pg_inherits (partitions or inheritance children), read
/// through the catalog's index: no SPI, so that it also works where a statement runs in
/// parallel mode.
///
/// # Safety
/// Must run inside a transaction (it opens pg_inherits and scans it through its index).
unsafe fn inheritance_children(parent: pg_sys::Oid) -> Vec<pg_sys::Oid> {
    #[repr(C)]
    struct InheritsRow {
        inhrelid: pg_sys::Oid,
        inhparent: pg_sys::Oid,
    }
    // SAFETY: inside a transaction (see # Safety): pg_inherits is opened, scanned and closed here
    // under AccessShareLock, `key` outlives the scan, and each tuple the scan returns is a
    // pg_inherits row whose first two columns are the fixed-width oids of InheritsRow.
    unsafe {
        let catalog = pg_sys::table_open(pg_sys::Oid::from(INHERITS_RELATION), pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let mut key = pg_sys::ScanKeyData::default();
        pg_sys::ScanKeyInit(
            &mut key,
            INHERITS_PARENT_ATTNUM,
            pg_sys::BTEqualStrategyNumber as pg_sys::StrategyNumber,
            pg_sys::Oid::from(pg_sys::F_OIDEQ),
            pg_sys::Datum::from(parent),
        );
        let scan = pg_sys::systable_beginscan(
            catalog,
            pg_sys::Oid::from(INHERITS_PARENT_INDEX),
            true,
            std::ptr::null_mut(),
            1,
            &mut key,
        );
        let mut children = Vec::new();
        loop {
            let tuple = pg_sys::systable_getnext(scan);
            if tuple.is_null() {
                break;
            }
            let row = pg_sys::heap_tuple_get_struct::<InheritsRow>(tuple);
            if !row.is_null() && (*row).inhparent == parent {
                children.push((*row).inhrelid);
            }
        }
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(catalog, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        children
    }
}
