//! What the planner sees of a table's block columns, as SQL: `simhash_block_columns(tbl)`.
//! The index helpers in `sql/index.sql` (`simhash_create_index`, `simhash_drop_index`) read it
//! too, so they, the planner and the user agree on which columns are block columns.

use pgrx::prelude::*;
use pgrx::PgRelation;

use crate::ext_objects::ExtOids;
use crate::layout;

/// Every block column of `tbl`: the column (NULL when an expression index holds the block),
/// the simhash64 column it is computed from, which block of how many it holds, the B-tree index the lookup uses, by name (NULL: none, so that
/// layout is not used), and whether that index covers the fingerprint (`INCLUDE (col)`), which
/// lets the lookup check distances without reading the table.
#[pg_extern(stable, strict, parallel_safe)]
fn simhash_block_columns(
    tbl: PgRelation,
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
            .map(|c| {
                let column = (c.attnum != 0).then(|| c.name.clone());
                (column, name_of(c.source), c.index as i32, c.count as i32, c.covering.or(c.btree), c.attnum, c.covering.is_some())
            })
            .collect();
        rows.sort_by_key(|r| (r.1.clone(), r.3, r.2, r.5));
        rows
    };
    TableIterator::new(rows.into_iter().map(|(a, b, c, d, e, _, covering)| {
        // SAFETY: a catalog lookup of an index found just now (and locked).
        let index = e.map(|oid| unsafe {
            std::ffi::CStr::from_ptr(pg_sys::get_rel_name(oid)).to_string_lossy().into_owned()
        });
        (a, b, c, d, index, covering)
    }))
}
