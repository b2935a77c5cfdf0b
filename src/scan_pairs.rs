//! `simhash_pairs` on a table read row by row into memory: a fingerprint and an 8-byte key a row
//! (an integer key column, or the row's ctid), 32 bytes a row with the sorted passes' entries,
//! where the arrays of `_simhash_close_pairs` take about 120 and stop at 60M rows (PostgreSQL's
//! 1 GB allocation limit). 100M rows take about 3.2 GB and under two minutes (BENCHMARKS.md,
//! *All near pairs and groups*). The pairs are found by `simhash_core::memory_pairs`, as in the
//! arrays' path.
//!
//! The table and its columns come by identity (OID, attnum) and are quoted here; the query is a
//! read-only cursor run as the caller, so privileges and row security apply as to any SELECT.

use std::ffi::CStr;
use std::time::Instant;

use pgrx::prelude::*;
use simhash_core::memory::{MemoryError, Meter};
use simhash_core::memory_pairs::{self, Rows};

use crate::args::Table;
use crate::errors;
use crate::memory;

/// Rows fetched from the cursor at a time.
const FETCH_ROWS: std::ffi::c_long = 10_000;

/// Every pair `(a, b, distance)` of rows of `tbl` within `k` bits, `a <= b`, each pair once,
/// rows named by the key column `key_attnum` (`int2`, `int4` or `int8`, read as `int8`) or,
/// when it is 0, by ctid packed as `block << 16 | offset` (a table without children only:
/// ctids repeat across tables). Rows whose fingerprint or key is NULL are skipped.
/// `rows_estimate` sizes the vectors at first. The memory is counted against
/// `maintenance_work_mem` (at least 1 GB): past it SQLSTATE 54000, an allocation the system
/// refuses 53200. A cancel stops it; a NOTICE every 2 s or so says how far it is.
#[pg_extern(stable, strict, parallel_restricted)]
fn _simhash_scan_pairs(
    tbl: Table,
    fp_attnum: i16,
    key_attnum: i16,
    k: i32,
    rows_estimate: f64,
) -> TableIterator<'static, (name!(a, i64), name!(b, i64), name!(distance, i32))> {
    let key_attnum = (key_attnum != 0).then_some(key_attnum);
    let k = u32::try_from(k)
        .ok()
        .filter(|&k| k <= 64)
        .unwrap_or_else(|| errors::invalid_parameter(format!("k must be between 0 and 64, got {k}")));
    let started = Instant::now();
    let mut meter = memory::etl_meter("simhash_pairs reading the table into memory");
    // A ctid names a row only in a table of its own: not across inheritance children or
    // partitions, and a view or foreign table has none of the heap's.
    // SAFETY: the relation is open (Table), so its pg_class row is valid.
    let (kind, children) = unsafe { ((*tbl.rd_rel).relkind as u8, (*tbl.rd_rel).relhassubclass) };
    if key_attnum.is_none() && (!matches!(kind, b'r' | b'm') || children) {
        errors::invalid_parameter(format!(
            "{} is read by ctid only when it is a table or materialized view without child tables",
            // SAFETY: inside a transaction (a function call).
            unsafe { crate::index_probe::relation_name(tbl.oid()) }
        ));
    }
    let query = scan_query(tbl.oid(), fp_attnum, key_attnum);
    let (fps, keys) = read_rows(&query, key_attnum.is_none(), rows_estimate, &mut meter, started)
        .unwrap_or_else(|e| errors::memory("simhash_pairs", e));
    let rows = Rows::single(fps);
    let method = memory_pairs::choose(&rows, k);
    let pairs = memory_pairs::pairs(rows, k, method, &mut meter, crate::etl::pairs_progress(started))
        .unwrap_or_else(|e| errors::memory("simhash_pairs", e));
    TableIterator::new(pairs.map(move |(i, j, d)| {
        let (x, y) = (keys[i], keys[j]);
        (x.min(y), x.max(y), d as i32)
    }))
}

/// Bytes `_simhash_scan_pairs` takes for a table of about `rows` rows
/// (`simhash_core::memory_pairs::SCAN_ROW_BYTES` a row): `simhash_pairs` reads a table this
/// way when they fit `maintenance_work_mem`. NULL for a negative or infinite count.
#[pg_extern(immutable, strict, parallel_safe)]
fn _simhash_scan_pairs_memory(rows: f64) -> Option<f64> {
    (rows.is_finite() && rows >= 0.0).then_some(rows * memory_pairs::SCAN_ROW_BYTES)
}

/// `SELECT fp::int8, key FROM tbl` for the columns' numbers, names quoted, as a C string in the
/// database's encoding. An attnum that names no live column is SQLSTATE 22023.
fn scan_query(tbl: pg_sys::Oid, fp_attnum: i16, key_attnum: Option<i16>) -> std::ffi::CString {
    // SAFETY: inside a transaction (a function call); every name is a palloc'd C string or NULL,
    // checked before use, and quote_identifier returns its argument or a new palloc'd C string.
    unsafe {
        let quoted = |name: *const std::ffi::c_char| CStr::from_ptr(pg_sys::quote_identifier(name)).to_bytes().to_vec();
        let relname = pg_sys::get_rel_name(tbl);
        if relname.is_null() {
            errors::invalid_parameter(format!("no relation has OID {}", tbl.to_u32()));
        }
        let schema = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(tbl));
        if schema.is_null() {
            errors::invalid_parameter(format!("no relation has OID {}", tbl.to_u32()));
        }
        let column = |attnum: i16| {
            let name = pg_sys::get_attname(tbl, attnum, true);
            // A dropped column keeps its number under a name no query can use.
            if attnum <= 0 || name.is_null() || CStr::from_ptr(name).to_bytes().starts_with(b"........pg.dropped.") {
                errors::invalid_parameter(format!("{} has no column number {attnum}", crate::index_probe::relation_name(tbl)));
            }
            quoted(name)
        };

        let fp = column(fp_attnum);
        let key = match key_attnum {
            Some(attnum) => [b"t.".to_vec(), column(attnum), b"::pg_catalog.int8".to_vec()].concat(),
            None => b"t.ctid".to_vec(),
        };
        let mut sql = b"SELECT t.".to_vec();
        sql.extend_from_slice(&fp);
        sql.extend_from_slice(b"::pg_catalog.int8, ");
        sql.extend_from_slice(&key);
        sql.extend_from_slice(b" FROM ");
        sql.extend_from_slice(&quoted(schema));
        sql.push(b'.');
        sql.extend_from_slice(&quoted(relname));
        sql.extend_from_slice(b" t WHERE t.");
        sql.extend_from_slice(&fp);
        sql.extend_from_slice(b" IS NOT NULL");
        if let Some(attnum) = key_attnum {
            sql.extend_from_slice(b" AND t.");
            sql.extend_from_slice(&column(attnum));
            sql.extend_from_slice(b" IS NOT NULL");
        }
        // Quoted names hold no NUL: they came from C strings.
        std::ffi::CString::new(sql).unwrap_or_default()
    }
}

/// The rows of `query` (an `int8` fingerprint, then an `int8` key or a ctid when `by_ctid`),
/// as two vectors of the same length, counted on `meter` and grown fallibly, by a quarter at a
/// time past the estimate (`memory_pairs::SCAN_ROW_BYTES` allows that much). The query's
/// columns are checked to be of those types before any is read: a view may name an int8
/// column `ctid`, which read as a tid's address would end the process.
fn read_rows(
    query: &CStr,
    by_ctid: bool,
    rows_estimate: f64,
    meter: &mut Meter,
    started: Instant,
) -> Result<(Vec<u64>, Vec<i64>), MemoryError> {
    let (mut fps, mut keys): (Vec<u64>, Vec<i64>) = (Vec::new(), Vec::new());
    // The estimate, as far as half the budget goes (reltuples may be stale either way; the
    // other half is for the sorted passes' entries): a wrong estimate costs growth, not an error.
    let first = if rows_estimate.is_finite() && rows_estimate > 0.0 { rows_estimate as usize } else { 0 };
    grow(&mut fps, &mut keys, first.min(memory::etl_limit() / 32), meter)?;
    let mut last_notice = Instant::now();
    let key_type = if by_ctid { pg_sys::TIDOID } else { pg_sys::INT8OID };
    // SAFETY: inside a transaction. SPI is connected here and finished below on every path (an
    // ERROR raised in between ends the (sub)transaction, whose abort cleans SPI up). The
    // portal's descriptor is checked to have the two columns read, int8 (by value) and int8 or
    // tid (a pointer into the tuple); each tuple table is read within its `numvals` and freed
    // before the next fetch.
    unsafe {
        pgrx::spi::Spi::check_status(pg_sys::SPI_connect()).unwrap_or_else(|e| errors::feature_not_supported(format!("simhash_pairs: {e}")));
        let portal = pg_sys::SPI_cursor_open_with_args(
            std::ptr::null(),
            query.as_ptr(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null(),
            true,
            0,
        );
        let desc = (*portal).tupDesc;
        let types: Vec<pg_sys::Oid> = if desc.is_null() {
            Vec::new()
        } else {
            (*desc).attrs.as_slice((*desc).natts as usize).iter().map(|a| a.atttypid).collect()
        };
        if types != [pg_sys::INT8OID, key_type] {
            pg_sys::SPI_cursor_close(portal);
            pg_sys::SPI_finish();
            errors::invalid_parameter(format!(
                "simhash_pairs reads a fingerprint and {} a row, and the table gives columns of types {types:?}",
                if by_ctid { "a ctid" } else { "an int8 key" }
            ));
        }
        let (mut values, mut nulls) = ([pg_sys::Datum::from(0); 2], [false; 2]);
        let mut outcome = Ok(());
        loop {
            pg_sys::SPI_cursor_fetch(portal, true, FETCH_ROWS);
            let table = pg_sys::SPI_tuptable;
            if table.is_null() || (*table).numvals == 0 {
                break;
            }
            let n = (*table).numvals as usize;
            if fps.len() + n > fps.capacity() {
                let more = (fps.capacity() / 4).max(n);
                outcome = grow(&mut fps, &mut keys, more, meter);
                if outcome.is_err() {
                    pg_sys::SPI_freetuptable(table);
                    break;
                }
            }
            for &tuple in std::slice::from_raw_parts((*table).vals, n) {
                pg_sys::heap_deform_tuple(tuple, (*table).tupdesc, values.as_mut_ptr(), nulls.as_mut_ptr());
                if nulls[0] || nulls[1] {
                    continue;
                }
                fps.push(values[0].value() as u64);
                keys.push(if by_ctid {
                    let tid = &*values[1].cast_mut_ptr::<pg_sys::ItemPointerData>();
                    let (block, offset) = crate::index_probe::tid_order(tid);
                    (i64::from(block) << 16) | i64::from(offset)
                } else {
                    values[1].value() as i64
                });
            }
            pg_sys::SPI_freetuptable(table);
            pgrx::check_for_interrupts!();
            if last_notice.elapsed().as_secs_f64() >= 2.0 {
                last_notice = Instant::now();
                pgrx::notice!("simhash_pairs: read {} rows into memory ({:.1} s)", fps.len(), started.elapsed().as_secs_f64());
            }
        }
        pg_sys::SPI_cursor_close(portal);
        pg_sys::SPI_finish();
        outcome?;
    }
    Ok((fps, keys))
}

/// Room for exactly `more` rows more in both vectors, counted on `meter`.
fn grow(fps: &mut Vec<u64>, keys: &mut Vec<i64>, more: usize, meter: &mut Meter) -> Result<(), MemoryError> {
    if fps.len().saturating_add(more) > memory_pairs::MAX_SORTED_ROWS {
        return Err(MemoryError::OverBudget { what: "simhash_pairs reading more than 2^32 rows", limit: meter.limit() });
    }
    meter.add(more.saturating_mul(16))?;
    let refused = |_| MemoryError::OutOfMemory { bytes: more.saturating_mul(8) };
    fps.try_reserve_exact(more).map_err(refused)?;
    keys.try_reserve_exact(more).map_err(refused)
}
