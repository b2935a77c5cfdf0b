//! Citus: tables whose rows live in shards.
//!
//! On a Citus coordinator (and on every worker, which Citus gives the same metadata) a
//! distributed, reference or Citus-local table is a shell: it has the block columns and indexes
//! `simhash_create_index` made, but its rows are in shards, tables of their own with indexes of
//! their own. Citus sends each shard the query as the node it arrived on planned it, so a call
//! rewritten there to read the shell's indexes would reach every shard naming indexes that are
//! not its own, and find nothing. The planner therefore leaves calls on such tables as they are;
//! each shard's planner rewrites them to its own indexes.

use pgrx::pg_sys;

/// Whether Citus manages `relid`: it has a row in `pg_catalog.pg_dist_partition` (distributed,
/// reference and Citus-local tables; shards do not). False where Citus is not installed.
///
/// # Safety
/// Must run inside a transaction (catalog reads).
pub unsafe fn manages(relid: pg_sys::Oid) -> bool {
    // SAFETY: inside a transaction (the caller's contract, see # Safety): the catalog is opened,
    // scanned and closed here under AccessShareLock, and `key` outlives the scan.
    unsafe {
        let catalog_oid = pg_sys::get_relname_relid(c"pg_dist_partition".as_ptr(), pg_sys::Oid::from(pg_sys::PG_CATALOG_NAMESPACE));
        if catalog_oid == pg_sys::InvalidOid {
            return false;
        }
        let catalog = pg_sys::table_open(catalog_oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        // logicalrelid, the first column, is a regclass: an OID.
        let mut key = pg_sys::ScanKeyData::default();
        pg_sys::ScanKeyInit(
            &mut key,
            1,
            pg_sys::BTEqualStrategyNumber as pg_sys::StrategyNumber,
            pg_sys::Oid::from(pg_sys::F_OIDEQ),
            pg_sys::Datum::from(relid),
        );
        let scan = pg_sys::systable_beginscan(catalog, pg_sys::InvalidOid, false, std::ptr::null_mut(), 1, &mut key);
        let found = !pg_sys::systable_getnext(scan).is_null();
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(catalog, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        found
    }
}

/// Whether this node is the Citus coordinator (its group in `pg_dist_local_group` is 0), or a
/// server without Citus. A routed layout knows its routes, changes table and view by their
/// OIDs on the coordinator (sql/routed.sql), which name nothing, or another table, on a worker:
/// there a write through the layout's pieces would leave rows without routes, and a lookup read
/// the wrong table (issue 67). So routed layouts are read and written on the coordinator only.
///
/// # Safety
/// Must run inside a transaction (catalog reads).
pub unsafe fn on_coordinator() -> bool {
    // SAFETY: inside a transaction (see # Safety): the catalog is opened, its one row read with
    // its own descriptor, and everything closed here.
    unsafe {
        let catalog_oid = pg_sys::get_relname_relid(c"pg_dist_local_group".as_ptr(), pg_sys::Oid::from(pg_sys::PG_CATALOG_NAMESPACE));
        if catalog_oid == pg_sys::InvalidOid {
            return true;
        }
        let catalog = pg_sys::table_open(catalog_oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let scan = pg_sys::systable_beginscan(catalog, pg_sys::InvalidOid, false, std::ptr::null_mut(), 0, std::ptr::null_mut());
        let tuple = pg_sys::systable_getnext(scan);
        let mut coordinator = true;
        if !tuple.is_null() {
            let mut isnull = false;
            // groupid, the first column, an int4.
            let group = pg_sys::heap_getattr(tuple, 1, (*catalog).rd_att, &mut isnull);
            coordinator = isnull || group.value() as i32 == 0;
        }
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(catalog, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        coordinator
    }
}

/// `_simhash_citus_table(tbl)`: the same test for the SQL helpers, which cannot name rows by
/// `ctid` on such a table (each shard numbers its own rows) and read it differently.
#[pgrx::pg_extern(
    sql = r#"
CREATE FUNCTION _simhash_citus_table(tbl regclass) RETURNS bool
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
"#
)]
fn _simhash_citus_table(tbl: pg_sys::Oid) -> bool {
    // SAFETY: SQL functions run inside a transaction.
    unsafe { manages(tbl) }
}

/// Makes the current transaction a distributed one on Citus (`UseCoordinatedTransaction`, which
/// Citus calls itself before a write that must commit or roll back with the rest): every later
/// distributed statement of the transaction then runs inside a transaction block on its nodes,
/// which carries the transaction's `SET LOCAL`s and commits with it. Without it Citus runs a
/// single-shard write outside a transaction block, committed on its node at once. False where
/// Citus is not loaded.
///
/// # Safety
/// Inside a transaction.
pub unsafe fn use_coordinated_transaction() -> bool {
    thread_local! {
        /// The function, found once per process (Citus, preloaded, stays loaded).
        static FOUND: std::cell::Cell<Option<unsafe extern "C-unwind" fn()>> = const { std::cell::Cell::new(None) };
    }
    // SAFETY: load_external_function looks a symbol up in a library (Citus is preloaded wherever
    // it runs; "citus" is found as PostgreSQL finds it, through dynamic_library_path) and
    // returns it, or NULL with signalNotFound false; the symbol is Citus's `void
    // UseCoordinatedTransaction(void)`, which it exports for its own modules.
    unsafe {
        let function = match FOUND.get() {
            Some(function) => function,
            None => {
                let function = pg_sys::load_external_function(c"citus".as_ptr(), c"UseCoordinatedTransaction".as_ptr(), false, std::ptr::null_mut());
                // (A PGFunction before PostgreSQL 14, a plain pointer after.)
                #[cfg(feature = "pg13")]
                let function: *const () = match function {
                    Some(f) => f as *const (),
                    None => std::ptr::null(),
                };
                #[cfg(not(feature = "pg13"))]
                let function: *const () = function.cast_const().cast();
                if function.is_null() {
                    return false;
                }
                let function: unsafe extern "C-unwind" fn() = std::mem::transmute(function);
                FOUND.set(Some(function));
                function
            }
        };
        pgrx::pg_sys::ffi::pg_guard_ffi_boundary(|| function());
        true
    }
}
