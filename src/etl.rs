//! The Rust side of the ETL functions in `sql/etl.sql`: the join keys `simhash_pairs` uses and
//! the union-find behind `simhash_chained_groups`, the in-batch dedup of `simhash_ingest`. The maths is
//! in `simhash_core::batch` and `simhash_core::dedup`.

use pgrx::prelude::*;
use simhash_core::{batch, dedup, fingerprint, memory_pairs, overlap};

use crate::args::Name;
use crate::errors;
use crate::memory;
use crate::simhash64::SimHash64;

/// The masks `simhash_pairs` joins on to find every pair within `k` bits among about `rows`
/// fingerprints: pairs sharing `fp & mask` for some mask are all the candidates (see
/// `simhash_core::batch`). `k` outside 0..63, and `rows` negative or not finite, are SQLSTATE
/// 22023.
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_pair_masks")]
fn simhash_pair_masks(k: i32, rows: f64) -> Vec<i64> {
    if !(rows.is_finite() && rows >= 0.0) {
        errors::invalid_parameter(format!("rows must be a finite number, 0 or more, got {rows}"));
    }
    let plan = u32::try_from(k)
        .ok()
        .and_then(|k| batch::pair_keys(k, rows))
        .unwrap_or_else(|| errors::invalid_parameter(format!("k must be between 0 and 63, got {k}")));
    plan.masks.into_iter().map(|m| m as i64).collect()
}

/// The masks `simhash_pairs_between` and `simhash_ingest` join two tables of about `a` and `b`
/// rows on (`simhash_core::batch::cross_keys`); bad arguments as for `_simhash_pair_masks`.
#[pg_extern(immutable, strict, parallel_safe)]
fn _simhash_cross_masks(k: i32, a: f64, b: f64) -> Vec<i64> {
    if !(a.is_finite() && a >= 0.0 && b.is_finite() && b >= 0.0) {
        errors::invalid_parameter(format!("row counts must be finite numbers, 0 or more, got {a} and {b}"));
    }
    let plan = u32::try_from(k)
        .ok()
        .and_then(|k| batch::cross_keys(k, a, b))
        .unwrap_or_else(|| errors::invalid_parameter(format!("k must be between 0 and 63, got {k}")));
    plan.masks.into_iter().map(|m| m as i64).collect()
}

/// Whether `simhash_ingest` should find the batch rows near its target by hash joins rather
/// than one lookup per row (`simhash_core::batch::batch_prefers_joins`); `lookup` is one
/// lookup's cost in index entries (`_simhash_lookup_cost`, summed over a partitioned target's
/// partitions), NULL when the target has no block indexes.
/// NULL when `k` or a row count is NULL (not STRICT: a NULL `lookup` has a meaning).
#[pg_extern(immutable, parallel_safe)]
fn _simhash_batch_prefers_joins(
    k: Option<i32>,
    batch_rows: Option<f64>,
    target_rows: Option<f64>,
    lookup: Option<f64>,
) -> Option<bool> {
    let (k, batch_rows, target_rows) = (k?, batch_rows?, target_rows?);
    Some(u32::try_from(k).is_ok_and(|k| batch::batch_prefers_joins(k, batch_rows, target_rows, lookup)))
}

/// Bytes of memory `simhash_pairs` takes to read a table of about `rows` rows of `width`
/// fingerprints and keys of about `key_bytes` bytes into memory
/// (`simhash_core::memory_pairs::memory_bytes`), NULL where PostgreSQL could not build its
/// arrays; it does so when they fit `maintenance_work_mem`, as an index build.
#[pg_extern(immutable, strict, parallel_safe)]
fn _simhash_pairs_memory(rows: f64, width: i32, key_bytes: f64) -> Option<f64> {
    memory_pairs::memory_bytes(rows, usize::try_from(width).unwrap_or(1), key_bytes)
}

/// Every pair `(i, j, distance)` of rows within `k` bits, rows numbered from 1 and `i < j`,
/// found in memory (`simhash_core::memory_pairs`): how `simhash_pairs` reads a table that fits
/// `maintenance_work_mem`. Row `r` holds elements `(r - 1) * width + 1` to `r * width` of `fps`
/// (a set's fingerprints, NULL where it has none; `width` 1 for a fingerprint column; a
/// two-dimensional array, one row of it per table row, reads the same). `method` is `auto`
/// (chosen by cost), `compare` (every pair) or `sort` (by each key in turn). Pairs come a few
/// at a time; a cancel stops it, and a NOTICE every 2 s or so says how far it is. `k`
/// outside 0..64, a `width` outside 1..16 or another method is SQLSTATE 22023.
#[pg_extern(immutable, strict, parallel_safe)]
fn _simhash_close_pairs(
    fps: Array<SimHash64>,
    width: i32,
    k: i32,
    method: Name,
) -> TableIterator<'static, (name!(i, i32), name!(j, i32), name!(distance, i32))> {
    let k = u32::try_from(k)
        .ok()
        .filter(|&k| k <= 64)
        .unwrap_or_else(|| errors::invalid_parameter(format!("k must be between 0 and 64, got {k}")));
    let width = row_width(width, None);
    let elements = fps.len() as f64;
    if elements > memory_pairs::MAX_ELEMENTS {
        errors::invalid_parameter(format!("at most {} fingerprints are compared in memory, got {elements}", memory_pairs::MAX_ELEMENTS));
    }
    let rows = memory_pairs::Rows::new(fps.iter().map(|fp| fp.map(|fp| fp.0)), width);
    let method = match method.bytes() {
        b"compare" => memory_pairs::Method::Compare,
        b"sort" => memory_pairs::Method::Sort,
        b"auto" => memory_pairs::choose(&rows, k),
        other => errors::invalid_parameter(format!("method must be auto, compare or sort, got {}", String::from_utf8_lossy(other))),
    };
    let mut meter = memory::etl_meter("simhash_pairs in memory");
    let pairs = memory_pairs::pairs(rows, k, method, &mut meter, pairs_progress(std::time::Instant::now()))
        .unwrap_or_else(|e| errors::memory("simhash_pairs", e));
    // Row numbers fit: at most MAX_ELEMENTS rows.
    TableIterator::new(pairs.map(|(i, j, d)| (i as i32 + 1, j as i32 + 1, d as i32)))
}

/// The `check` of `memory_pairs::pairs` for `simhash_pairs` begun at `started`: a cancel stops it,
/// and a NOTICE every 2 s or so says how far it is.
pub(crate) fn pairs_progress(started: std::time::Instant) -> impl FnMut(memory_pairs::Progress) {
    let mut last_notice = std::time::Instant::now();
    move |progress| {
        pgrx::check_for_interrupts!();
        if last_notice.elapsed().as_secs_f64() >= 2.0 {
            last_notice = std::time::Instant::now();
            let (what, done, total) = match progress {
                memory_pairs::Progress::Compared(done, total) => ("row", done + 1, total),
                memory_pairs::Progress::Sorted(done, total) => ("sorted pass", done + 1, total),
            };
            pgrx::notice!("simhash_pairs: in memory, {what} {done} of {total} ({:.1} s)", started.elapsed().as_secs_f64());
        }
    }
}

/// Which key of a `simhash_pairs` run on the Citus workers returns the pair of fingerprints `x`
/// and `y`, 1-based, NULL when none does (`simhash_core::batch::first_shared_key`): each
/// candidate joined on key i is kept when this is i. `masks` are the run's keys; NULL masks, or
/// a `k` outside 0..64, are SQLSTATE 22023.
#[pg_extern(immutable, strict, parallel_safe)]
fn _simhash_first_shared_key(x: SimHash64, y: SimHash64, k: i32, masks: Array<i64>) -> Option<i32> {
    // The run's keys are a few thousand at most: the position fits.
    batch::first_shared_mask(x.0, y.0, pair_k(k), &key_masks(&masks)).map(|j| j as i32)
}

/// The same for two sets (`simhash64[]`, positions from the first): key j joins element
/// `elements[j]`; `elements` must be as long as `masks`, without NULLs.
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_first_shared_key")]
fn _simhash_first_shared_key_of_sets(
    x: Array<SimHash64>,
    y: Array<SimHash64>,
    k: i32,
    masks: Array<i64>,
    elements: Array<i32>,
) -> Option<i32> {
    let masks = key_masks(&masks);
    let elements: Vec<usize> = elements
        .iter()
        .map(|e| e.and_then(|e| usize::try_from(e).ok()))
        .collect::<Option<_>>()
        .filter(|e: &Vec<usize>| e.len() == masks.len())
        .unwrap_or_else(|| errors::invalid_parameter("elements must be as many as masks, none NULL or negative"));
    let fps = |a: &Array<SimHash64>| a.iter().map(|fp| fp.map(|fp| fp.0)).collect::<Vec<_>>();
    batch::first_shared_key(&fps(&x), &fps(&y), pair_k(k), &masks, &elements).map(|j| j as i32)
}

fn key_masks(masks: &Array<i64>) -> Vec<u64> {
    masks
        .iter()
        .map(|m| m.map(|m| m as u64))
        .collect::<Option<_>>()
        .unwrap_or_else(|| errors::invalid_parameter("masks must not hold NULL"))
}

/// `width` of a batch function's rows (`fingerprint::row_width`: 1..MAX_SET_SIZE), dividing
/// `elements` when given; else SQLSTATE 22023.
fn row_width(width: i32, elements: Option<usize>) -> usize {
    fingerprint::row_width(i64::from(width))
        .filter(|&w| elements.is_none_or(|n| n % w == 0))
        .unwrap_or_else(|| {
            let max = fingerprint::MAX_SET_SIZE;
            match elements {
                Some(n) => errors::invalid_parameter(format!("width must be between 1 and {max} and divide the array's length {n}, got {width}")),
                None => errors::invalid_parameter(format!("width must be between 1 and {max}, got {width}")),
            }
        })
}

/// `k` of a `_simhash_first_shared_key` call: 0..64, else SQLSTATE 22023.
fn pair_k(k: i32) -> u32 {
    u32::try_from(k)
        .ok()
        .filter(|&k| k <= 64)
        .unwrap_or_else(|| errors::invalid_parameter(format!("k must be between 0 and 64, got {k}")))
}

/// Checks, before anything is built, that a graph of `edges` pairs (and nodes) fits the ETL
/// memory limit (`batch::GRAPH_BYTES_PER_EDGE`): 54000 otherwise.
fn graph_fits(edges: usize, function: &str) {
    memory::etl_meter("the graph of pairs")
        .add(edges.saturating_mul(batch::GRAPH_BYTES_PER_EDGE))
        .unwrap_or_else(|e| errors::memory(function, e));
}

/// Connected components of the graph with edges `a[i]`-`b[i]`: every node on an edge, with the
/// smallest node (in text order) of its component, which names the component. Arrays of
/// different lengths or with NULLs are SQLSTATE 22023.
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_components")]
fn simhash_components(
    a: Array<&str>,
    b: Array<&str>,
) -> TableIterator<'static, (name!(node, String), name!(component, String))> {
    if a.len() != b.len() {
        errors::invalid_parameter(format!("the arrays must have the same length, got {} and {}", a.len(), b.len()));
    }
    graph_fits(a.len(), "simhash_chained_groups");
    let pairs: Vec<(&str, &str)> = a
        .iter()
        .zip(b.iter())
        .map(|pair| match pair {
            (Some(x), Some(y)) => (x, y),
            _ => errors::invalid_parameter("the arrays must not contain NULLs"),
        })
        .collect();
    let groups = batch::components(&pairs, &mut || {
        pgrx::check_for_interrupts!();
    });
    let rows: Vec<(String, String)> = groups.into_iter().map(|(n, c)| (n.to_owned(), c.to_owned())).collect();
    TableIterator::new(rows)
}

/// Groups that do not chain (`simhash_core::batch::stars`): nodes taken in `keep_order`, each one in
/// no group yet becoming a representative of the nodes near it (edges `a[i]`-`b[i]`) that are
/// in no group yet. Every node on an edge, with its representative. Arrays `a` and `b` of
/// different lengths, or NULLs in any array, are SQLSTATE 22023.
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_stars")]
fn simhash_stars(
    keep_order: Array<&str>,
    a: Array<&str>,
    b: Array<&str>,
) -> TableIterator<'static, (name!(node, String), name!(representative, String))> {
    if a.len() != b.len() {
        errors::invalid_parameter(format!("the arrays must have the same length, got {} and {}", a.len(), b.len()));
    }
    fn no_nulls(x: Option<&str>) -> &str {
        x.unwrap_or_else(|| errors::invalid_parameter("the arrays must not contain NULLs"))
    }
    graph_fits(a.len().saturating_add(keep_order.len()), "simhash_representative_groups");
    let order: Vec<&str> = keep_order.iter().map(no_nulls).collect();
    let pairs: Vec<(&str, &str)> = a.iter().zip(b.iter()).map(|(x, y)| (no_nulls(x), no_nulls(y))).collect();
    let groups = batch::stars(&order, &pairs, &mut || {
        pgrx::check_for_interrupts!();
    });
    TableIterator::new(groups.into_iter().map(|(n, r)| (n.to_owned(), r.to_owned())).collect::<Vec<_>>())
}

/// Which rows of an ordered batch stay when each row is dropped if it lies within `k` bits of
/// an earlier row that stayed: the in-batch half of `simhash_ingest` (`simhash_core::dedup`).
/// `fps` holds the rows in order, `width` fingerprints each (1, or a set's elements position by
/// position, NULL where a row has none); a row is near another when some position is. `k`
/// outside 0..64, or a `width` outside 1..16 or not dividing the array's length, is SQLSTATE 22023.
#[pg_extern(immutable, strict, parallel_safe)]
fn _simhash_keep_first_of_near(fps: Array<SimHash64>, width: i32, k: i32) -> Vec<bool> {
    let k = simhash_core::distance::check_threshold(i64::from(k)).unwrap_or_else(|e| errors::invalid_parameter(e));
    let width = row_width(width, Some(fps.len()));
    let fps = fingerprints(&fps, "_simhash_keep_first_of_near");
    let meter = memory::etl_meter("the batch's in-memory index");
    dedup::keep_first_of_near(&fps, width, k, meter, &mut || {
        pgrx::check_for_interrupts!();
    })
    .unwrap_or_else(|e| errors::memory("simhash_ingest", e))
}

/// For each row of `fps` (`width` fingerprints a row), whether one of its fingerprints lies
/// within `k` bits of one of `others` (`simhash_core::dedup::near_any_of`): which rows of a
/// concurrent `simhash_ingest` another ingest's rows may have made near-copies meanwhile.
/// Bad `width` or `k` are SQLSTATE 22023, as for `_simhash_keep_first_of_near`.
#[pg_extern(immutable, strict, parallel_safe)]
fn _simhash_near_any_of(fps: Array<SimHash64>, width: i32, others: Array<SimHash64>, k: i32) -> Vec<bool> {
    let k = simhash_core::distance::check_threshold(i64::from(k)).unwrap_or_else(|e| errors::invalid_parameter(e));
    let width = row_width(width, Some(fps.len()));
    let fps = fingerprints(&fps, "_simhash_near_any_of");
    let others = fingerprints(&others, "_simhash_near_any_of");
    let meter = memory::etl_meter("the rows other ingests committed meanwhile");
    dedup::near_any_of(&fps, width, &others, k, meter, &mut || {
        pgrx::check_for_interrupts!();
    })
    .unwrap_or_else(|e| errors::memory("simhash_ingest", e))
}

/// Which rows of the batch stay when the `gone` rows are out (`simhash_core::dedup::
/// keep_first_of_rest`): what a concurrent `simhash_ingest` decides again, in one pass, when
/// rows another ingest committed meanwhile took some of its rows. `gone` has one entry per row,
/// none NULL; otherwise, and for bad `width` or `k`, SQLSTATE 22023.
#[pg_extern(immutable, strict, parallel_safe)]
fn _simhash_keep_first_of_rest(fps: Array<SimHash64>, width: i32, gone: Array<bool>, k: i32) -> Vec<bool> {
    let k = simhash_core::distance::check_threshold(i64::from(k)).unwrap_or_else(|e| errors::invalid_parameter(e));
    let width = row_width(width, Some(fps.len()));
    if gone.len().saturating_mul(width) != fps.len() {
        errors::invalid_parameter(format!("gone must have one entry per row: {} rows, {} entries", fps.len() / width.max(1), gone.len()));
    }
    // bounded: one entry per element of an array already in memory, reserved fallibly.
    let mut out = simhash_core::memory::vec_with_room(gone.len()).unwrap_or_else(|e| errors::memory("simhash_ingest", e));
    out.extend(gone.iter().map(|g| g.unwrap_or_else(|| errors::invalid_parameter("gone must not contain NULLs"))));
    let fps = fingerprints(&fps, "_simhash_keep_first_of_rest");
    let meter = memory::etl_meter("the batch's in-memory index");
    dedup::keep_first_of_rest(&fps, width, &out, k, meter, &mut || {
        pgrx::check_for_interrupts!();
    })
    .unwrap_or_else(|e| errors::memory("simhash_ingest", e))
}

/// The slots concurrent `simhash_ingest` calls of a database share (`simhash_pg.ingest_slots`,
/// 0 meaning one per CPU this server may use), or 0 for no limit.
#[pg_extern(stable, parallel_safe)]
fn _simhash_ingest_slots() -> i32 {
    crate::settings::ingest_slots()
}

/// An array of fingerprints as a vector, copied into memory allocated fallibly.
pub(crate) fn fingerprints(fps: &Array<SimHash64>, function: &str) -> Vec<Option<u64>> {
    let mut out = simhash_core::memory::vec_with_room(fps.len()).unwrap_or_else(|e| errors::memory(function, e));
    out.extend(fps.iter().map(|fp| fp.map(|fp| fp.0)));
    out
}

/// The same rule for a verified `simhash_ingest`: a near earlier row that stayed drops a row
/// only when their texts' feature sets (`simhash_feature_set`) have a Jaccard similarity of at
/// least `min_jaccard` (`simhash_core::dedup::keep_first_of_confirmed`). `features` holds the
/// rows' sets one after another and `counts` each row's length, NULL for a row without text,
/// which nothing confirms. Arrays that do not fit together, NULL features, or `min_jaccard`
/// outside 0..1 are SQLSTATE 22023, as for `_simhash_keep_first_of_near`.
#[pg_extern(immutable, strict, parallel_safe)]
fn _simhash_keep_first_of_verified(
    fps: Array<SimHash64>,
    width: i32,
    k: i32,
    features: Array<i64>,
    counts: Array<i32>,
    min_jaccard: f64,
) -> Vec<bool> {
    let k = simhash_core::distance::check_threshold(i64::from(k)).unwrap_or_else(|e| errors::invalid_parameter(e));
    let width = row_width(width, Some(fps.len()));
    if !(0.0..=1.0).contains(&min_jaccard) {
        errors::invalid_parameter(format!("min_jaccard must be between 0 and 1, got {min_jaccard}"));
    }
    let rows = fps.len() / width;
    if counts.len() != rows {
        errors::invalid_parameter(format!("counts must have one element per row ({rows}), got {}", counts.len()));
    }
    // The feature sets, copied once (about the features array's size), counted with the rest.
    let mut meter = memory::etl_meter("the batch's feature sets");
    meter.add(features.len().saturating_mul(16).saturating_add(rows.saturating_mul(24))).unwrap_or_else(|e| errors::memory("simhash_ingest", e));
    let flat = crate::text::hashes_of(&features);
    let mut sets: Vec<Option<Vec<u64>>> = simhash_core::memory::vec_with_room(rows).unwrap_or_else(|e| errors::memory("simhash_ingest", e));
    let mut at = 0usize;
    for count in counts.iter() {
        sets.push(count.map(|c| {
            let end = usize::try_from(c).ok().and_then(|c| at.checked_add(c)).filter(|&end| end <= flat.len());
            let end = end.unwrap_or_else(|| errors::invalid_parameter("counts do not fit the features"));
            let set = crate::text::sorted_set(flat[at..end].to_vec());
            at = end;
            set
        }));
    }
    if at != flat.len() {
        errors::invalid_parameter("counts do not fit the features");
    }
    let fps = fingerprints(&fps, "_simhash_keep_first_of_verified");
    let mut confirm = |earlier: usize, row: usize| match (&sets[earlier], &sets[row]) {
        (Some(x), Some(y)) => overlap::Overlap::of_sets(x, y).jaccard() >= min_jaccard,
        _ => false,
    };
    let meter = memory::etl_meter("the batch's in-memory index");
    dedup::keep_first_of_confirmed(&fps, width, k, meter, &mut confirm, &mut || {
        pgrx::check_for_interrupts!();
    })
    .unwrap_or_else(|e| errors::memory("simhash_ingest", e))
}

/// What is wrong with `k` for the SQL function `caller`, as a problem row like
/// `_simhash_table_problem`'s (SQLSTATE, message, hint), so that the PL/pgSQL functions raise it
/// themselves: `purpose` 'pairs' for all-pairs work (0..63, `simhash_core::batch`), 'near' for a
/// lookup bound (0..64, `simhash_core::distance`). The bounds live in the core only.
#[pg_extern(immutable, parallel_safe)]
fn _simhash_k_problem(
    caller: Option<Name>,
    k: Option<i32>,
    purpose: Option<Name>,
) -> TableIterator<'static, (name!(sqlstate, String), name!(message, String), name!(hint, Option<String>))> {
    let caller = caller.map_or_else(|| "simhash_pg".to_string(), |c| String::from_utf8_lossy(c.bytes()).into_owned());
    let (max, ok) = match purpose.as_ref().map(Name::bytes) {
        Some(b"pairs") => (batch::MAX_PAIR_K, k.is_some_and(|k| batch::check_pair_threshold(i64::from(k)).is_ok())),
        Some(b"near") => (
            simhash_core::distance::BITS,
            k.is_some_and(|k| simhash_core::distance::check_threshold(i64::from(k)).is_ok()),
        ),
        other => errors::invalid_parameter(format!(
            "purpose must be 'pairs' or 'near', got {:?}",
            other.map(String::from_utf8_lossy)
        )),
    };
    let problem = (!ok).then(|| {
        let got = k.map_or_else(|| "NULL".to_string(), |k| k.to_string());
        let hint = "k is how many bits two near-copies' fingerprints may differ in (3 by default; see \"Choosing k\" in the README).";
        ("22023".to_string(), format!("{caller}: k must be between 0 and {max}, got {got}"), Some(hint.to_string()))
    });
    TableIterator::new(problem)
}
