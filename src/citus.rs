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
