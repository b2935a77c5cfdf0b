//! The extension's settings, registered with PostgreSQL when the library loads: they show in
//! `pg_settings` with their values, a value outside the list is refused at `SET` (22023), and
//! the `simhash_pg.` prefix is reserved, so a misspelt name is an error instead of a setting
//! nobody reads.
//!
//! The SQL functions that act on them (`simhash_pairs` and its helpers in sql/etl.sql) read
//! them with `current_setting`, which gives the names below; they still check the value, for a
//! session that set one before anything loaded the library (PostgreSQL keeps it as a
//! placeholder, and when the library loads warns and falls back to the default).

use std::ffi::CString;

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::PostgresGucEnum;

/// `simhash_pg.pairs_method`: how `simhash_pairs` finds the pairs of a table on one server.
/// Read in SQL only: PostgreSQL sets the value, so Rust constructs no variant.
#[allow(dead_code)]
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum PairsMethod {
    /// The function's own choice, by the table's size and the memory it would take.
    #[name = c"auto"]
    Auto,
    /// SQL hash joins, one per block (any size).
    #[name = c"joins"]
    Joins,
    /// Every pair compared in memory (up to 100,000 rows).
    #[name = c"compare"]
    Compare,
    /// The rows sorted by each block in memory.
    #[name = c"sort"]
    Sort,
    /// The table read row by row into memory, then sorted by each block (an integer key or
    /// ctid, one fingerprint a row: 32 bytes a row, no limit on rows but memory).
    #[name = c"scan"]
    Scan,
    /// 0.3.0 took an empty string for the default; still accepted, not listed.
    #[name = c""]
    #[hidden = true]
    Unset,
}

/// `simhash_pg.citus_pairs`: where `simhash_pairs` joins a Citus distributed table.
#[allow(dead_code)]
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CitusPairs {
    /// On the workers from about a million rows, on the coordinator below.
    #[name = c"auto"]
    Auto,
    /// On the workers, each shard against every other.
    #[name = c"workers"]
    Workers,
    /// On the coordinator, the rows pulled to it.
    #[name = c"coordinator"]
    Coordinator,
    /// As for `PairsMethod::Unset`.
    #[name = c""]
    #[hidden = true]
    Unset,
}

static PAIRS_METHOD: GucSetting<PairsMethod> = GucSetting::<PairsMethod>::new(PairsMethod::Auto);
/// `simhash_pg.probe_window`: blocks per probed key in lookups through permuted indexes; 0 lets
/// each lookup choose by the index's size (`layouts::probe_window`). Any value is exact.
static PROBE_WINDOW: GucSetting<i32> = GucSetting::<i32>::new(0);

/// The window a lookup through permuted indexes was told to take, or None: its own choice.
pub(crate) fn probe_window() -> Option<u32> {
    u32::try_from(PROBE_WINDOW.get()).ok().filter(|&w| w > 0)
}
/// `simhash_pg.enable_index_lookups`: off, the planner leaves every distance test as written
/// (a scan that computes each row's distance), as `enable_indexscan = off` does for its scans:
/// to compare answers with and without the block indexes, and the query-shape fuzzer's
/// reference (tests/hostile/query_shapes.py). Writes keep their routes either way.
static ENABLE_INDEX_LOOKUPS: GucSetting<bool> = GucSetting::<bool>::new(true);

/// Whether the planner may turn distance tests into block-index lookups now.
pub(crate) fn index_lookups() -> bool {
    ENABLE_INDEX_LOOKUPS.get()
}
/// `simhash_pg.ingest_slots`: how many concurrent `simhash_ingest` calls of a database look up
/// and insert their batches at once (the others wait for one to commit): 0, the CPUs this
/// server may use; -1, no limit. Past the CPUs, more ingests at once only share the cores and
/// evict each other's caches (measured: 8 batch passes at once on 2 cores took 5.5 times one
/// pass's time, not 4).
static INGEST_SLOTS: GucSetting<i32> = GucSetting::<i32>::new(0);

/// The slots `simhash_ingest` shares, 0 for no limit.
pub(crate) fn ingest_slots() -> i32 {
    match INGEST_SLOTS.get() {
        n if n < 0 => 0,
        0 => std::thread::available_parallelism().map_or(1, |n| i32::try_from(n.get()).unwrap_or(i32::MAX)),
        n => n,
    }
}
static CITUS_PAIRS: GucSetting<CitusPairs> = GucSetting::<CitusPairs>::new(CitusPairs::Auto);
/// `simhash_pg.routed_writer`: the routed layouts (routes tables, as a JSON array of `[schema, name]`)
/// whose writer keeps the routes itself just now (the inserts view, `simhash_ingest`; sql/routed.sql),
/// set transaction-locally and sent to the workers: their guard lets those inserts pass.
static ROUTED_WRITER: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c""));
/// `simhash_pg.routed_changes`: the routed layouts whose guards record each row's change, set the
/// same way by `routed_writes.rs` around each statement that writes their tables; the statement's
/// end moves the changes into the routes.
static ROUTED_CHANGES: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c""));

/// A routed layout as the settings name it: the schema and name of its routes table, as they
/// are (the same text on every node, whatever quoting a session prefers).
pub(crate) type LayoutName = (String, String);

/// The longest setting `layouts` reads: a megabyte names thousands of layouts.
const MAX_LAYOUTS_BYTES: usize = 1 << 20;

/// The layouts a setting names: a JSON array of `[schema, name]` pairs (a name may hold any
/// character; `routed_changes` may add the keys a statement writes as a third element), empty
/// when unset. A value that is not one, or longer than MAX_LAYOUTS_BYTES, names none (the SQL
/// side refuses it).
fn layouts(setting: &GucSetting<Option<CString>>) -> Vec<LayoutName> {
    // Any role may set it: a value longer than any list of layouts is not parsed (JSON values
    // take many times their text, and a failed allocation would end the backend).
    let entries = setting
        .get()
        .filter(|v| v.as_bytes().len() <= MAX_LAYOUTS_BYTES)
        .and_then(|v| serde_json::from_str::<Vec<Vec<serde_json::Value>>>(&v.to_string_lossy()).ok())
        .unwrap_or_default();
    entries
        .into_iter()
        .filter_map(|e| Some((e.first()?.as_str()?.to_owned(), e.get(1)?.as_str()?.to_owned())))
        .collect()
}

/// `simhash_pg.routed_changes` as it is, to compare with the value wanted.
pub(crate) fn routed_changes_value() -> String {
    ROUTED_CHANGES.get().map(|v| v.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The value of `simhash_pg.routed_changes` that names `layouts`, each with the keys its
/// statements write when they all said (`None`: any key).
pub(crate) fn changes_value(layouts: &[(LayoutName, Option<Vec<String>>)]) -> String {
    if layouts.is_empty() {
        return String::new();
    }
    let entries = layouts
        .iter()
        .map(|((schema, name), keys)| match keys {
            Some(keys) => serde_json::json!([schema, name, keys]),
            None => serde_json::json!([schema, name]),
        })
        .collect::<Vec<_>>();
    serde_json::Value::Array(entries).to_string()
}

/// The routed layouts whose writer keeps the routes itself now (the view, ingest).
pub(crate) fn routed_writer() -> Vec<LayoutName> {
    layouts(&ROUTED_WRITER)
}


/// Registers the settings and reserves their prefix; called once per process from `_PG_init`.
pub(crate) fn register() {
    GucRegistry::define_enum_guc(
        c"simhash_pg.pairs_method",
        c"How simhash_pairs finds the pairs of a table: auto, joins, compare, sort or scan.",
        c"auto lets simhash_pairs choose by the table's size and the memory the in-memory methods need; \
          joins uses SQL hash joins, compare compares every pair in memory (up to 100,000 rows), \
          sort sorts the rows by each block in memory, scan reads the table row by row into memory \
          first (an integer key or ctid).",
        &PAIRS_METHOD,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_enum_guc(
        c"simhash_pg.citus_pairs",
        c"Where simhash_pairs joins a Citus distributed table: auto, workers or coordinator.",
        c"auto joins on the workers from about a million rows and on the coordinator below.",
        &CITUS_PAIRS,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"simhash_pg.probe_window",
        c"Blocks per probed key of permuted block indexes; 0 lets each lookup choose.",
        c"0 chooses by the size of the index; 1 probes each block alone; w > 1 probes each \
          permuted index on the w blocks its key starts with, at a radius that keeps the lookup \
          exact (a value at or above the block count means the largest window). For measurements.",
        &PROBE_WINDOW,
        0,
        63,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"simhash_pg.ingest_slots",
        c"How many concurrent simhash_ingest calls of a database run their lookups and inserts at once; 0: one per CPU, -1: no limit.",
        c"Concurrent ingests past this number wait, before they look anything up, until one of the \
          running ones commits or rolls back. 0 (the default) allows as many as the CPUs this server \
          may use; more at once only share the cores. Only ingests that run beside each other take \
          a slot (not those that run one after the other under the target's lock).",
        &INGEST_SLOTS,
        -1,
        10000,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"simhash_pg.enable_index_lookups",
        c"Whether the planner turns distance tests into lookups through the block indexes.",
        c"off leaves simhash_near, the distance comparisons and ORDER BY distance as written: \
          every row's distance is computed, as without a layout. The answers are the same either \
          way; for comparing them.",
        &ENABLE_INDEX_LOOKUPS,
        GucContext::Userset,
        // EXPLAIN (SETTINGS) shows it when off, as it does enable_indexscan.
        GucFlags::EXPLAIN,
    );
    GucRegistry::define_string_guc(
        c"simhash_pg.routed_writer",
        c"Internal: the routed layouts whose writers keep their routes just now.",
        c"Set by the view and simhash_ingest of a table with a routed layout (docs/citus.md); \
          setting it yourself lets writes skip the routes, which lookups then miss.",
        &ROUTED_WRITER,
        GucContext::Userset,
        GucFlags::NO_SHOW_ALL,
    );
    GucRegistry::define_string_guc(
        c"simhash_pg.routed_changes",
        c"Internal: the routed layouts whose tables a running statement writes.",
        c"The guards of those layouts record each row's change, which the end of the statement \
          moves into the routes (docs/citus.md); setting it yourself leaves changes nobody moves.",
        &ROUTED_CHANGES,
        GucContext::Userset,
        GucFlags::NO_SHOW_ALL,
    );
    crate::compat::reserve_setting_prefix(c"simhash_pg");
}
