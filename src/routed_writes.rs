//! Writes to a table with a routed layout keep its routes (sql/routed.sql, docs/citus.md
//! "Routed lookups"): `INSERT`, `UPDATE`, `DELETE`, `MERGE` and `COPY FROM` on the table itself,
//! from a node where simhash_pg is loaded.
//!
//! A row's routes live on other nodes than the row, and a shard's trigger cannot write a
//! distributed table (Citus refuses a distributed query from a query on a shard). So the work
//! is split between the shards and the node that runs the statement:
//! - before the statement runs, `simhash_pg.routed_changes` goes on, transaction-locally and on
//!   every worker the transaction reaches, naming the layouts it covers
//!   (`_simhash_routed_enter('changes', ...)`);
//! - under it, the guard trigger on each shard records each row's change (fingerprint removed,
//!   fingerprint added, by key) in the shard of the layout's changes table co-located with its
//!   own, a local write on its own node;
//! - when the statement has run (`ExecutorFinish`, or the end of `COPY`), the changes move into
//!   the routes (`_simhash_routed_drain`), in the same transaction, and the setting goes off.
//!
//! A statement that names the keys it writes (`keyed`: `INSERT ... VALUES`, `WHERE key = ...`
//! with constants or parameters) announces them in the setting: its drain reads only their
//! shards of the changes table instead of every shard, and the guard refuses a change of any
//! other key, which that drain would leave behind.
//!
//! The setting is what keeps this exact: a guard records changes only for the layouts it names,
//! and without it refuses an INSERT or UPDATE of the fingerprint (55000), so a session without
//! simhash_pg loaded, whose statements nobody would drain, cannot write rows the routes miss. It
//! names the layouts of the statements running now, from the start of each to its end (a
//! cursor's ends when it is closed), and a statement that fails takes its part back with its
//! (sub)transaction.
//!
//! Tables whose writer keeps the routes itself (the inserts view, `simhash_ingest`, naming them
//! in `simhash_pg.routed_writer`) are left alone, and so are the statements on shards: only a table
//! Citus manages has a layout here (`routed::written_layout`).

use std::cell::RefCell;
use std::ffi::{c_char, CStr};

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::citus;
use crate::settings::{self, LayoutName};

/// A statement that writes tables with routed layouts, from its start to its end.
struct Running {
    /// The statement: its QueryDesc (or, for COPY, its PlannedStmt), compared, never read.
    statement: usize,
    /// The subtransaction it started in: if that aborts, so did the statement.
    subxact: pg_sys::SubTransactionId,
    /// The tables whose changes it moves into their routes at its end.
    tables: Vec<Target>,
}

/// A table with a routed layout that a statement writes.
struct Target {
    relid: pg_sys::Oid,
    /// The quoted schema of the layout's functions (the guard's, ours).
    schema: String,
    /// The layout's name in the settings (`routed::WrittenLayout::name`).
    name: LayoutName,
    /// The keys the statement writes, when its planning found them (`keyed`).
    keys: Option<Vec<String>>,
}

thread_local! {
    /// The statements running now that write tables with routed layouts. Their lifetimes need
    /// not nest (a cursor's statement ends when it is closed), so `simhash_pg.routed_changes`
    /// names the layouts of all of them (`apply`), not of the last one.
    static RUNNING: RefCell<Vec<Running>> = const { RefCell::new(Vec::new()) };
    /// `citus.propagate_set_commands` as it was before this transaction first switched the
    /// setting on (switching it on sets it to `local`), to restore once nothing runs.
    static PROPAGATION: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

static mut PREVIOUS_START: pg_sys::ExecutorStart_hook_type = None;
static mut PREVIOUS_FINISH: pg_sys::ExecutorFinish_hook_type = None;
static mut PREVIOUS_UTILITY: pg_sys::ProcessUtility_hook_type = None;

/// Installs the hooks; called once per process from `_PG_init`.
pub fn install() {
    // SAFETY: _PG_init runs once per process, before any statement in it.
    unsafe {
        PREVIOUS_START = pg_sys::ExecutorStart_hook;
        pg_sys::ExecutorStart_hook = Some(executor_start);
        PREVIOUS_FINISH = pg_sys::ExecutorFinish_hook;
        pg_sys::ExecutorFinish_hook = Some(executor_finish);
        PREVIOUS_UTILITY = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(process_utility);
        pg_sys::RegisterXactCallback(Some(transaction_ended), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(subtransaction_ended), std::ptr::null_mut());
    }
}

/// The tables with routed layouts a plan writes, whose guards may record changes: its range
/// table's entries locked for writing (the targets of INSERT, UPDATE, DELETE and MERGE, in the
/// statement or its CTEs; Citus keeps the statement's own range table in the plans it makes, for
/// permission checks, though not always `hasModifyingCTE`). A plain UPDATE that assigns neither
/// the fingerprint nor the key of a table where nothing else may change them
/// (`WrittenLayout::changes_unassigned`) is left out: the guard does not fire for it. (Were
/// that wrong, the guard would refuse the write, not let it skip the routes.)
///
/// The keys come with the one table a keyed statement writes (`keyed`).
///
/// # Safety
/// `query_desc` must be a valid QueryDesc; inside a transaction.
unsafe fn written_tables(query_desc: *mut pg_sys::QueryDesc) -> Vec<Target> {
    let mut tables: Vec<Target> = Vec::new();
    // SAFETY: `query_desc` is valid (see # Safety).
    let planned = unsafe { (*query_desc).plannedstmt };
    // SAFETY: `planned` is valid (see # Safety): its range table holds RangeTblEntry nodes. A
    // parallel worker runs part of a plan whose leader does the rest.
    unsafe {
        if pg_sys::ParallelWorkerNumber >= 0 {
            return tables;
        }
        let command = (*planned).commandType;
        let rtable = (*planned).rtable;
        for i in 0..crate::nodes::list_len(rtable) {
            let rte = crate::nodes::list_nth(rtable, i) as *mut pg_sys::RangeTblEntry;
            if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION
                || (*rte).rellockmode != pg_sys::RowExclusiveLock as i32
                || tables.iter().any(|t| t.relid == (*rte).relid)
            {
                continue;
            }
            let Some(layout) = crate::routed::written_layout((*rte).relid) else {
                continue;
            };
            if command == pg_sys::CmdType::CMD_UPDATE && !(*planned).hasModifyingCTE && !layout.changes_unassigned {
                let assigned = crate::compat::updated_columns(planned, rte);
                let offset = pg_sys::FirstLowInvalidHeapAttributeNumber as i32;
                if !assigned.is_null()
                    && !layout.columns.iter().any(|&c| c <= 0 || pg_sys::bms_is_member(i32::from(c) - offset, assigned))
                {
                    continue;
                }
            }
            layout.check_writable((*rte).relid);
            if let Some(schema) = function_schema(layout.guard_fn) {
                tables.push(Target { relid: (*rte).relid, schema, name: layout.name, keys: None });
            }
        }
        if let [table] = tables.as_mut_slice() {
            table.keys = keys_of(query_desc, table.relid);
        }
    }
    tables
}

/// The quoted schema of function `function`.
///
/// # Safety
/// Inside a transaction.
unsafe fn function_schema(function: pg_sys::Oid) -> Option<String> {
    // SAFETY: inside a transaction (see # Safety); the names are NUL-terminated strings.
    unsafe {
        let schema = pg_sys::get_namespace_name(pg_sys::get_func_namespace(function));
        if schema.is_null() {
            return None;
        }
        Some(CStr::from_ptr(pg_sys::quote_identifier(schema)).to_string_lossy().into_owned())
    }
}

/// Before a statement that writes `tables`: their guards record changes from now on. An INSERT
/// (or COPY) into a layout whose writer adds the routes itself (the view, ingest) is left to it.
fn begin(statement: usize, inserts_only: bool, mut tables: Vec<Target>) {
    if tables.is_empty() {
        return;
    }
    if inserts_only {
        let writers = settings::routed_writer();
        tables.retain(|t| !writers.contains(&t.name));
    }
    if tables.is_empty() {
        return;
    }
    // The statement's writes on the shards, and the changes they record, must commit or roll
    // back with the drain, and see the setting: inside a transaction block on each node.
    // SAFETY: inside a transaction (an executor or utility hook).
    if !unsafe { citus::use_coordinated_transaction() } {
        error!("simhash_pg: a table with a routed layout is written where Citus is not loaded");
    }
    let schema = tables[0].schema.clone();
    // SAFETY: a plain read of the current subtransaction's id.
    let subxact = unsafe { pg_sys::GetCurrentSubTransactionId() };
    RUNNING.with_borrow_mut(|running| running.push(Running { statement, subxact, tables }));
    apply(&schema);
}

/// After the statement `statement` ran: its changes into the routes, and the setting down to
/// the statements still running.
fn end(statement: usize) {
    let Some(done) = RUNNING.with_borrow_mut(|running| {
        let at = running.iter().rposition(|r| r.statement == statement)?;
        Some(running.remove(at))
    }) else {
        return;
    };
    for table in &done.tables {
        let sql = format!("SELECT {}._simhash_routed_drain({}::pg_catalog.oid::pg_catalog.regclass, $1)", table.schema, table.relid.to_u32());
        let args = [DatumWithOid::from(table.keys.clone())];
        with_snapshot(|| Spi::connect_mut(|client| client.update(sql.as_str(), None, &args).map(|_| ())))
            .unwrap_or_else(|e| error!("simhash_pg: could not move the changes into the routes: {e}"));
    }
    apply(&done.tables[0].schema);
}

/// Runs `f` (SQL through SPI) with an active snapshot: a SELECT whose writable CTE wrote the
/// table finishes its executor after its portal has popped the statement's snapshot (issue 52:
/// "cannot execute SQL without an outer snapshot or portal").
pub(crate) fn with_snapshot<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: inside a transaction (an executor or utility hook); the snapshot pushed here is
    // popped below, or by the transaction's abort if `f` raises an error.
    let pushed = unsafe { !pg_sys::ActiveSnapshotSet() };
    if pushed {
        // SAFETY: as above.
        unsafe { pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot()) };
    }
    let result = f();
    if pushed {
        // SAFETY: the snapshot pushed above is still the active one: SPI pops what it pushes.
        unsafe { pg_sys::PopActiveSnapshot() };
    }
    result
}

/// Runs one statement of the switching below.
fn run_sql(sql: &str, args: &[DatumWithOid]) {
    with_snapshot(|| Spi::connect_mut(|client| client.update(sql, None, args).map(|_| ())))
        .unwrap_or_else(|e| error!("simhash_pg: could not set the routed layouts' changes: {e}"));
}

/// Sets `simhash_pg.routed_changes`, on this node and the workers, to the layouts of the
/// statements running now (through `_simhash_routed_set`, in the schema `schema`), when it
/// names others; and `citus.propagate_set_commands` back as it was once none runs.
fn apply(schema: &str) {
    // Each layout, with the keys of its statements when every one of them said.
    let mut wanted: Vec<(LayoutName, Option<Vec<String>>)> = Vec::new();
    RUNNING.with_borrow(|running| {
        for table in running.iter().flat_map(|r| r.tables.iter()) {
            match wanted.iter_mut().find(|(name, _)| *name == table.name) {
                Some((_, keys)) => match (keys.as_mut(), &table.keys) {
                    (Some(keys), Some(more)) => keys.extend(more.iter().cloned()),
                    _ => *keys = None,
                },
                None => wanted.push((table.name.clone(), table.keys.clone())),
            }
        }
    });
    wanted.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, keys) in &mut wanted {
        if let Some(keys) = keys {
            keys.sort();
            keys.dedup();
        }
    }
    let value = settings::changes_value(&wanted);
    if value == settings::routed_changes_value() {
        return;
    }
    if !wanted.is_empty() && PROPAGATION.with_borrow(Option::is_none) {
        // SAFETY: GetConfigOption returns NULL or a NUL-terminated string that stays valid
        // until the setting changes; it is copied at once.
        let previous = unsafe {
            let value = pg_sys::GetConfigOption(c"citus.propagate_set_commands".as_ptr(), true, false);
            (!value.is_null()).then(|| CStr::from_ptr(value).to_string_lossy().into_owned())
        };
        PROPAGATION.set(Some(previous));
    }
    run_sql(&format!("SELECT FROM {schema}._simhash_routed_set('changes', $1)"), &[DatumWithOid::from(value)]);
    if wanted.is_empty() {
        if let Some(Some(previous)) = PROPAGATION.take() {
            run_sql("SELECT pg_catalog.set_config('citus.propagate_set_commands', $1, true)", &[DatumWithOid::from(previous)]);
        }
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn executor_start(query_desc: *mut pg_sys::QueryDesc, eflags: i32) {
    // SAFETY: PostgreSQL calls it with a valid QueryDesc inside a transaction; the previous hook
    // (or standard_ExecutorStart) takes the arguments PostgreSQL gave us, called inside
    // `pg_guard_ffi_boundary` (nothing with a destructor in the closure), as in distance_bounds.rs.
    unsafe {
        if eflags & pg_sys::EXEC_FLAG_EXPLAIN_ONLY as i32 == 0 {
            let planned = (*query_desc).plannedstmt;
            let inserts_only = (*planned).commandType == pg_sys::CmdType::CMD_INSERT && !(*planned).hasModifyingCTE;
            begin(query_desc as usize, inserts_only, written_tables(query_desc));
        }
        match PREVIOUS_START {
            Some(previous) => pg_sys::ffi::pg_guard_ffi_boundary(|| previous(query_desc, eflags)),
            None => pg_sys::standard_ExecutorStart(query_desc, eflags),
        }
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn executor_finish(query_desc: *mut pg_sys::QueryDesc) {
    // SAFETY: as for `executor_start`.
    unsafe {
        match PREVIOUS_FINISH {
            Some(previous) => pg_sys::ffi::pg_guard_ffi_boundary(|| previous(query_desc)),
            None => pg_sys::standard_ExecutorFinish(query_desc),
        }
    }
    end(query_desc as usize);
}

/// `COPY table FROM`: the same around the copy (Citus's own COPY runs inside the previous hook).
#[cfg(not(feature = "pg13"))]
#[pg_guard]
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    // SAFETY: PostgreSQL calls it with a valid PlannedStmt inside a transaction (or none, for
    // transaction control); the previous hook takes the arguments PostgreSQL gave us.
    unsafe {
        around_copy(pstmt, || match PREVIOUS_UTILITY {
            Some(previous) => pg_sys::ffi::pg_guard_ffi_boundary(|| {
                previous(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc)
            }),
            None => pg_sys::standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc),
        })
    }
}

/// PostgreSQL 13's ProcessUtility, without `readOnlyTree`.
#[cfg(feature = "pg13")]
#[pg_guard]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const c_char,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    // SAFETY: as above.
    unsafe {
        around_copy(pstmt, || match PREVIOUS_UTILITY {
            Some(previous) => {
                pg_sys::ffi::pg_guard_ffi_boundary(|| previous(pstmt, query_string, context, params, query_env, dest, qc))
            }
            None => pg_sys::standard_ProcessUtility(pstmt, query_string, context, params, query_env, dest, qc),
        })
    }
}

/// Runs the utility statement `pstmt` (`run`), and when it is a `COPY FROM` into a table with a
/// routed layout, begins and ends it as a writing statement.
///
/// # Safety
/// `pstmt` must be the valid PlannedStmt of the utility statement `run` runs. A COPY's table is
/// resolved as COPY resolves it (search_path) and locked as COPY FROM locks it.
unsafe fn around_copy(pstmt: *mut pg_sys::PlannedStmt, run: impl FnOnce()) {
    let mut statement = None;
    // SAFETY: `pstmt` is valid (see # Safety); the CopyStmt's fields are read as its type says.
    unsafe {
        if let Some(copy) = crate::nodes::cast::<pg_sys::CopyStmt>((*pstmt).utilityStmt, pg_sys::NodeTag::T_CopyStmt) {
            if (*copy).is_from && !(*copy).relation.is_null() && pg_sys::IsTransactionState() {
                let relid = pg_sys::RangeVarGetRelidExtended(
                    (*copy).relation,
                    pg_sys::RowExclusiveLock as pg_sys::LOCKMODE,
                    pg_sys::RVROption::RVR_MISSING_OK,
                    None,
                    std::ptr::null_mut(),
                );
                if relid != pg_sys::InvalidOid {
                    if let Some(layout) = crate::routed::written_layout(relid) {
                        layout.check_writable(relid);
                        if let Some(schema) = function_schema(layout.guard_fn) {
                            statement = Some(pstmt as usize);
                            begin(pstmt as usize, true, vec![Target { relid, schema, name: layout.name, keys: None }]);
                        }
                    }
                }
            }
        }
    }
    run();
    if let Some(statement) = statement {
        end(statement);
    }
}

/// At the end of a transaction no statement runs any more (one that failed never ended). One
/// that began and never ended without a failure would have changes nobody moved: the commit
/// fails instead.
#[pg_guard]
unsafe extern "C-unwind" fn transaction_ended(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    use pg_sys::XactEvent::*;
    if matches!(event, XACT_EVENT_PRE_COMMIT | XACT_EVENT_PRE_PREPARE) && RUNNING.with_borrow(|running| !running.is_empty()) {
        RUNNING.with_borrow_mut(Vec::clear);
        error!("simhash_pg: a statement that wrote a table with a routed layout did not move its changes into the routes");
    }
    if matches!(event, XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT | XACT_EVENT_COMMIT | XACT_EVENT_PARALLEL_COMMIT | XACT_EVENT_PREPARE) {
        RUNNING.with_borrow_mut(Vec::clear);
        PROPAGATION.set(None);
    }
}

/// A subtransaction that aborts ends the statements that began in it (its SET LOCALs are undone
/// with it); one that commits hands its statements (a cursor's, still open) to its parent.
#[pg_guard]
unsafe extern "C-unwind" fn subtransaction_ended(
    event: pg_sys::SubXactEvent::Type,
    subxact: pg_sys::SubTransactionId,
    parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    if event == pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
        RUNNING.with_borrow_mut(|running| running.retain(|r| r.subxact != subxact));
    } else if event == pg_sys::SubXactEvent::SUBXACT_EVENT_COMMIT_SUB {
        RUNNING.with_borrow_mut(|running| running.iter_mut().filter(|r| r.subxact == subxact).for_each(|r| r.subxact = parent));
    }
}

/// Where the key of a row a statement writes comes from, when the statement says: a constant
/// (its text) or a parameter of the statement.
#[derive(Clone)]
pub enum KeySource {
    Const(String),
    Param { id: i32, type_oid: pg_sys::Oid },
}

/// The keys a planned statement writes, found while planning it (`keyed`): for one table with
/// a routed layout, the statement's end then moves only those keys' changes, from their shards
/// (instead of asking every shard), and the guard refuses any other key.
struct Keyed {
    relid: pg_sys::Oid,
    sources: Vec<KeySource>,
}

/// Marks the plan of a keyed statement in its `relationOids`, followed by the number of its
/// entry in `KEYED`: the plan cache copies a plan (so its address changes) but keeps that list,
/// where an OID too many only ever makes a cached plan be made again. Should a table have this
/// OID, the entry that follows names no statement of that table, and the statement asks every
/// shard.
const KEYED_MARK: u32 = 0xFFFF_FFF0;

thread_local! {
    /// Keyed statements by number, the oldest forgotten past a bound (a statement whose entry
    /// is gone asks every shard).
    static KEYED: RefCell<(u32, std::collections::BTreeMap<u32, Keyed>)> = const { RefCell::new((0, std::collections::BTreeMap::new())) };
}

/// Key types whose text is the same in every form the guard and the drain see (`to_jsonb`'s
/// and the type's own): other keys are not announced.
fn plain_key_type(type_oid: pg_sys::Oid) -> bool {
    [pg_sys::INT2OID, pg_sys::INT4OID, pg_sys::INT8OID, pg_sys::TEXTOID, pg_sys::VARCHAROID, pg_sys::UUIDOID].contains(&type_oid)
}

/// The text of a datum of type `type_oid`.
///
/// # Safety
/// `value` must be a valid, non-null datum of `type_oid`; inside a transaction.
unsafe fn datum_text(value: pg_sys::Datum, type_oid: pg_sys::Oid) -> String {
    // SAFETY: see # Safety; the output function returns a palloc'd NUL-terminated string.
    unsafe {
        let mut output = pg_sys::InvalidOid;
        let mut varlena = false;
        pg_sys::getTypeOutputInfo(type_oid, &mut output, &mut varlena);
        CStr::from_ptr(pg_sys::OidOutputFunctionCall(output, value)).to_string_lossy().into_owned()
    }
}

/// The source of a key from expression `expr` of the key column's type: a constant or a
/// parameter, under any relabelling.
///
/// # Safety
/// `expr` must be a valid expression node.
unsafe fn key_source(mut expr: *mut pg_sys::Node, key_type: pg_sys::Oid) -> Option<KeySource> {
    // SAFETY: `expr` is valid (see # Safety); each node is read as the type its tag names.
    // eval_const_expressions makes a new tree (a literal cast to the key's type folded into a
    // constant of it), leaving parameters as they are.
    unsafe {
        expr = pg_sys::eval_const_expressions(std::ptr::null_mut(), expr);
        while let Some(relabel) = crate::nodes::cast::<pg_sys::RelabelType>(expr, pg_sys::NodeTag::T_RelabelType) {
            expr = (*relabel).arg.cast();
        }
        let integer = |t: pg_sys::Oid| [pg_sys::INT2OID, pg_sys::INT4OID, pg_sys::INT8OID].contains(&t);
        if let Some(c) = crate::nodes::cast::<pg_sys::Const>(expr, pg_sys::NodeTag::T_Const) {
            // (An integer of another width, compared with the key by a cross-type operator,
            // has the same text as the key it names.)
            if (*c).constisnull || !((*c).consttype == key_type || integer((*c).consttype) && integer(key_type)) {
                return None;
            }
            return Some(KeySource::Const(datum_text((*c).constvalue, (*c).consttype)));
        }
        let param = crate::nodes::cast::<pg_sys::Param>(expr, pg_sys::NodeTag::T_Param)?;
        ((*param).paramkind == pg_sys::ParamKind::PARAM_EXTERN && (*param).paramtype == key_type)
            .then_some(KeySource::Param { id: (*param).paramid, type_oid: key_type })
    }
}

/// The keys a statement writes, when it writes one table with a routed layout and says which
/// rows: an INSERT of VALUES rows, or an UPDATE or DELETE whose WHERE has `key = value` as a
/// condition of its own (the values constants or parameters; keys of integer, text or uuid
/// type). None otherwise (the drain then asks every shard). Called by the planner hook with the
/// Query about to be planned.
///
/// # Safety
/// `parse` must be a valid Query; inside a transaction.
pub unsafe fn keyed(parse: *mut pg_sys::Query) -> Option<(pg_sys::Oid, Vec<KeySource>)> {
    // SAFETY: `parse` is valid (see # Safety); nodes are read as their tags say, range table
    // entries by their index.
    unsafe {
        let q = &*parse;
        let command = q.commandType;
        if !matches!(command, pg_sys::CmdType::CMD_INSERT | pg_sys::CmdType::CMD_UPDATE | pg_sys::CmdType::CMD_DELETE)
            || q.resultRelation <= 0
            || !q.cteList.is_null()
            || q.hasModifyingCTE
        {
            return None;
        }
        let rte = pg_sys::rt_fetch(q.resultRelation as pg_sys::Index, q.rtable);
        let relid = (*rte).relid;
        let layout = crate::routed::written_layout(relid)?;
        let key_attno = layout.columns[1];
        if key_attno <= 0 {
            return None;
        }
        let key_type = pg_sys::get_atttype(relid, key_attno);
        if !plain_key_type(key_type) {
            return None;
        }
        let mut sources = Vec::new();
        if command == pg_sys::CmdType::CMD_INSERT {
            // The key's target entry: the value itself (one VALUES row), or a column of the
            // VALUES list (several rows).
            let entry = (0..crate::nodes::list_len(q.targetList))
                .map(|i| crate::nodes::list_nth(q.targetList, i) as *mut pg_sys::TargetEntry)
                .find(|&te| (*te).resno == key_attno && !(*te).resjunk)?;
            let expr = (*entry).expr.cast::<pg_sys::Node>();
            if let Some(var) = crate::nodes::cast::<pg_sys::Var>(expr, pg_sys::NodeTag::T_Var) {
                let values = pg_sys::rt_fetch((*var).varno as pg_sys::Index, q.rtable);
                if (*values).rtekind != pg_sys::RTEKind::RTE_VALUES || crate::nodes::list_len(q.rtable) != 2 {
                    return None;
                }
                let lists = (*values).values_lists;
                for i in 0..crate::nodes::list_len(lists) {
                    let row = crate::nodes::list_nth(lists, i) as *mut pg_sys::List;
                    let column = (*var).varattno as usize;
                    if column == 0 || column > crate::nodes::list_len(row) {
                        return None;
                    }
                    sources.push(key_source(crate::nodes::list_nth(row, column - 1), key_type)?);
                }
            } else if crate::nodes::list_len(q.rtable) == 1 {
                sources.push(key_source(expr, key_type)?);
            } else {
                return None;
            }
        } else {
            if q.jointree.is_null() || (*q.jointree).quals.is_null() || crate::nodes::list_len(q.rtable) != 1 {
                return None;
            }
            let mut conditions = Vec::new();
            crate::routed::conjuncts((*q.jointree).quals, &mut conditions);
            let is_key = |node: *mut pg_sys::Node| {
                crate::nodes::cast::<pg_sys::Var>(node, pg_sys::NodeTag::T_Var)
                    .is_some_and(|v| (*v).varno as i64 == i64::from(q.resultRelation) && (*v).varattno == key_attno && (*v).varlevelsup == 0)
            };
            let equality = |opno: pg_sys::Oid| {
                let name = pg_sys::get_opname(opno);
                !name.is_null() && CStr::from_ptr(name) == c"=" && pg_sys::op_mergejoinable(opno, key_type)
            };
            for condition in conditions {
                if let Some(op) = crate::nodes::cast::<pg_sys::OpExpr>(condition, pg_sys::NodeTag::T_OpExpr) {
                    if crate::nodes::list_len((*op).args) != 2 || !equality((*op).opno) {
                        continue;
                    }
                    let (a, b) = (crate::nodes::list_nth((*op).args, 0), crate::nodes::list_nth((*op).args, 1));
                    let value = if is_key(a) { b } else if is_key(b) { a } else { continue };
                    if let Some(source) = key_source(value, key_type) {
                        return Some((relid, vec![source]));
                    }
                }
            }
            return None;
        }
        (!sources.is_empty()).then_some((relid, sources))
    }
}

/// Remembers the keys of a statement just planned (`keyed`), marking its plan.
///
/// # Safety
/// `planned` must be the valid PlannedStmt the planner returned, in the planner's memory
/// context.
pub unsafe fn remember_keys(planned: *mut pg_sys::PlannedStmt, keys: (pg_sys::Oid, Vec<KeySource>)) {
    let number = KEYED.with_borrow_mut(|(next, keyed)| {
        let number = *next;
        *next = next.wrapping_add(1);
        keyed.insert(number, Keyed { relid: keys.0, sources: keys.1 });
        while keyed.len() > 4096 {
            keyed.pop_first();
        }
        number
    });
    // SAFETY: `planned` is valid (see # Safety); lappend_oid copies into the current context.
    unsafe {
        (*planned).relationOids = pg_sys::lappend_oid((*planned).relationOids, pg_sys::Oid::from(KEYED_MARK));
        (*planned).relationOids = pg_sys::lappend_oid((*planned).relationOids, pg_sys::Oid::from(number));
    }
}

/// The keys plan `planned` of the statement `query_desc` writes into `relid`, with the
/// statement's parameters, when its planning found them.
///
/// # Safety
/// `query_desc` must be a valid QueryDesc.
unsafe fn keys_of(query_desc: *mut pg_sys::QueryDesc, relid: pg_sys::Oid) -> Option<Vec<String>> {
    // SAFETY: `query_desc` is valid (see # Safety); its parameters, when plain (no fetch hook),
    // are `numParams` ParamExternData.
    unsafe {
        let oids = (*(*query_desc).plannedstmt).relationOids;
        let count = crate::nodes::list_len(oids);
        let oid_at = |i: usize| pg_sys::list_nth_oid(oids, i as i32).to_u32();
        let at = (0..count.saturating_sub(1)).rev().find(|&i| oid_at(i) == KEYED_MARK)?;
        let number = oid_at(at + 1);
        let sources = KEYED.with_borrow(|(_, keyed)| keyed.get(&number).filter(|k| k.relid == relid).map(|k| k.sources.clone()))?;
        let params = (*query_desc).params;
        let mut keys = Vec::with_capacity(sources.len());
        for source in sources {
            match source {
                KeySource::Const(text) => keys.push(text),
                KeySource::Param { id, type_oid } => {
                    if params.is_null() || (*params).paramFetch.is_some() || id <= 0 || id > (*params).numParams {
                        return None;
                    }
                    let param = &*(*params).params.as_ptr().add(id as usize - 1);
                    if param.isnull || param.ptype != type_oid {
                        return None;
                    }
                    keys.push(datum_text(param.value, type_oid));
                }
            }
        }
        keys.sort();
        keys.dedup();
        Some(keys)
    }
}
