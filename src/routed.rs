//! Routed layouts on Citus (sql/routed.sql, docs/citus.md "Routed lookups"): the routes
//! maths for SQL, the layout as its guard trigger describes it, and the planner rewrite that
//! sends a lookup on such a table through its routes.
//!
//! The rewrite runs in the planner hook (`distance_bounds.rs`), after distance comparisons have
//! become `simhash_near` calls and before Citus plans the statement. A SELECT whose WHERE has
//! `simhash_near(t.col, q, k)` as a condition of its own (alone or under AND) on a table `t`
//! with a routed layout of `col` gets `t`'s scan replaced by the set-returning call
//! `_simhash_routed_lookup(t, col, q, k, NULL::t)`, which returns exactly the rows of `t` within
//! k of q (by key, through the routes); the WHERE stays, so every other condition, and the
//! distance itself, still apply. It fires only where that is the same query:
//! - a SELECT without FOR UPDATE/SHARE (the function's rows are not the table's to lock) or set
//!   operation, and with no other Citus table anywhere in it, FROM list, CTE, sublink or
//!   function argument (Citus would plan the statement and could send it, the lookup's
//!   distributed queries inside, to a worker: a query from a subquery on the table asks every
//!   shard);
//! - `t` directly in the FROM list, so an inner relation of the WHERE, read with its
//!   inheritance (`FROM ONLY t` keeps every shard's own scan: the way out, and the one the lookup
//!   itself takes where it asks every shard), without TABLESAMPLE, and no system column of `t`
//!   read (a function's rows have none);
//! - q and k read no column of `t`, nothing volatile, no aggregate or window function. They
//!   may read other tables of the FROM list (not Citus ones): the call is then LATERAL, one
//!   lookup per row of those.

use std::ffi::{c_void, CStr};

use pgrx::prelude::*;
use simhash_core::probe::PlanError;
use simhash_core::routes;

use crate::citus;
use crate::args::Table;
use crate::errors;
use crate::ext_objects::{self, ExtOids};
use crate::nodes::{cast, list_len, list_nth};
use crate::simhash64::SimHash64;

/// The name of a routed layout's guard trigger, and of its function.
const GUARD_TRIGGER: &CStr = c"_simhash_routed";
const GUARD_UPDATE_TRIGGER: &CStr = c"_simhash_routed_update";
const GUARD_DELETE_TRIGGER: &CStr = c"_simhash_routed_delete";
const GUARD_FUNCTION: &CStr = c"_simhash_routed_guard";

/// `_simhash_routes(fp, m)`: the routes of `fp` in a routed layout of `m` blocks, one per block.
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_routes")]
fn simhash_routes(fp: SimHash64, m: i32) -> Vec<i64> {
    routes::routes_of(fp.0, i64::from(m)).unwrap_or_else(|e| errors::invalid_parameter(e))
}

/// `_simhash_route_probes(query, k, m, route_shards, table_shards)`: the routes a lookup within k
/// of query reads in a routed layout of m blocks over `route_shards` shards, or NULL when asking
/// each of the table's `table_shards` shards costs less (`routes::worth_routing`).
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_route_probes")]
fn simhash_route_probes(query: SimHash64, k: i32, m: i32, route_shards: i32, table_shards: i32) -> Option<Vec<i64>> {
    let shards = |n: i32| u32::try_from(n).unwrap_or(1);
    match routes::probes(query.0, i64::from(k), i64::from(m)) {
        Ok(probes) => routes::worth_routing(probes.len() as u64, shards(route_shards), shards(table_shards)).then_some(probes),
        Err(PlanError::TooManyProbes { .. }) => None,
        Err(e) => errors::invalid_parameter(e),
    }
}

/// `_simhash_block_masks(m)`: the bits of each of m blocks, block 0 first (the pairs of a
/// routed layout keep a pair at the first block it shares, `_simhash_first_shared_key`).
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_block_masks")]
fn simhash_block_masks(m: i32) -> Vec<i64> {
    routes::block_masks(i64::from(m))
        .unwrap_or_else(|e| errors::invalid_parameter(e))
        .into_iter()
        .map(|mask| mask as i64)
        .collect()
}

/// `_simhash_routed_blocks(max_k, rows, shards)`: the block count of a routed layout for lookups
/// up to max_k on about `rows` rows in `shards` shards (`routes::blocks_for`).
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_routed_blocks")]
fn simhash_routed_blocks(max_k: i32, rows: f64, shards: i32) -> Option<i32> {
    let k = u32::try_from(max_k).ok().filter(|k| *k <= 64)?;
    routes::blocks_for(k, rows, u32::try_from(shards).unwrap_or(1)).map(|m| m as i32)
}

/// How many arguments a routed layout's guard takes (sql/routed.sql, `_simhash_create_routed`).
const GUARD_ARGS: usize = 14;

/// `_simhash_routed_args(tbl)`: the arguments of tbl's routed-layout guard (the names the
/// columns had when the layout was made, the layout's label, blocks, view and changes names as
/// made, the shards of the routes and of the table, and on the coordinator the OIDs of the
/// routes, changes and view; sql/routed.sql), or NULL without one.
/// NULL on a Citus worker, where those OIDs name other tables or none (`citus::on_coordinator`):
/// the SQL helpers see no routed layout there, and a write through them is then refused by the
/// guard.
#[pg_extern(stable, strict, parallel_safe, name = "_simhash_routed_args")]
fn simhash_routed_args(tbl: Table) -> Option<Vec<String>> {
    // SAFETY: the relation is open (PgRelation) and we are in a transaction.
    unsafe {
        if !citus::on_coordinator() {
            return None;
        }
        guard(tbl.as_ptr(), false).map(|(_, args)| args)
    }
}

/// Why the routed layout of `relid` (its guard's arguments `args`, its key column
/// `key_attnum`) may not be trusted to hold every row's routes, so that lookups must ask every
/// shard and writes must stop; None while it may. The routes themselves may be gone (lookups
/// then ask every shard, and writes go on, docs/citus.md): that is the caller's to see. What
/// breaks the rest (issue 67):
/// - the changes table is gone, or its OID names another table: `alter_distributed_table` and
///   the other table conversions make new tables, and the guard, copied to the new one, would
///   record changes nobody moves;
/// - the changes table cannot be found where the shards look for it (its name as made, in the
///   schema it was made in or the table's own: a schema renamed keeps it);
/// - the key is no longer unique (its unique index replaced by one on more columns, say): the
///   routes name rows by key, and a second row of a key would take the first one's routes away.
///
/// # Safety
/// Inside a transaction, on the coordinator; `args` has `GUARD_ARGS` elements.
pub unsafe fn untrusted(relid: pg_sys::Oid, args: &[String], key_attnum: pg_sys::AttrNumber) -> Option<String> {
    // SAFETY: catalog lookups inside a transaction (see # Safety); every name read is copied.
    unsafe {
        let changes = pg_sys::Oid::from(args[12].parse::<u32>().ok()?);
        if pg_sys::get_rel_relkind(changes) as u8 != pg_sys::RELKIND_RELATION || !citus::manages(changes) {
            return Some("its changes table is gone (a table conversion such as alter_distributed_table makes new tables)".into());
        }
        let name = |oid: pg_sys::Oid| {
            let n = pg_sys::get_rel_name(oid);
            (!n.is_null()).then(|| CStr::from_ptr(n).to_string_lossy().into_owned())
        };
        let schema = |oid: pg_sys::Oid| {
            let n = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(oid));
            (!n.is_null()).then(|| CStr::from_ptr(n).to_string_lossy().into_owned())
        };
        let changes_schema = schema(changes);
        if name(changes).as_deref() != Some(args[10].as_str())
            || (changes_schema.as_deref() != Some(args[9].as_str()) && changes_schema != schema(relid))
        {
            return Some("its changes table was renamed or moved, and the shards record changes under its name".into());
        }
        let key_name = pg_sys::get_attname(relid, key_attnum, true);
        if key_name.is_null() {
            return Some("its key column is gone".into());
        }
        let rel = pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let unique = crate::table_info::unique_key(rel, key_attnum);
        pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        if !unique {
            return Some(format!(
                "its key {} is no longer unique (a unique index on it alone, checked at once, in its own collation)",
                CStr::from_ptr(key_name).to_string_lossy()
            ));
        }
        None
    }
}

/// `_simhash_routed_columns(tbl)`: the names, on this node and now, of the fingerprint and key
/// columns of tbl's routed layout (a shard of it included), or NULL when it has no complete one.
/// A layout knows its columns by identity: its UPDATE guard's WHEN clause names them, and
/// PostgreSQL keeps such references by column number, on every node, through renames. So a
/// column renamed keeps its layout, and a new column under its old name has none (issue 52:
/// names in the guard's arguments sent a re-fingerprinting migration's lookups to the old
/// column's routes).
#[pg_extern(stable, strict, parallel_safe, name = "_simhash_routed_columns")]
fn simhash_routed_columns(tbl: Table) -> Option<Vec<String>> {
    // SAFETY: the relation is open (PgRelation) and we are in a transaction.
    unsafe {
        let rel = tbl.as_ptr();
        let (col, key) = layout_columns(rel)?;
        let name = |attnum: pg_sys::AttrNumber| -> Option<String> {
            let name = pg_sys::get_attname((*rel).rd_id, attnum, true);
            (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned())
        };
        Some(vec![name(col)?, name(key)?])
    }
}

/// `_simhash_routed_view_columns(view)`: for each column of a routed layout's inserts view (a
/// plain `SELECT col, ... FROM tbl`), in order, the name the table's column it shows has now:
/// the view's columns keep the names they were made with, and its trigger writes each into the
/// column it is, whatever either is called since (a renamed key column and a new one under its
/// old name would otherwise swap).
#[pg_extern(stable, strict, parallel_safe, name = "_simhash_routed_view_columns")]
fn simhash_routed_view_columns(view: Table) -> Option<Vec<Option<String>>> {
    // SAFETY: the view is open (PgRelation) inside a transaction; get_view_query returns its
    // rule's Query, whose target list holds TargetEntry nodes, read as such (`cast`).
    unsafe {
        let rel = view.as_ptr();
        if (*(*rel).rd_rel).relkind as u8 != pg_sys::RELKIND_VIEW {
            return None;
        }
        let query = pg_sys::get_view_query(rel);
        let rtable = (*query).rtable;
        let mut out = Vec::new();
        for i in 0..list_len((*query).targetList) {
            let entry = cast::<pg_sys::TargetEntry>(list_nth((*query).targetList, i), pg_sys::NodeTag::T_TargetEntry)?;
            if (*entry).resjunk {
                continue;
            }
            let name = cast::<pg_sys::Var>((*entry).expr.cast(), pg_sys::NodeTag::T_Var).and_then(|var| {
                let rte = pg_sys::rt_fetch((*var).varno as pg_sys::Index, rtable);
                let name = pg_sys::get_attname((*rte).relid, (*var).varattno, true);
                (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned())
            });
            out.push(name);
        }
        Some(out)
    }
}

/// The fingerprint and key columns (numbers) of `rel`'s routed layout: the columns its UPDATE
/// guard's WHEN clause reads, in order (`OLD.col::int8 IS DISTINCT FROM NEW.col::int8 OR
/// OLD.key::text IS DISTINCT FROM NEW.key::text`); None without such a guard.
///
/// # Safety
/// `rel` must be an open relation; inside a transaction.
unsafe fn layout_columns(rel: pg_sys::Relation) -> Option<(pg_sys::AttrNumber, pg_sys::AttrNumber)> {
    // SAFETY: `rel` is open (see # Safety); the triggers are copied before any catalog lookup,
    // and a copied WHEN clause is the node string PostgreSQL stored for it.
    unsafe {
        for trigger in trigger_copies(rel) {
            let Some(qual) = &trigger.qual else { continue };
            if trigger.kind & pg_sys::TRIGGER_TYPE_UPDATE == 0 || !is_guard_function(trigger.function) {
                continue;
            }
            let qual = pg_sys::stringToNode(qual.as_ptr()).cast::<pg_sys::Node>();
            let mut columns: Vec<pg_sys::AttrNumber> = Vec::new();
            walk_vars(qual, &mut |var, _| {
                if !columns.contains(&(*var).varattno) {
                    columns.push((*var).varattno);
                }
                false
            });
            if let [col, key] = columns[..] {
                return (col > 0 && key > 0).then_some((col, key));
            }
        }
        None
    }
}

/// Whether `function` is the extension's own guard function.
///
/// # Safety
/// Inside a transaction (catalog lookups).
unsafe fn is_guard_function(function: pg_sys::Oid) -> bool {
    // SAFETY: catalog lookups inside a transaction (see # Safety); a non-null name is a valid C string.
    unsafe {
        let name = pg_sys::get_func_name(function);
        !name.is_null() && CStr::from_ptr(name) == GUARD_FUNCTION && ext_objects::is_ours(function)
    }
}

/// The guard trigger of a routed layout on `rel`, if it has one: its function and arguments.
/// Only a trigger of that name whose function is the extension's own guard counts; with
/// `enabled_only`, only one that fires (not disabled by ALTER TABLE ... DISABLE TRIGGER, nor
/// set to fire only on replicas): while it does not, writes may skip the routes, so lookups
/// must not read them.
///
/// # Safety
/// `rel` must be an open relation; inside a transaction (catalog lookups).
unsafe fn guard(rel: pg_sys::Relation, enabled_only: bool) -> Option<(pg_sys::Oid, Vec<String>)> {
    // SAFETY: `rel` is open (see # Safety); the triggers are copied before any catalog lookup.
    let all = unsafe { trigger_copies(rel) };
    // SAFETY: catalog lookups inside a transaction (see # Safety).
    let ours = |trigger: &TriggerCopy| unsafe { is_guard_function(trigger.function) };
    let enabled = |trigger: &TriggerCopy| matches!(trigger.enabled, b'O' | b'A');
    // Each of the three triggers keeps the routes of its own writes: with one of them disabled
    // or gone, writes may skip the routes, so lookups must not read them.
    if enabled_only
        && ![GUARD_UPDATE_TRIGGER, GUARD_DELETE_TRIGGER]
            .iter()
            .all(|wanted| all.iter().any(|t| t.name.as_c_str() == *wanted && enabled(t) && ours(t)))
    {
        return None;
    }
    for trigger in &all {
        if trigger.name.as_c_str() != GUARD_TRIGGER {
            continue;
        }
        if enabled_only && !enabled(trigger) {
            return None;
        }
        if !ours(trigger) {
            continue;
        }
        return (trigger.args.len() == GUARD_ARGS).then(|| (trigger.function, trigger.args.clone()));
    }
    None
}

/// A trigger of a relation, copied out of its relcache entry: a catalog lookup (the guard
/// function's name) may rebuild that entry and free the descriptor read through (a worker
/// crashed so, reading a freed WHEN clause mid-UPDATE).
struct TriggerCopy {
    name: std::ffi::CString,
    function: pg_sys::Oid,
    kind: u32,
    enabled: u8,
    args: Vec<String>,
    qual: Option<std::ffi::CString>,
}

/// The triggers of `rel`, copied (`TriggerCopy`), with no catalog lookup meanwhile.
///
/// # Safety
/// `rel` must be an open relation.
unsafe fn trigger_copies(rel: pg_sys::Relation) -> Vec<TriggerCopy> {
    // SAFETY: `rel` is open (see # Safety), so its trigger descriptor, when present, holds
    // `numtriggers` valid triggers whose names, arguments and WHEN clauses are NUL-terminated
    // strings; nothing here looks the catalog up, so the descriptor stays as it is.
    unsafe {
        let triggers = (*rel).trigdesc;
        if triggers.is_null() {
            return Vec::new();
        }
        (0..(*triggers).numtriggers as usize)
            .map(|i| {
                let t = &*(*triggers).triggers.add(i);
                TriggerCopy {
                    name: CStr::from_ptr(t.tgname).to_owned(),
                    function: t.tgfoid,
                    kind: t.tgtype as u32,
                    enabled: t.tgenabled as u8,
                    args: (0..t.tgnargs as usize).map(|a| CStr::from_ptr(*t.tgargs.add(a)).to_string_lossy().into_owned()).collect(),
                    qual: (!t.tgqual.is_null()).then(|| CStr::from_ptr(t.tgqual).to_owned()),
                }
            })
            .collect()
    }
}

/// What a statement that writes a table with a routed layout needs to know of it
/// (`routed_writes.rs`).
pub struct WrittenLayout {
    /// The guard function (ours), whose schema holds the layout's functions.
    pub guard_fn: pg_sys::Oid,
    /// The layout's name in `simhash_pg.routed_writer` and `simhash_pg.routed_changes`: its
    /// label, the schema and name its routes table had when the layout was made (the guard's
    /// arguments; the routes may have been renamed since).
    pub name: (String, String),
    /// The fingerprint column and the key column.
    pub columns: [pg_sys::AttrNumber; 2],
    /// Whether an UPDATE may change the fingerprint without assigning it: it is generated, or a
    /// row trigger that runs before ours may change the row.
    pub changes_unassigned: bool,
    /// The guard's arguments.
    args: Vec<String>,
}

impl WrittenLayout {
    /// Stops a statement that is about to write `relid` when the layout may not keep its routes
    /// ([`untrusted`]): 55000, with what to do. The routes gone is not such a case (lookups do
    /// not read them; docs/citus.md).
    ///
    /// # Safety
    /// Inside a transaction, on the coordinator; `relid` is the table the layout was read from.
    pub unsafe fn check_writable(&self, relid: pg_sys::Oid) {
        // Under session_replication_role = replica the guard (an ordinary trigger) does not fire.
        // SAFETY: reading a backend-local setting.
        if unsafe { pg_sys::SessionReplicationRole } == pg_sys::SESSION_REPLICATION_ROLE_REPLICA as i32 {
            crate::errors::not_ready(
                // SAFETY: a catalog lookup inside a transaction.
                format!("the routed layout of {} cannot keep its routes under session_replication_role = replica", unsafe {
                    crate::index_probe::relation_name(relid)
                }),
                "Its guard triggers do not fire in that mode: write with session_replication_role = origin, or drop the layout (simhash_drop_index) and make it again after.",
            );
        }
        // SAFETY: as for `untrusted` (see # Safety).
        if let Some(why) = unsafe { untrusted(relid, &self.args, self.columns[1]) } {
            crate::errors::not_ready(
                // SAFETY: a catalog lookup inside a transaction.
                format!("the routed layout of {} cannot keep its routes: {}", unsafe { crate::index_probe::relation_name(relid) }, why),
                "Make the layout again (simhash_drop_index, then simhash_create_index(..., routed => true)), or drop it; until then lookups ask every shard.",
            );
        }
    }
}

/// The routed layout of `relid`, when `relid` is a Citus table (not one of its shards, which
/// carry copies of the guard) whose guard fires: a statement that writes it must have its
/// changes moved into the routes (`routed_writes.rs`).
///
/// # Safety
/// Inside a transaction (catalog lookups); `relid` names a table or nothing.
pub unsafe fn written_layout(relid: pg_sys::Oid) -> Option<WrittenLayout> {
    // SAFETY: inside a transaction (see # Safety). The lock is one a writer of the table takes
    // anyway, kept to the transaction's end as PostgreSQL keeps its own. The trigger descriptor,
    // when present, holds `numtriggers` valid triggers.
    unsafe {
        let rel = pg_sys::try_relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        if rel.is_null() {
            return None;
        }
        let found = guard(rel, true);
        let identity = layout_columns(rel);
        // Row triggers that fire before ours and may change the row: every BEFORE UPDATE row
        // trigger that is not disabled (AFTER ones cannot change it).
        let before_update = trigger_copies(rel).iter().any(|t| {
            t.kind & pg_sys::TRIGGER_TYPE_ROW != 0
                && t.kind & pg_sys::TRIGGER_TYPE_BEFORE != 0
                && t.kind & pg_sys::TRIGGER_TYPE_UPDATE != 0
                && t.enabled != b'D'
        });
        pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        let (guard_fn, args) = found?;
        if !citus::manages(relid) {
            return None;
        }
        // On a worker (Citus MX, a distributed function) nothing here can keep the routes: the
        // statement is not covered, and the guard refuses its inserts and fingerprint updates
        // (issue 67: they went in without routes).
        if !citus::on_coordinator() {
            return None;
        }
        // The columns by identity (`layout_columns`): renamed ones keep their layout.
        let columns = identity.map_or([0, 0], |(col, key)| [col, key]);
        // (Without them the layout is not whole: not known to stay; the guard then refuses the write.)
        let generated = columns[0] <= 0 || pg_sys::get_attgenerated(relid, columns[0]) != 0;
        let name = (args[1].clone(), args[2].clone());
        Some(WrittenLayout { guard_fn, name, columns, changes_unassigned: generated || before_update, args })
    }
}

/// Rewrites a lookup on a table with a routed layout into `_simhash_routed_lookup` (module
/// comment); leaves every other statement as it is. Called by the planner hook with the Query
/// about to be planned; returns the table whose scan it rewrote and its routes, which the plan
/// must depend on ([`planned`]).
///
/// # Safety
/// `parse` must be the valid Query the planner hook was given, rewritten in place in the
/// planner's memory context; inside a transaction.
pub unsafe fn rewrite(parse: *mut pg_sys::Query) -> Option<(pg_sys::Oid, pg_sys::Oid)> {
    // SAFETY: `parse` is a valid Query (see # Safety); each node is read as the type its tag
    // names (`cast`), and the range table entries by their index.
    unsafe {
        let q = &mut *parse;
        if q.commandType != pg_sys::CmdType::CMD_SELECT
            || !q.rowMarks.is_null()
            || !q.setOperations.is_null()
            || q.jointree.is_null()
            || (*q.jointree).quals.is_null()
        {
            return None;
        }
        let mut conditions = Vec::new();
        conjuncts((*q.jointree).quals, &mut conditions);
        conditions.into_iter().find_map(|condition| try_condition(parse, condition))
    }
}

/// Makes a plan whose scan of `relid` [`rewrite`] replaced depend on that table again, as a
/// scan of it would, on its routes, and on the role it was made for: a change to either table
/// (the routed layout dropped or made anew, a column added, the routes redistributed), or
/// another role, then makes a cached plan again.
///
/// # Safety
/// `planned` must be the valid PlannedStmt the planner returned for the rewritten Query.
pub unsafe fn planned(planned: *mut pg_sys::PlannedStmt, (relid, routes): (pg_sys::Oid, pg_sys::Oid)) {
    // SAFETY: `planned` is valid (see # Safety); lappend_oid copies into the current context,
    // the planner's, where the rest of the plan lives.
    unsafe {
        (*planned).relationOids = pg_sys::lappend_oid((*planned).relationOids, relid);
        if routes != pg_sys::InvalidOid {
            (*planned).relationOids = pg_sys::lappend_oid((*planned).relationOids, routes);
        }
        // The rewrite was chosen for this role's privileges (`rewrite`): another role gets its
        // own plan, as PostgreSQL does for row-level security.
        (*planned).dependsOnRole = true;
    }
}

/// The conditions ANDed together in `node`.
///
/// # Safety
/// `node` must be a valid expression.
pub(crate) unsafe fn conjuncts(node: *mut pg_sys::Node, out: &mut Vec<*mut pg_sys::Node>) {
    // Recursive: a deep tree raises PostgreSQL's "stack depth limit exceeded" instead of
    // overflowing the stack. SAFETY: a plain check of this backend's stack.
    unsafe { pg_sys::check_stack_depth() };
    // SAFETY: `node` is a valid expression (see # Safety); an AND's arguments are a list of them.
    unsafe {
        if let Some(b) = cast::<pg_sys::BoolExpr>(node, pg_sys::NodeTag::T_BoolExpr) {
            if (*b).boolop == pg_sys::BoolExprType::AND_EXPR {
                for i in 0..list_len((*b).args) {
                    conjuncts(list_nth((*b).args, i), out);
                }
                return;
            }
        }
        out.push(node);
    }
}

/// Rewrites the scan the condition filters when it is a routed lookup the module comment allows;
/// returns the table whose scan it rewrote.
///
/// # Safety
/// As for `rewrite`; `condition` is a condition of `parse`'s WHERE.
unsafe fn try_condition(parse: *mut pg_sys::Query, condition: *mut pg_sys::Node) -> Option<(pg_sys::Oid, pg_sys::Oid)> {
    // SAFETY: as for `rewrite` (see # Safety); the relation is opened without a lock, which the
    // parser already holds (AccessShareLock on every table of the statement).
    unsafe {
        let call = cast::<pg_sys::FuncExpr>(condition, pg_sys::NodeTag::T_FuncExpr)?;
        if list_len((*call).args) != 3 {
            return None;
        }
        let oids = ExtOids::cached().filter(|o| o.near_fn == (*call).funcid).or_else(|| ExtOids::of_member((*call).funcid))?;
        if oids.near_fn != (*call).funcid {
            return None;
        }
        // simhash_near is symmetric: the table's column may come first or second
        // (`simhash_near('q', fp, k)`, and `'q' <-> fp <= k` rewritten into it).
        let (first, second, k_arg) = (list_nth((*call).args, 0), list_nth((*call).args, 1), list_nth((*call).args, 2));
        try_column(parse, first, second, k_arg).or_else(|| try_column(parse, second, first, k_arg))
    }
}

/// [`try_condition`] with `column_arg` as the table's column and `query_arg` as the query.
///
/// # Safety
/// As for `try_condition`; the arguments are those of its call.
unsafe fn try_column(
    parse: *mut pg_sys::Query,
    column_arg: *mut pg_sys::Node,
    query_arg: *mut pg_sys::Node,
    k_arg: *mut pg_sys::Node,
) -> Option<(pg_sys::Oid, pg_sys::Oid)> {
    // SAFETY: as for `try_condition` (see # Safety).
    unsafe {
        let column = cast::<pg_sys::Var>(column_arg, pg_sys::NodeTag::T_Var)?;
        if (*column).varlevelsup != 0 {
            return None;
        }
        let rti = (*column).varno as usize;
        let q = &mut *parse;
        if !in_from_list(q.jointree, rti as i32) {
            return None;
        }
        let rte = pg_sys::rt_fetch(rti as pg_sys::Index, q.rtable);
        if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION || !(*rte).inh || !(*rte).tablesample.is_null() {
            return None;
        }
        let relid = (*rte).relid;
        let rel = pg_sys::relation_open(relid, pg_sys::NoLock as pg_sys::LOCKMODE);
        let found = guard(rel, true);
        let identity = layout_columns(rel);
        let natts = (*(*rel).rd_att).natts;
        let row_type = (*(*rel).rd_rel).reltype;
        pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        let (guard_fn, args) = found?;
        // The layout's columns by identity: a lookup on another column (one added under the
        // layout's column's old name, say) is not routed.
        let (col_attnum, key_attnum) = identity?;
        // Its OIDs name its pieces on the coordinator only (`citus::on_coordinator`).
        if !citus::on_coordinator() {
            return None;
        }
        // The layout belongs to the distributed table, never to one of its shards (whose copy
        // of the guard Citus names with the shard's number anyway): a shard's own scan is the
        // fan-out's, and a lookup from it may not start distributed queries.
        if !citus::manages(relid) {
            return None;
        }
        if col_attnum != (*column).varattno {
            return None;
        }
        // Fail closed: a layout something may have left without some rows' routes is not read;
        // the lookup asks every shard, and says why.
        if let Some(why) = untrusted(relid, &args, key_attnum) {
            pgrx::notice!(
                "simhash_pg: the routed layout of {} is not read: {}; this lookup asks every shard (make the layout again: simhash_drop_index, then simhash_create_index(..., routed => true))",
                crate::index_probe::relation_name(relid),
                why
            );
            return None;
        }
        let col_name = std::ffi::CString::from(CStr::from_ptr(pg_sys::get_attname(relid, col_attnum, false)));
        // q and k may read other entries of the FROM list (then the call is LATERAL), but not the
        // table itself, nor an entry that is LATERAL itself (it may read the table: a cycle the
        // planner cannot join). No aggregate or window function reaches a WHERE.
        let mut read = Vec::new();
        for arg in [query_arg, k_arg] {
            if pg_sys::contain_volatile_functions(arg) {
                return None;
            }
            varnos(arg, &mut read);
        }
        for &varno in &read {
            if varno == rti as i32 || varno <= 0 || varno as usize > list_len(q.rtable) {
                return None;
            }
            if (*pg_sys::rt_fetch(varno as pg_sys::Index, q.rtable)).lateral {
                return None;
            }
        }
        // Read as the caller may: without SELECT on the table, leave the scan (and its error) as
        // it is.
        if pg_sys::pg_class_aclcheck(relid, pg_sys::GetUserId(), pg_sys::ACL_SELECT as pg_sys::AclMode)
            != pg_sys::AclResult::ACLCHECK_OK
        {
            return None;
        }
        // No other Citus table anywhere in the statement (FROM list, CTE, sublink, function
        // argument): Citus would plan the statement and could send it, with the lookup's
        // distributed queries inside, to a worker.
        if contains_citus(parse.cast(), rte) {
            return None;
        }
        if reads_system_column(parse.cast(), rti as i32) {
            return None;
        }
        let simhash64 = pg_sys::exprType(query_arg);
        let lookup_fn = ext_objects::sibling_function(
            guard_fn,
            c"_simhash_routed_lookup",
            &[
                pg_sys::REGCLASSOID,
                pg_sys::TEXTOID,
                simhash64,
                pg_sys::INT4OID,
                pg_sys::ANYELEMENTOID,
                pg_sys::OIDOID,
                pg_sys::INT4OID,
                pg_sys::TEXTOID,
                pg_sys::TEXTOID,
                pg_sys::INT4OID,
                pg_sys::INT4OID,
            ],
        )?;
        // The layout as the guard describes it now: a change to it (the guard dropped or made
        // anew) invalidates the plan, which then depends on the table (`planned`).
        // The routes by identity too (a table renamed is still the routes; one dropped is not,
        // and the lookup then asks every shard).
        let routes = pg_sys::Oid::from(args[11].parse::<u32>().ok()?);
        // Still a routes table: a distributed table with the columns routes have (an OID, once
        // its table is dropped, may name another table some day).
        let is_routes = pg_sys::get_rel_relkind(routes) as u8 == pg_sys::RELKIND_RELATION
            && citus::manages(routes)
            && [c"route", c"fp", c"key"].iter().all(|c| pg_sys::get_attnum(routes, c.as_ptr()) > 0);
        let routes = if is_routes { routes } else { pg_sys::InvalidOid };
        let blocks: i32 = args[3].parse().ok()?;
        let route_shards: i32 = args[7].parse().ok()?;
        let table_shards: i32 = args[8].parse().ok()?;
        let mut key_type = pg_sys::InvalidOid;
        let mut key_typmod = -1;
        let mut key_collation = pg_sys::InvalidOid;
        pg_sys::get_atttypetypmodcoll(relid, key_attnum, &mut key_type, &mut key_typmod, &mut key_collation);
        // Qualified: the lookup casts to it under its own search_path.
        let key_type_name = pg_sys::format_type_extended(
            key_type,
            key_typmod,
            (pg_sys::FORMAT_TYPE_TYPEMOD_GIVEN | pg_sys::FORMAT_TYPE_FORCE_QUALIFY) as pg_sys::bits16,
        );
        let lateral = !read.is_empty();
        let text = |s: *const std::ffi::c_char| -> *mut pg_sys::Node {
            pg_sys::makeConst(
                pg_sys::TEXTOID,
                -1,
                pg_sys::DEFAULT_COLLATION_OID,
                -1,
                pg_sys::Datum::from(pg_sys::cstring_to_text(s)),
                false,
                false,
            )
            .cast()
        };
        let key_name = std::ffi::CString::from(CStr::from_ptr(pg_sys::get_attname(relid, key_attnum, false)));
        let lookup_args = [
            pg_sys::makeConst(pg_sys::REGCLASSOID, -1, pg_sys::InvalidOid, 4, pg_sys::Datum::from(relid), false, true).cast(),
            text(col_name.as_ptr()),
            crate::nodes::copy(query_arg),
            crate::nodes::copy(k_arg),
            pg_sys::makeNullConst(row_type, -1, pg_sys::InvalidOid).cast(),
            pg_sys::makeConst(pg_sys::OIDOID, -1, pg_sys::InvalidOid, 4, pg_sys::Datum::from(routes), false, true).cast(),
            crate::nodes::int4_const(blocks),
            text(key_name.as_ptr()),
            text(key_type_name),
            crate::nodes::int4_const(route_shards),
            crate::nodes::int4_const(table_shards),
        ];
        let call = crate::nodes::func(lookup_fn, row_type, &lookup_args);
        (*call.cast::<pg_sys::FuncExpr>()).funcretset = true;
        let function = pg_sys::palloc0(std::mem::size_of::<pg_sys::RangeTblFunction>()).cast::<pg_sys::RangeTblFunction>();
        (*function).type_ = pg_sys::NodeTag::T_RangeTblFunction;
        (*function).funcexpr = call;
        (*function).funccolcount = natts;
        crate::compat::relation_to_function(rte, function, lateral);
        Some((relid, routes))
    }
}

/// Whether `rti` is an item of the FROM list itself (not inside a JOIN).
///
/// # Safety
/// `from` must be a valid FromExpr.
unsafe fn in_from_list(from: *mut pg_sys::FromExpr, rti: i32) -> bool {
    // SAFETY: `from` is valid (see # Safety) and its list holds nodes.
    unsafe {
        (0..list_len((*from).fromlist)).any(|i| {
            cast::<pg_sys::RangeTblRef>(list_nth((*from).fromlist, i), pg_sys::NodeTag::T_RangeTblRef)
                .is_some_and(|r| (*r).rtindex == rti)
        })
    }
}

/// The range table entries of its own level whose columns expression `node` reads (its
/// sublinks' references to this level included), added to `out`.
///
/// # Safety
/// `node` must be a valid expression.
unsafe fn varnos(node: *mut pg_sys::Node, out: &mut Vec<i32>) {
    // SAFETY: `node` is a valid expression (see # Safety); each `var` is a valid Var of it.
    unsafe {
        walk_vars(node, &mut |var, level| {
            if (*var).varlevelsup == level && !out.contains(&((*var).varno as i32)) {
                out.push((*var).varno as i32);
            }
            false
        });
    }
}

/// Whether Query `query` reads a system column (ctid, tableoid, ...) of its entry `rti`: a
/// function's rows have none.
///
/// # Safety
/// `query` must be a valid Query.
unsafe fn reads_system_column(query: *mut pg_sys::Node, rti: i32) -> bool {
    // SAFETY: `query` is a valid Query (see # Safety); each `var` is a valid Var of it.
    unsafe { walk_vars(query, &mut |var, level| (*var).varno as i32 == rti && (*var).varlevelsup == level && (*var).varattno < 0) }
}

/// Calls `visit` with each Var of `node` (an expression or a Query) and how many query levels
/// down from `node` it stands, until `visit` says true; returns whether it did.
///
/// # Safety
/// `node` must be a valid expression or Query.
unsafe fn walk_vars(node: *mut pg_sys::Node, visit: &mut dyn FnMut(*mut pg_sys::Var, u32) -> bool) -> bool {
    struct Walk<'a> {
        visit: &'a mut dyn FnMut(*mut pg_sys::Var, u32) -> bool,
        level: u32,
    }
    #[pg_guard]
    unsafe extern "C-unwind" fn step(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
        if node.is_null() {
            return false;
        }
        // SAFETY: `context` is the `Walk` below, alive for the walk; `node` is a valid node of
        // the tree being walked, read as the type its tag names.
        unsafe {
            let walk = &mut *context.cast::<Walk>();
            if let Some(var) = cast::<pg_sys::Var>(node, pg_sys::NodeTag::T_Var) {
                return (walk.visit)(var, walk.level);
            }
            if (*node).type_ == pg_sys::NodeTag::T_Query {
                walk.level += 1;
                let found = pg_sys::query_tree_walker(node.cast(), Some(step), context, 0);
                walk.level -= 1;
                return found;
            }
            pg_sys::expression_tree_walker(node, Some(step), context)
        }
    }
    let mut walk = Walk { visit, level: 0 };
    let context = (&mut walk as *mut Walk).cast::<c_void>();
    // SAFETY: `node` is valid (see # Safety); a Query is walked at its own level (0).
    unsafe {
        if (*node).type_ == pg_sys::NodeTag::T_Query {
            pg_sys::query_tree_walker(node.cast(), Some(step), context, 0)
        } else {
            step(node, context)
        }
    }
}

/// Whether Query `node`, its subqueries, CTEs or sublinks read a table Citus manages, besides
/// the range table entry `skip`.
///
/// # Safety
/// `node` must be a valid Query (or null); inside a transaction (catalog reads).
unsafe fn contains_citus(node: *mut pg_sys::Node, skip: *mut pg_sys::RangeTblEntry) -> bool {
    #[pg_guard]
    unsafe extern "C-unwind" fn visit(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
        if node.is_null() {
            return false;
        }
        // SAFETY: `node` is a valid node of the tree being walked, read as the type its tag
        // names; `context` is the entry to skip (compared, never read); the walkers get back the
        // walker and context they called us with.
        unsafe {
            if let Some(rte) = cast::<pg_sys::RangeTblEntry>(node, pg_sys::NodeTag::T_RangeTblEntry) {
                return rte.cast::<c_void>() != context
                    && (*rte).rtekind == pg_sys::RTEKind::RTE_RELATION
                    && citus::manages((*rte).relid);
            }
            if (*node).type_ == pg_sys::NodeTag::T_Query {
                return pg_sys::query_tree_walker(node.cast(), Some(visit), context, pg_sys::QTW_EXAMINE_RTES_BEFORE as i32);
            }
            pg_sys::expression_tree_walker(node, Some(visit), context)
        }
    }
    // SAFETY: `node` is a valid Query or null (see # Safety).
    unsafe { visit(node, skip.cast()) }
}
