//! simhash_pg: near-duplicate text search inside PostgreSQL.
//!
//! This crate is the thin PostgreSQL layer: the `simhash64` type, its operators and SQL
//! functions, and `simhash(text)`. The fingerprint maths and the text pipeline live in
//! `simhash_core` (`src/core/`), which has no PostgreSQL types and is tested on its own; the SQL
//! objects that tie the functions together (operators, opclasses, casts, comments) are in
//! `sql/simhash64.sql`.

#![deny(unsafe_op_in_unsafe_fn)]

use pgrx::prelude::*;

mod args;
mod batch_probe;
mod casts;
mod citus;
mod compare;
mod compat;
mod distance;
mod distance_bounds;
mod errors;
mod etl;
mod ext_objects;
mod guard;
mod filter_calls;
mod index_probe;
mod join_paths;
mod layout;
mod leaf_scan;
mod memory;
mod nearest_scan;
mod nodes;
mod paths_hook;
mod planner;
mod routed;
mod routed_ddl;
mod routed_writes;
mod scan_pairs;
mod sets;
mod settings;
mod simhash64;
mod table_info;
mod text;

pub use simhash64::SimHash64;

::pgrx::pg_module_magic!(name, version);

/// Runs when PostgreSQL loads the library. Listed in `shared_preload_libraries`, the library is
/// loaded by the postmaster, which then also loads jieba's dictionary and IDF table once: every
/// backend it forks shares those pages instead of loading its own 80 MB on its first `simhash`.
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    quiet_backtraces();
    // SAFETY: a plain read of a flag PostgreSQL sets before loading preloaded libraries.
    if unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        simhash_core::fingerprint::preload();
    }
    settings::register();
    distance_bounds::install();
    paths_hook::install();
    nearest_scan::install();
    routed_writes::install();
    routed_ddl::install();
}

/// pgrx attaches a Rust backtrace to the DETAIL of every ERROR that crosses one of our hooks
/// when the server's environment sets `RUST_BACKTRACE`, so that an ordinary `SELECT 1/0`, passing
/// through the planner and executor hooks, showed its users pages of Rust frames (issue 67). The
/// capture follows `RUST_LIB_BACKTRACE` before `RUST_BACKTRACE`: unless it is set, it is set to 0
/// here, before anything is captured, in the postmaster when the library is preloaded (every
/// backend inherits it), else in the backend. `RUST_LIB_BACKTRACE=1` in the server's environment
/// brings them back, for debugging; a panic's own message on stderr keeps `RUST_BACKTRACE`'s.
fn quiet_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // A backend runs one thread, and _PG_init runs before any code that reads the
        // environment from another.
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
}

extension_sql_file!(
    "../sql/simhash64.sql",
    name = "simhash64_objects",
    requires = [
        "simhash64_type",
        compare::simhash64_eq,
        compare::simhash64_ne,
        compare::simhash64_lt,
        compare::simhash64_le,
        compare::simhash64_gt,
        compare::simhash64_ge,
        compare::simhash64_cmp,
        compare::simhash64_hash,
        compare::simhash64_hash_extended,
        casts::simhash64_to_bytea,
        casts::simhash64_from_bytea,
        casts::simhash64_to_bit,
        casts::simhash64_from_bit,
        distance::hamming_distance,
        distance::simhash_near,
        distance::simhash_similarity,
        distance::simhash_cosine,
        distance::simhash_block,
        distance::simhash_block_ball,
        distance::simhash_permute,
        planner::simhash_near_support,
        distance_bounds::simhash_distance_support,
        table_info::simhash_block_columns,
        text::simhash_default,
        text::simhash_with_options,
        text::simhash_weighted,
        text::simhash_features_default,
        text::simhash_features_with_options,
        text::simhash_extract,
        text::simhash_jaccard,
        text::simhash_containment,
        text::simhash_feature_set,
        text::simhash_jaccard_sets,
        text::simhash_containment_sets,
        sets::simhash_set_default,
        sets::simhash_set_with_options,
        sets::simhash_set_distance,
        sets::simhash_near_any,
    ]
);

extension_sql_file!(
    "../sql/index.sql",
    name = "index_helpers",
    requires = [
        "simhash64_objects",
        table_info::simhash_block_columns,
        table_info::simhash_unique_key,
        distance::simhash_permute,
        distance::simhash_block_key,
        table_info::simhash_block_keys,
        table_info::_simhash_keyed_to_build,
        table_info::_simhash_set_size,
        table_info::_simhash_rows_estimate,
        table_info::_simhash_layout_to_build,
        table_info::_simhash_layout_bytes,
        distance::distance_histogram,
        index_probe::simhash_index_probe,
        index_probe::simhash_index_probe_sets,
        index_probe::simhash_leaf_map,
        citus::_simhash_citus_table,
    ]
);

extension_sql_file!(
    "../sql/routed.sql",
    name = "routed_helpers",
    requires = [
        "index_helpers",
        routed::simhash_routes,
        routed::simhash_route_probes,
        routed::simhash_routed_blocks,
        routed::simhash_routed_args,
        routed::simhash_routed_columns,
        routed::simhash_routed_view_columns,
        routed::simhash_block_masks,
        routed_ddl::simhash_routed_views_aside,
    ]
);

extension_sql_file!(
    "../sql/etl.sql",
    name = "etl_helpers",
    requires = [
        "index_helpers",
        "routed_helpers",
        etl::simhash_pair_masks,
        etl::simhash_components,
        etl::simhash_stars,
        etl::_simhash_keep_first_of_near,
        etl::_simhash_near_any_of,
        etl::_simhash_keep_first_of_rest,
        etl::_simhash_ingest_slots,
        etl::_simhash_keep_first_of_verified,
        etl::_simhash_k_problem,
        etl::_simhash_cross_masks,
        etl::_simhash_batch_prefers_joins,
        etl::_simhash_pairs_memory,
        etl::_simhash_close_pairs,
        scan_pairs::_simhash_scan_pairs,
        scan_pairs::_simhash_scan_pairs_memory,
        table_info::_simhash_lookup_cost,
        batch_probe::_simhash_ingest_method,
        batch_probe::_simhash_batch_near,
        "guard_triggers",
    ]
);

#[cfg(any(test, feature = "pg_test"))]
mod tests;

/// Hooks the pgrx test framework calls. The test server preloads the library, so every test
/// also checks that loading jieba in the postmaster (`_PG_init`) works.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'simhash_pg'"]
    }
}
