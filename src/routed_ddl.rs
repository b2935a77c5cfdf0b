//! A routed layout's inserts view through `ALTER TABLE ... ALTER COLUMN TYPE` and `DROP COLUMN`
//! of a column it shows (issue 67): PostgreSQL refuses to change or drop a column a view reads,
//! so the view, a plain `SELECT` of the table's writable columns, blocked both (and under
//! CASCADE went with the column). At the command's start the view is set aside (dropped, what
//! makes it again kept here), and at its end made again over the table as it is then
//! (`sql/routed.sql`: `_simhash_routed_view_aside`, `_simhash_routed_view_restore` and the event
//! trigger `_simhash_routed_ddl`).
//!
//! The start is a C event trigger function, the only kind that sees the statement: a PL/pgSQL
//! one at `ddl_command_start` cannot tell which table an `ALTER TABLE` names. It runs before
//! PostgreSQL looks the table up, so it takes the table's lock itself, the one the command
//! would take (so the command never upgrades it), after checking ownership as the command does.

use std::cell::RefCell;
use std::ffi::CStr;

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::prelude::*;

thread_local! {
    /// The views set aside by commands that have not ended yet: the table's OID, what
    /// `_simhash_routed_view_restore` takes, and the subtransaction that set it aside. Taken by
    /// each command's end; a failed command's is forgotten with its subtransaction or
    /// transaction, which took the drop back.
    static ASIDE: RefCell<Vec<Aside>> = const { RefCell::new(Vec::new()) };
}

struct Aside {
    relid: pg_sys::Oid,
    spec: String,
    subxact: pg_sys::SubTransactionId,
}

/// Installs the transaction callback that forgets what failed commands set aside; called once
/// per process from `_PG_init`.
pub fn install() {
    // SAFETY: _PG_init runs once per process, before any statement in it.
    unsafe {
        pg_sys::RegisterXactCallback(Some(transaction_ended), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(subtransaction_ended), std::ptr::null_mut());
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn transaction_ended(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    use pg_sys::XactEvent::*;
    if matches!(event, XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT | XACT_EVENT_COMMIT | XACT_EVENT_PARALLEL_COMMIT | XACT_EVENT_PREPARE) {
        ASIDE.with_borrow_mut(Vec::clear);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn subtransaction_ended(
    event: pg_sys::SubXactEvent::Type,
    subxact: pg_sys::SubTransactionId,
    parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    if event == pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
        ASIDE.with_borrow_mut(|aside| aside.retain(|a| a.subxact != subxact));
    } else if event == pg_sys::SubXactEvent::SUBXACT_EVENT_COMMIT_SUB {
        ASIDE.with_borrow_mut(|aside| aside.iter_mut().filter(|a| a.subxact == subxact).for_each(|a| a.subxact = parent));
    }
}

/// The names of the columns an `ALTER TABLE`'s subcommands change the type of or drop.
///
/// # Safety
/// `cmds` is the subcommand list of an `AlterTableStmt`.
unsafe fn changed_columns(cmds: *mut pg_sys::List) -> Vec<String> {
    let mut names = Vec::new();
    // SAFETY: an AlterTableStmt's cmds hold AlterTableCmd nodes (see # Safety); a non-null name
    // is a C string.
    unsafe {
        for i in 0..crate::nodes::list_len(cmds) {
            let Some(cmd) = crate::nodes::cast::<pg_sys::AlterTableCmd>(crate::nodes::list_nth(cmds, i), pg_sys::NodeTag::T_AlterTableCmd)
            else {
                continue;
            };
            let changes = matches!((*cmd).subtype, pg_sys::AlterTableType::AT_AlterColumnType | pg_sys::AlterTableType::AT_DropColumn);
            if changes && !(*cmd).name.is_null() {
                names.push(CStr::from_ptr((*cmd).name).to_string_lossy().into_owned());
            }
        }
    }
    names
}

/// The version-1 calling convention of `simhash_routed_ddl_start`, as `PG_FUNCTION_INFO_V1`
/// declares it.
#[unsafe(no_mangle)]
pub extern "C" fn pg_finfo_simhash_routed_ddl_start() -> &'static pg_sys::Pg_finfo_record {
    static V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// `_simhash_routed_ddl_start()`, the event trigger at `ddl_command_start` of `ALTER TABLE`:
/// when the command changes the type of or drops a column of a table whose routed layout's
/// inserts view shows it, sets the view aside for the command's end.
///
/// # Safety
/// Called by PostgreSQL's function manager as an event trigger function.
#[pg_guard]
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn simhash_routed_ddl_start(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: an event trigger's context is its EventTriggerData (checked by tag), whose
    // parsetree is the statement; the lookups below run inside the command's transaction.
    unsafe {
        let context = (*fcinfo).context;
        let Some(data) = crate::nodes::cast::<pg_sys::EventTriggerData>(context, pg_sys::NodeTag::T_EventTriggerData) else {
            crate::errors::feature_not_supported("_simhash_routed_ddl_start() can only be called as an event trigger");
        };
        let Some(stmt) = crate::nodes::cast::<pg_sys::AlterTableStmt>((*data).parsetree, pg_sys::NodeTag::T_AlterTableStmt) else {
            return pg_sys::Datum::from(0);
        };
        let columns = changed_columns((*stmt).cmds);
        if columns.is_empty() || (*stmt).relation.is_null() {
            return pg_sys::Datum::from(0);
        }
        // The command's own lock, after its ownership check (a role that may not alter the
        // table gets the command's error, and no lock it could hold others up with).
        let relid = pg_sys::RangeVarGetRelidExtended(
            (*stmt).relation,
            pg_sys::AlterTableGetLockLevel((*stmt).cmds),
            pg_sys::RVROption::RVR_MISSING_OK,
            Some(owns_relation),
            std::ptr::null_mut(),
        );
        if relid == pg_sys::InvalidOid {
            return pg_sys::Datum::from(0);
        }
        let schema = pg_sys::get_namespace_name(pg_sys::get_func_namespace((*(*fcinfo).flinfo).fn_oid));
        if schema.is_null() {
            return pg_sys::Datum::from(0);
        }
        let schema = CStr::from_ptr(pg_sys::quote_identifier(schema)).to_string_lossy().into_owned();
        let sql = format!("SELECT {schema}._simhash_routed_view_aside($1::pg_catalog.oid::pg_catalog.regclass, $2)");
        let args = [DatumWithOid::from(relid), DatumWithOid::from(columns)];
        let spec = crate::routed_writes::with_snapshot(|| {
            Spi::connect_mut(|client| client.update(sql.as_str(), None, &args)?.first().get_one::<String>())
        })
        .unwrap_or_else(|e| error!("simhash_pg: could not set the inserts view aside: {e}"));
        if let Some(spec) = spec {
            let subxact = pg_sys::GetCurrentSubTransactionId();
            ASIDE.with_borrow_mut(|aside| aside.push(Aside { relid, spec, subxact }));
        }
        pg_sys::Datum::from(0)
    }
}

/// PostgreSQL's `RangeVarCallbackOwnsRelation`, as a callback: an error unless the current
/// role owns the relation.
#[pg_guard]
unsafe extern "C-unwind" fn owns_relation(
    relation: *const pg_sys::RangeVar,
    relid: pg_sys::Oid,
    old_relid: pg_sys::Oid,
    arg: *mut std::ffi::c_void,
) {
    // SAFETY: PostgreSQL calls it from RangeVarGetRelidExtended with its own arguments.
    unsafe { pg_sys::RangeVarCallbackOwnsRelation(relation, relid, old_relid, arg) }
}

/// `_simhash_routed_views_aside(tbls)`: the views set aside for the tables `tbls` (those an
/// ending `ALTER TABLE` altered), forgotten here as they are returned, for
/// `_simhash_routed_ddl` to make them again.
#[pg_extern(volatile, strict, parallel_unsafe, name = "_simhash_routed_views_aside")]
fn simhash_routed_views_aside(
    tbls: Vec<Option<pg_sys::Oid>>,
) -> TableIterator<'static, (name!(tbl, pg_sys::Oid), name!(spec, String))> {
    let taken = ASIDE.with_borrow_mut(|aside| {
        let (taken, kept): (Vec<_>, Vec<_>) = aside.drain(..).partition(|a| tbls.contains(&Some(a.relid)));
        *aside = kept;
        taken
    });
    TableIterator::new(taken.into_iter().map(|a| (a.relid, a.spec)))
}
