//! The guard (`simhash_guard`, sql/etl.sql): two row triggers that keep a table free of two rows
//! within k bits of each other, whatever writes them (INSERT, COPY, UPDATE, any session or ORM).
//!
//! - `_simhash_guard_row`, BEFORE INSERT OR UPDATE: looks the new fingerprint up in the
//!   table as it is now (rows committed so far, and this transaction's, the statement's earlier
//!   rows among them) and refuses the row (23P01) or skips it. It cannot see rows that other
//!   transactions have not committed yet, so by itself it is not enough.
//! - `_simhash_guard_check`, a deferred constraint trigger AFTER INSERT OR UPDATE: at commit it
//!   takes the guarded table's lock (an advisory lock SQL cannot take) and holds it until commit.
//!   It looks each row this transaction wrote up again, in the latest snapshot (also under
//!   REPEATABLE READ), leaving out the row itself. Guarded transactions so check one at a time,
//!   each after the ones before it have committed, and the later of two near rows always sees
//!   the earlier one. This is the uniqueness argument of an exclusion constraint, with the
//!   index's wait replaced by the lock.
//!
//! The lookups run as the owner of the guarded table, as PostgreSQL's foreign-key checks do, so
//! a writer needs no SELECT on it. A conflict shows the other row's fingerprint only to a writer
//! who may read that column.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

use crate::errors;

/// What `simhash_guard` wrote into the triggers' arguments (the column, k, the mode), and the
/// guarded table: the one they were made on (partitions carry copies of its triggers).
struct GuardArgs {
    col: CString,
    k: i32,
    skip: bool,
    guarded: pg_sys::Oid,
}

thread_local! {
    /// Prepared lookups by query text and argument types, kept for the session (`SPI_keepplan`).
    /// The plan cache replans them after DDL; a renamed table or column gives a new text.
    static PLANS: RefCell<HashMap<(Vec<u8>, Vec<u32>), usize>> = RefCell::new(HashMap::new());
    /// The table each trigger guards, by trigger OID and table (`guarded_table`).
    static GUARDED: RefCell<HashMap<(u32, u32), u32>> = RefCell::new(HashMap::new());
    /// The transaction and command (the active snapshot's) of the last UPDATE our BEFORE trigger
    /// saw: an INSERT in the same command is a row moving to another partition, which must never
    /// be skipped (the row would be lost).
    static UPDATING: std::cell::Cell<Option<(pg_sys::TransactionId, pg_sys::CommandId)>> = const { std::cell::Cell::new(None) };
}

fn misuse(function: &str) -> ! {
    errors::report(
        PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
        format!("{function}: a row trigger made by simhash_guard, not to be called otherwise"),
        None,
        Some("Use SELECT simhash_guard(table, column, k) to guard a table."),
    )
}

/// The trigger's arguments, as `simhash_guard` writes them: (col, k, 'error' | 'skip'); the
/// guarded table is the one the trigger was made on (`guarded_table`), never an argument, so
/// that a dump restored elsewhere (new OIDs) keeps working.
fn guard_args(trigger: &PgTrigger<'_>, function: &str) -> GuardArgs {
    let t = trigger.trigger();
    let nargs = usize::try_from(t.tgnargs).unwrap_or(0);
    if nargs != 3 || t.tgargs.is_null() {
        misuse(function);
    }
    // SAFETY: PostgreSQL gives tgnargs NUL-terminated strings in tgargs (checked non-NULL).
    let args: Vec<&CStr> = unsafe { std::slice::from_raw_parts(t.tgargs, nargs).iter().map(|a| CStr::from_ptr(*a)).collect() };
    let k = args[1].to_str().ok().and_then(|s| s.parse::<i32>().ok()).filter(|k| (0..=63).contains(k));
    let skip = match args[2].to_bytes() {
        b"error" => Some(false),
        b"skip" => Some(true),
        _ => None,
    };
    match (k, skip) {
        // SAFETY: the trigger is the one PostgreSQL fires.
        (Some(k), Some(skip)) => GuardArgs { col: args[0].to_owned(), k, skip, guarded: unsafe { guarded_table(trigger) } },
        _ => misuse(function),
    }
}

/// The table the trigger guards: the one its root trigger (a partition's is cloned from its
/// parent's, tgparentid) was made on, with this function. Its lookups run as that table's
/// owner, so the table must never come from anything a trigger's maker can choose.
unsafe fn guarded_table(trigger: &PgTrigger<'_>) -> pg_sys::Oid {
    let t = trigger.trigger();
    // SAFETY: the trigger's relation is open.
    let oid = (u32::from(t.tgoid), u32::from(unsafe { (*trigger.trigger_data().tg_relation).rd_id }));
    if let Some(rel) = GUARDED.with(|v| v.borrow().get(&oid).copied()) {
        return pg_sys::Oid::from(rel);
    }
    // SAFETY: SPI inside a connection opened and closed here; operators named in pg_catalog.
    let rel = unsafe {
        if pg_sys::SPI_connect() != pg_sys::SPI_OK_CONNECT as i32 {
            errors::report(PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, "simhash_guard: SPI_connect failed", None, None);
        }
        let p = plan(
            b"WITH RECURSIVE up(oid, parent, rel, fn, depth) AS (
                SELECT t.oid, t.tgparentid, t.tgrelid, t.tgfoid, 0 FROM pg_catalog.pg_trigger t WHERE t.oid OPERATOR(pg_catalog.=) $1
                UNION ALL
                SELECT t.oid, t.tgparentid, t.tgrelid, t.tgfoid, up.depth OPERATOR(pg_catalog.+) 1
                  FROM pg_catalog.pg_trigger t, up
                 WHERE t.oid OPERATOR(pg_catalog.=) up.parent AND up.depth OPERATOR(pg_catalog.<) 1000)
              SELECT up.rel::pg_catalog.int8::pg_catalog.text FROM up
               WHERE up.parent OPERATOR(pg_catalog.=) 0 AND up.fn OPERATOR(pg_catalog.=) $2"
                .to_vec(),
            &[pg_sys::OIDOID, pg_sys::OIDOID],
        );
        let row = first_row(p, &[Some(pg_sys::Datum::from(t.tgoid)), Some(pg_sys::Datum::from(t.tgfoid))], 1);
        pg_sys::SPI_finish();
        row.and_then(|r| r.into_iter().next().flatten()).and_then(|s| s.parse::<u32>().ok())
    };
    let Some(rel) = rel else { misuse("simhash_guard") };
    GUARDED.with(|v| v.borrow_mut().insert(oid, rel));
    pg_sys::Oid::from(rel)
}

/// A relation's schema-qualified, quoted name (NULL bytes never occur in names).
unsafe fn qualified_name(rel: pg_sys::Oid) -> Option<Vec<u8>> {
    // SAFETY: syscache lookups; NULL when the relation is gone.
    unsafe {
        let name = pg_sys::get_rel_name(rel);
        if name.is_null() {
            return None;
        }
        let schema = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(rel));
        if schema.is_null() {
            return None;
        }
        Some(CStr::from_ptr(pg_sys::quote_qualified_identifier(schema, name)).to_bytes().to_vec())
    }
}

/// A name for messages: the relation's, or its OID where it is not UTF-8 (an EUC database).
unsafe fn display_name(rel: pg_sys::Oid) -> String {
    // SAFETY: see qualified_name.
    unsafe { qualified_name(rel) }
        .and_then(|n| String::from_utf8(n).ok())
        .unwrap_or_else(|| format!("relation with OID {}", u32::from(rel)))
}

fn quoted(name: &CStr) -> Vec<u8> {
    // SAFETY: quote_identifier takes and returns a NUL-terminated string.
    unsafe { CStr::from_ptr(pg_sys::quote_identifier(name.as_ptr())).to_bytes().to_vec() }
}

/// The prepared plan of `query` (kept for the session).
unsafe fn plan(query: Vec<u8>, types: &[pg_sys::Oid]) -> pg_sys::SPIPlanPtr {
    let key = (query, types.iter().map(|t| u32::from(*t)).collect::<Vec<_>>());
    if let Some(p) = PLANS.with(|m| m.borrow().get(&key).copied()) {
        return p as pg_sys::SPIPlanPtr;
    }
    let text = CString::new(key.0.clone()).unwrap_or_else(|_| misuse("simhash_guard"));
    let mut types = types.to_vec();
    // SAFETY: SPI is connected (the callers), the text is NUL-terminated, types has nargs OIDs.
    unsafe {
        let p = pg_sys::SPI_prepare(text.as_ptr(), types.len() as i32, types.as_mut_ptr());
        if p.is_null() || pg_sys::SPI_keepplan(p) != 0 {
            errors::report(PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, "simhash_guard: could not prepare a lookup", None, None);
        }
        PLANS.with(|m| m.borrow_mut().insert(key, p as usize));
        p
    }
}

/// Runs `plan` with `values` (None: NULL) and returns its first row's text columns, if any. Under
/// REPEATABLE READ and SERIALIZABLE in the latest snapshot, as foreign-key checks do: a
/// transaction snapshot would miss the rows committed since it was taken.
unsafe fn first_row(plan: pg_sys::SPIPlanPtr, values: &[Option<pg_sys::Datum>], columns: i32) -> Option<Vec<Option<String>>> {
    let mut datums: Vec<pg_sys::Datum> = values.iter().map(|v| v.unwrap_or(pg_sys::Datum::from(0))).collect();
    let nulls: Vec<c_char> = values.iter().map(|v| if v.is_some() { b' ' as c_char } else { b'n' as c_char }).collect();
    // SAFETY: SPI is connected; datums and nulls have the plan's number of arguments.
    unsafe {
        let snapshot = if pg_sys::XactIsoLevel >= pg_sys::XACT_REPEATABLE_READ as i32 {
            pg_sys::GetLatestSnapshot()
        } else {
            std::ptr::null_mut()
        };
        let rc = pg_sys::SPI_execute_snapshot(plan, datums.as_mut_ptr(), nulls.as_ptr(), snapshot, std::ptr::null_mut(), false, false, 1);
        if rc != pg_sys::SPI_OK_SELECT as i32 {
            errors::report(PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, format!("simhash_guard: a lookup failed ({rc})"), None, None);
        }
        if pg_sys::SPI_processed == 0 || pg_sys::SPI_tuptable.is_null() {
            return None;
        }
        let table = &*pg_sys::SPI_tuptable;
        let row = *table.vals;
        Some(
            (1..=columns)
                .map(|c| {
                    let v = pg_sys::SPI_getvalue(row, table.tupdesc, c);
                    (!v.is_null()).then(|| CStr::from_ptr(v).to_string_lossy().into_owned())
                })
                .collect(),
        )
    }
}

/// Runs `f` as `owner` (row-level security of the owner's own tables off, as in foreign-key
/// checks), back as the caller afterwards, also when `f` raises an ERROR.
unsafe fn as_owner<T>(owner: pg_sys::Oid, f: impl FnOnce() -> T) -> T {
    struct Restore(pg_sys::Oid, i32);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: restores what GetUserIdAndSecContext returned.
            unsafe { pg_sys::SetUserIdAndSecContext(self.0, self.1) }
        }
    }
    let mut user = pg_sys::InvalidOid;
    let mut context = 0;
    // SAFETY: plain reads and writes of the backend's current user.
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
        let _restore = Restore(user, context);
        pg_sys::SetUserIdAndSecContext(
            owner,
            context | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32 | pg_sys::SECURITY_NOFORCE_RLS as i32,
        );
        f()
    }
}

/// What a lookup found: the other row's fingerprint and this row's, as text.
struct Near {
    other: Option<String>,
    this: Option<String>,
}

/// Another row of the guarded table (not leaf's row at `own`) within k bits of `fp` (a value of
/// `fp_type`), if any; as the guarded table's owner.
unsafe fn near_row(
    trigger: &PgTrigger<'_>,
    args: &GuardArgs,
    fp: pg_sys::Datum,
    fp_type: pg_sys::Oid,
    leaf: pg_sys::Oid,
    own: Option<pg_sys::ItemPointerData>,
) -> Option<Near> {
    // SAFETY: syscache lookups, and SPI inside a connection this function opens and closes.
    unsafe {
        let (Some(guarded), Some(owner)) = (qualified_name(args.guarded), rel_owner(args.guarded)) else {
            errors::report(
                PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
                format!("simhash_guard: the guarded table (OID {}) no longer exists", u32::from(args.guarded)),
                None,
                Some("Drop the trigger, or guard the table again with simhash_guard."),
            );
        };
        // The extension's own functions, in the schema of the trigger's function.
        let schema = pg_sys::get_namespace_name(pg_sys::get_func_namespace(trigger.trigger().tgfoid));
        if schema.is_null() {
            misuse("simhash_guard");
        }
        let is_set = pg_sys::get_element_type(fp_type) != pg_sys::InvalidOid;
        let col = quoted(&args.col);
        let mut q = b"SELECT t.".to_vec();
        q.extend_from_slice(&col);
        // A plain table's own rows only (ONLY), as PostgreSQL's constraints: its inheritance
        // children are not guarded by its triggers; a partitioned table's are its partitions'.
        q.extend_from_slice(if pg_sys::get_rel_relkind(args.guarded) == pg_sys::RELKIND_PARTITIONED_TABLE as c_char {
            b"::pg_catalog.text, $1::pg_catalog.text FROM ".as_slice()
        } else {
            b"::pg_catalog.text, $1::pg_catalog.text FROM ONLY ".as_slice()
        });
        q.extend_from_slice(&guarded);
        q.extend_from_slice(b" t WHERE ");
        q.extend_from_slice(&quoted(CStr::from_ptr(schema)));
        q.extend_from_slice(if is_set { b".simhash_near_any(t." } else { b".simhash_near(t." });
        q.extend_from_slice(&col);
        q.extend_from_slice(format!(", $1, {}) AND NOT (t.tableoid OPERATOR(pg_catalog.=) $2 AND t.ctid OPERATOR(pg_catalog.=) $3) LIMIT 1", args.k).as_bytes());
        let mut tid = own.unwrap_or_default();
        if pg_sys::SPI_connect() != pg_sys::SPI_OK_CONNECT as i32 {
            errors::report(PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, "simhash_guard: SPI_connect failed", None, None);
        }
        let values = [Some(fp), Some(pg_sys::Datum::from(leaf)), Some(pg_sys::Datum::from(&raw mut tid))];
        // Prepared as the owner too: the writer may lack USAGE on the table's schema.
        let row = as_owner(owner, || first_row(plan(q, &[fp_type, pg_sys::OIDOID, pg_sys::TIDOID]), &values, 2));
        let found = row.map(|mut r| {
            let this = r.pop().flatten();
            let other = r.pop().flatten();
            Near { other: other.filter(|_| may_read(args)), this }
        });
        pg_sys::SPI_finish();
        found
    }
}

unsafe fn rel_owner(rel: pg_sys::Oid) -> Option<pg_sys::Oid> {
    // SAFETY: a syscache lookup, released before returning.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(pg_sys::SysCacheIdentifier::RELOID as i32, pg_sys::Datum::from(rel));
        if tuple.is_null() {
            return None;
        }
        let form = pg_sys::GETSTRUCT(tuple) as *const pg_sys::FormData_pg_class;
        let owner = (*form).relowner;
        pg_sys::ReleaseSysCache(tuple);
        Some(owner)
    }
}

/// Whether the writer may read the guarded column (else a conflict does not show its value).
unsafe fn may_read(args: &GuardArgs) -> bool {
    // SAFETY: catalog lookups for the current user.
    unsafe {
        let attnum = pg_sys::get_attnum(args.guarded, args.col.as_ptr());
        // Not where row-level security hides rows from the writer (as PostgreSQL's own key
        // descriptions): the near row may be one of them.
        pg_sys::check_enable_rls(args.guarded, pg_sys::InvalidOid, true) == pg_sys::CheckEnableRlsResult::RLS_NONE as i32
            && attnum != pg_sys::InvalidAttrNumber as i16
            && (pg_sys::pg_class_aclcheck(args.guarded, pg_sys::GetUserId(), pg_sys::ACL_SELECT as pg_sys::AclMode)
                == pg_sys::AclResult::ACLCHECK_OK
                || pg_sys::pg_attribute_aclcheck(args.guarded, attnum, pg_sys::GetUserId(), pg_sys::ACL_SELECT as pg_sys::AclMode)
                    == pg_sys::AclResult::ACLCHECK_OK)
    }
}

/// The guarded column of the trigger's table (its attribute), or an ERROR: a renamed or dropped
/// column stops writes rather than let rows in unchecked.
unsafe fn column(rel: pg_sys::Relation, args: &GuardArgs) -> (i16, pg_sys::FormData_pg_attribute) {
    // SAFETY: the trigger's relation is open.
    unsafe {
        match crate::table_info::attnum_of(rel, args.col.to_bytes()) {
            Some(n) => (n, crate::compat::attributes((*rel).rd_att)[n as usize - 1]),
            None => errors::report(
                PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
                format!(
                    "simhash_guard: {} has no column {} (renamed or dropped since simhash_guard)",
                    display_name((*rel).rd_id),
                    args.col.to_string_lossy()
                ),
                None,
                Some("Drop the guard with simhash_drop_guard and guard the column under its new name."),
            ),
        }
    }
}

/// The column's value in `tuple`; a stored generated column's computed from the row, as
/// PostgreSQL will store it (in a BEFORE trigger the tuple does not hold it yet).
unsafe fn value(rel: pg_sys::Relation, tuple: pg_sys::HeapTuple, attnum: i16, att: &pg_sys::FormData_pg_attribute, computed: bool) -> Option<pg_sys::Datum> {
    // SAFETY: the tuple and relation are the trigger's; the executor state is freed before
    // returning, the value copied out of it first.
    unsafe {
        if !(computed && att.attgenerated != 0) {
            return pgrx::heap_getattr_raw(tuple, std::num::NonZeroUsize::new(attnum as usize)?, (*rel).rd_att);
        }
        let estate = pg_sys::CreateExecutorState();
        let caller = pg_sys::MemoryContextSwitchTo((*estate).es_query_cxt);
        let expr = pg_sys::build_column_default(rel, attnum as i32) as *mut pg_sys::Expr;
        let state = pg_sys::ExecPrepareExpr(expr, estate);
        let econtext = pg_sys::CreateExprContext(estate);
        let slot = pg_sys::MakeSingleTupleTableSlot((*rel).rd_att, &pg_sys::TTSOpsHeapTuple);
        pg_sys::ExecStoreHeapTuple(tuple, slot, false);
        (*econtext).ecxt_scantuple = slot;
        let mut isnull = false;
        let d = pg_sys::ExecEvalExprSwitchContext(state, econtext, &mut isnull);
        pg_sys::MemoryContextSwitchTo(caller);
        let d = (!isnull).then(|| {
            if att.attbyval {
                d
            } else {
                pg_sys::Datum::from(pg_sys::pg_detoast_datum_copy(d.cast_mut_ptr()))
            }
        });
        pg_sys::ExecDropSingleTupleTableSlot(slot);
        pg_sys::FreeExecutorState(estate);
        d
    }
}

fn conflict(rel: &str, args: &GuardArgs, near: Near, at_commit: bool) -> ! {
    let col = args.col.to_string_lossy();
    let this = near.this.unwrap_or_default();
    let detail = match near.other {
        Some(other) => format!("Key ({col})=({this}) is within {} bits of existing key ({col})=({other}).", args.k),
        None => format!("Key ({col})=({this}) is within {} bits of another row.", args.k),
    };
    if at_commit && args.skip {
        errors::report(
            PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
            format!("simhash_guard: could not serialize access to {rel}: a concurrent transaction committed a row within {} bits of a row this one wrote", args.k),
            Some(detail),
            Some("Retry the transaction: it then skips that row."),
        )
    }
    errors::report(
        PgSqlErrorCode::ERRCODE_EXCLUSION_VIOLATION,
        format!("simhash_guard: a row of {rel} within {} bits of this one {}", args.k, if at_commit { "was committed meanwhile" } else { "exists" }),
        Some(detail),
        Some("The table is guarded by simhash_guard: no two rows within k bits. With on_conflict => 'skip' such rows are left out instead."),
    )
}

/// BEFORE INSERT OR UPDATE, FOR EACH ROW (every UPDATE, to know when an INSERT is a row moving
/// to another partition): refuse (23P01) or skip a row within k bits of another row of the
/// guarded table, as the table is now.
fn guard_row<'a>(trigger: &'a PgTrigger<'a>) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgTriggerError> {
    let args = guard_args(trigger, "_simhash_guard_row");
    let op = trigger.op()?;
    if !matches!(trigger.when()?, PgTriggerWhen::Before) || !matches!(trigger.level(), PgTriggerLevel::Row)
        || !matches!(op, PgTriggerOperation::Insert | PgTriggerOperation::Update)
    {
        misuse("_simhash_guard_row");
    }
    let data = trigger.trigger_data();
    let update = matches!(op, PgTriggerOperation::Update);
    // SAFETY: the trigger's relation and tuples, valid for the call.
    unsafe {
        // The command is the one of the statement's snapshot: the command counter itself moves
        // on with every lookup (SPI) a trigger makes. (It counts as used, so that the next
        // statement has a new one.)
        pg_sys::GetCurrentCommandId(true);
        let command = (pg_sys::GetTopTransactionId(), (*pg_sys::GetActiveSnapshot()).curcid);
        let moving = !update && UPDATING.with(|u| u.get()) == Some(command);
        if update {
            UPDATING.with(|u| u.set(Some(command)));
        }
        let rel = data.tg_relation;
        let (attnum, att) = column(rel, &args);
        let new = if update { data.tg_newtuple } else { data.tg_trigtuple };
        let Some(fp) = value(rel, new, attnum, &att, true) else {
            return Ok(trigger.new());
        };
        let own = if update {
            let old = value(rel, data.tg_trigtuple, attnum, &att, false);
            if att.attbyval && old == Some(fp) {
                return Ok(trigger.new()); // the fingerprint stays
            }
            Some((*data.tg_trigtuple).t_self)
        } else {
            None
        };
        match near_row(trigger, &args, fp, att.atttypid, (*rel).rd_id, own) {
            None => Ok(trigger.new()),
            // (A row moving to another partition is already deleted from its old one: left
            // out, it would be lost. It is refused.)
            Some(_) if args.skip && !moving => Ok(None),
            Some(near) => conflict(&display_name(args.guarded), &args, near, false),
        }
    }
}

/// Deferred AFTER INSERT OR UPDATE, FOR EACH ROW: at commit, under the guarded table's lock
/// (`lock_guarded`, held to commit), the row this transaction wrote, if still its live version,
/// looked up again in the latest snapshot: a near row committed meanwhile fails the commit (23P01; with skip,
/// 40001, and the retry's BEFORE check skips the row).
fn guard_check<'a>(trigger: &'a PgTrigger<'a>) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgTriggerError> {
    let args = guard_args(trigger, "_simhash_guard_check");
    let op = trigger.op()?;
    if !matches!(trigger.when()?, PgTriggerWhen::After) || !matches!(trigger.level(), PgTriggerLevel::Row)
        || !matches!(op, PgTriggerOperation::Insert | PgTriggerOperation::Update)
    {
        misuse("_simhash_guard_check");
    }
    let data = trigger.trigger_data();
    let update = matches!(op, PgTriggerOperation::Update);
    // SAFETY: the trigger's relation, tuples and slots, valid for the call.
    unsafe {
        let rel = data.tg_relation;
        let (attnum, att) = column(rel, &args);
        let (tuple, slot) = if update { (data.tg_newtuple, data.tg_newslot) } else { (data.tg_trigtuple, data.tg_trigslot) };
        let Some(fp) = value(rel, tuple, attnum, &att, false) else {
            return Ok(None);
        };
        if update {
            // An update that kept the fingerprint of a row written before this transaction
            // brings no new fingerprint: the row was checked when it was written.
            let old = value(rel, data.tg_trigtuple, attnum, &att, false);
            // (The raw xmin: a tuple this transaction froze (COPY FREEZE) still names it.)
            let xmin = (*(*data.tg_trigtuple).t_data).t_choice.t_heap.t_xmin;
            if att.attbyval && old == Some(fp) && !pg_sys::TransactionIdIsCurrentTransactionId(xmin) {
                return Ok(None);
            }
        }
        // A version this transaction has since updated or deleted: its successor has an event
        // of its own, or is gone.
        let Some(satisfies) = (*(*rel).rd_tableam).tuple_satisfies_snapshot else {
            errors::feature_not_supported(format!(
                "simhash_guard: the table access method of {} cannot tell whether a row is still live",
                display_name((*rel).rd_id)
            ));
        };
        if !satisfies(rel, slot, &raw mut pg_sys::SnapshotSelfData) {
            return Ok(None);
        }
        lock_guarded(args.guarded);
        if let Some(near) = near_row(trigger, &args, fp, att.atttypid, (*rel).rd_id, Some((*tuple).t_self)) {
            conflict(&display_name(args.guarded), &args, near, true);
        }
        Ok(None)
    }
}

/// The lock of guarded table `rel`, held to commit: an advisory lock tag of its own (field 4 is
/// 3, where SQL's advisory locks use 1 and 2), so that no role can take it from SQL and stall
/// guarded commits; the deadlock detector and pg_locks see it as any advisory lock.
unsafe fn lock_guarded(rel: pg_sys::Oid) {
    let tag = pg_sys::LOCKTAG {
        // SAFETY: a plain read of the backend's database.
        locktag_field1: u32::from(unsafe { pg_sys::MyDatabaseId }),
        locktag_field2: u32::from(rel),
        locktag_field3: 0x5348_4755, // "SHGU"
        locktag_field4: 3,
        locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
        locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
    };
    // SAFETY: a transaction-level lock (released at commit or abort), waited for.
    unsafe {
        pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as pg_sys::LOCKMODE, false, false);
    }
}

// The two functions PostgreSQL calls, written out rather than by `#[pg_trigger]`, whose wrapper
// answers a call from SQL (`SELECT _simhash_guard_row()`, which PostgreSQL lets through for C
// functions) with an internal error (XX000); here it is 39P01, as PostgreSQL's own trigger
// functions answer it.
extension_sql!(
    r#"
CREATE FUNCTION _simhash_guard_row() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_guard_row_wrapper';
CREATE FUNCTION _simhash_guard_check() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_guard_check_wrapper';
"#,
    name = "guard_triggers",
);

/// Runs `body` on the trigger PostgreSQL called us for, or refuses (39P01) a call that is not
/// one, and hands PostgreSQL the row to store (NULL: skip it).
unsafe fn fire(
    fcinfo: pg_sys::FunctionCallInfo,
    function: &str,
    body: for<'a> fn(&'a PgTrigger<'a>) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgTriggerError>,
) -> pg_sys::Datum {
    // SAFETY: fcinfo is PostgreSQL's; from_fcinfo checks CALLED_AS_TRIGGER first.
    let Some(trigger) = (unsafe { fcinfo.as_ref() }).and_then(|f| unsafe { PgTrigger::from_fcinfo(f) }.ok()) else {
        misuse(function)
    };
    // (Bound first: a tail expression's temporaries would outlive `trigger`.)
    #[allow(clippy::let_and_return)]
    let datum = match body(&trigger) {
        Ok(Some(tuple)) => tuple.into_trigger_datum().unwrap_or(pg_sys::Datum::from(0)),
        Ok(None) => pg_sys::Datum::from(0),
        Err(e) => errors::report(PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED, format!("{function}: {e}"), None, None),
    };
    datum
}

#[no_mangle]
#[doc(hidden)]
pub extern "C" fn pg_finfo__simhash_guard_row_wrapper() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// BEFORE INSERT OR UPDATE row trigger (`guard_row`).
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn _simhash_guard_row_wrapper(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: called by PostgreSQL with its fcinfo.
    unsafe { fire(fcinfo, "_simhash_guard_row", guard_row) }
}

#[no_mangle]
#[doc(hidden)]
pub extern "C" fn pg_finfo__simhash_guard_check_wrapper() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// Deferred AFTER INSERT OR UPDATE row trigger (`guard_check`).
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn _simhash_guard_check_wrapper(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: called by PostgreSQL with its fcinfo.
    unsafe { fire(fcinfo, "_simhash_guard_check", guard_check) }
}
