//! Finding a table's block columns: STORED generated columns whose expression is
//! `simhash_block(col, i, m)` with constant `i` and `m`, and the B-tree indexes that lead with
//! them, covering ones (`(block) INCLUDE (col)`) apart. A B-tree index whose first key is that
//! expression itself counts as a block too (attnum 0, as in pg_index.indkey): PostgreSQL does
//! not let a generated column use another one, so when `col` is itself generated (from the
//! text, say) its blocks can only live in expression indexes.
//!
//! The planner support function and `simhash_block_columns` both read this, so a layout made by
//! `simhash_create_index` and one written by hand with plain DDL are found the same way. The
//! expression, not the column name, is what counts: a rename changes nothing, and a column that
//! merely looks like a block column (a plain int8) is never trusted.

use std::collections::HashMap;
use std::ffi::CStr;

use pgrx::pg_sys;
use simhash_core::blocks::Block;
use simhash_core::probe;

use crate::ext_objects::ExtOids;
use crate::nodes::{cast, int4_value, list_len, list_nth};

/// One block column: `attnum` holds `simhash_block(source, index, count)`; attnum 0 when the
/// block is an index expression instead (then `name` is the index's).
#[derive(Debug, Clone)]
pub struct BlockColumn {
    pub attnum: i16,
    pub name: String,
    pub source: i16,
    pub index: u32,
    pub count: u32,
    /// A valid, non-partial B-tree index whose first key column is this one.
    pub btree: Option<pg_sys::Oid>,
    /// A valid, non-partial B-tree index on exactly (this column) INCLUDE or plus (source),
    /// ascending in the integer family: the lookup reads the distance off its leaf pages
    /// without visiting the table.
    pub covering: Option<pg_sys::Oid>,
}

/// A complete, fully indexed set of block columns of one source column: `columns[i]` holds
/// block i of `count` (0: an expression index holds it); `covering[i]`, when every block has
/// one, its covering index.
#[derive(Debug, Clone)]
pub struct Layout {
    pub count: u32,
    pub columns: Vec<i16>,
    pub covering: Option<Vec<pg_sys::Oid>>,
}

/// Every block column of `rel`, with its index when it has one.
///
/// # Safety
/// `rel` must be an open relation.
pub unsafe fn block_columns(rel: pg_sys::Relation, oids: &ExtOids) -> Vec<BlockColumn> {
    let mut found = generated_blocks(rel, oids);
    attach_indexes(rel, oids, &mut found);
    found
}

/// The STORED generated columns that hold blocks, without their indexes.
unsafe fn generated_blocks(rel: pg_sys::Relation, oids: &ExtOids) -> Vec<BlockColumn> {
    let desc = (*rel).rd_att;
    let constr = (*desc).constr;
    if constr.is_null() || (*constr).num_defval == 0 || !(*constr).has_generated_stored {
        return Vec::new();
    }
    let attrs = crate::compat::attributes(desc);
    let defaults = std::slice::from_raw_parts((*constr).defval, usize::from((*constr).num_defval));
    let mut found = Vec::new();
    for default in defaults {
        let Some(attr) = usize::try_from(default.adnum - 1).ok().and_then(|i| attrs.get(i)) else {
            continue;
        };
        if attr.attisdropped || attr.attgenerated as u8 != pg_sys::ATTRIBUTE_GENERATED_STORED {
            continue;
        }
        if attr.atttypid != pg_sys::INT8OID || default.adbin.is_null() {
            continue;
        }
        let expr = pg_sys::stringToNode(default.adbin).cast::<pg_sys::Node>();
        if let Some((source, index, count)) = block_expression(expr, oids) {
            found.push(BlockColumn {
                attnum: default.adnum,
                name: CStr::from_ptr(attr.attname.data.as_ptr()).to_string_lossy().into_owned(),
                source,
                index,
                count,
                btree: None,
                covering: None,
            });
        }
    }
    found
}

/// `(source attnum, i, m)` when `expr` is exactly `simhash_block(<column>, <i>, <m>)` with a
/// valid constant block.
unsafe fn block_expression(expr: *mut pg_sys::Node, oids: &ExtOids) -> Option<(i16, u32, u32)> {
    let call = cast::<pg_sys::FuncExpr>(expr, pg_sys::NodeTag::T_FuncExpr)?;
    if (*call).funcid != oids.block_fn || list_len((*call).args) != 3 {
        return None;
    }
    let var = cast::<pg_sys::Var>(list_nth((*call).args, 0), pg_sys::NodeTag::T_Var)?;
    let index = int4_value(list_nth((*call).args, 1))?;
    let count = int4_value(list_nth((*call).args, 2))?;
    if (*var).varlevelsup != 0 || (*var).varattno <= 0 {
        return None;
    }
    Block::new(i64::from(index), i64::from(count)).ok()?;
    Some(((*var).varattno, index as u32, count as u32))
}

/// Gives each block column its indexes, and adds the blocks that expression indexes hold.
unsafe fn attach_indexes(rel: pg_sys::Relation, oids: &ExtOids, columns: &mut Vec<BlockColumn>) {
    let list = pg_sys::RelationGetIndexList(rel);
    for n in 0..list_len(list) {
        let index_oid = pg_sys::list_nth_oid(list, n as i32);
        let index = pg_sys::index_open(index_oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let form = (*index).rd_index;
        let no_predicate =
            pg_sys::heap_attisnull((*index).rd_indextuple, pg_sys::Anum_pg_index_indpred as i32, std::ptr::null_mut());
        let usable = (*(*index).rd_rel).relam == pg_sys::BTREE_AM_OID
            && (*form).indisvalid
            && (*form).indnkeyatts >= 1
            && no_predicate;
        if usable {
            let keys = (*form).indkey.values.as_slice((*form).indnatts as usize);
            let first = keys[0];
            // indcheckxmin: built over broken HOT chains, it may lack entries older snapshots
            // need; PostgreSQL's own index paths take care of that, the probe does not.
            let walkable = crate::leaf_scan::walkable(index) && !(*form).indcheckxmin;
            if first == 0 {
                // An expression: the first of the index's expressions is the first key's.
                let exprs = pg_sys::RelationGetIndexExpressions(index);
                if list_len(exprs) > 0 {
                    if let Some((source, i, m)) = block_expression(list_nth(exprs, 0), oids) {
                        let name = CStr::from_ptr(pg_sys::get_rel_name(index_oid)).to_string_lossy().into_owned();
                        let covering = (keys.len() == 2 && keys[1] == source && walkable).then_some(index_oid);
                        columns.push(BlockColumn {
                            attnum: 0,
                            name,
                            source,
                            index: i,
                            count: m,
                            btree: Some(index_oid),
                            covering,
                        });
                    }
                }
            } else {
                for column in columns.iter_mut().filter(|c| c.attnum == first) {
                    column.btree.get_or_insert(index_oid);
                    if keys.len() == 2 && keys[1] == column.source && walkable {
                        column.covering.get_or_insert(index_oid);
                    }
                }
            }
        }
        pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
    }
}

/// The complete, fully indexed layouts of `source` among `columns`, each once, by block count.
pub fn layouts(columns: &[BlockColumn], source: i16) -> Vec<Layout> {
    let mut by_count: HashMap<u32, Vec<Option<&BlockColumn>>> = HashMap::new();
    for c in columns.iter().filter(|c| c.source == source && c.btree.is_some()) {
        let slots = by_count.entry(c.count).or_insert_with(|| vec![None; c.count as usize]);
        let slot = &mut slots[c.index as usize];
        // Two columns for one block (made by hand): prefer the one with a covering index.
        if slot.is_none_or(|old| old.covering.is_none() && c.covering.is_some()) {
            *slot = Some(c);
        }
    }
    let mut out: Vec<Layout> = by_count
        .into_iter()
        .filter_map(|(count, slots)| {
            let chosen = slots.into_iter().collect::<Option<Vec<&BlockColumn>>>()?;
            Some(Layout {
                count,
                columns: chosen.iter().map(|c| c.attnum).collect(),
                covering: chosen.iter().map(|c| c.covering).collect(),
            })
        })
        .collect();
    out.sort_by_key(|l| l.count);
    out
}

/// The layout that answers `k` with the least work on a table of `rows` rows, and its score.
/// With `use_covering` false, covering indexes are scored (and will be used) as plain ones.
pub fn best_layout(layouts: Vec<Layout>, k: i32, rows: f64, use_covering: bool) -> Option<(Layout, f64)> {
    layouts
        .into_iter()
        .filter_map(|mut l| {
            if !use_covering {
                l.covering = None;
            }
            let cost = probe::lookup_cost(i64::from(k), i64::from(l.count), rows)?;
            let score = if l.covering.is_some() { cost.covering_score() } else { cost.score() };
            Some((l, score))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}
