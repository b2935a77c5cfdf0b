//! Which block indexes of a table a lookup reads: the complete layouts among the block columns
//! and indexes the extension found (`src/layout.rs` reads them from the catalog), and the one
//! that answers a k with the least work.
//!
//! Plain Rust so the rules are unit-tested here; the index identity `I` is PostgreSQL's Oid in
//! the extension and a small integer in the tests.

use std::collections::HashMap;

use crate::blocks::Block;
use crate::probe;

/// One block of a fingerprint column and its indexes: block `index` of `count` of column
/// `source` (of its element `element`, for a set column), held in column `attnum` or, attnum
/// 0, by an index expression (then `name` is the index's).
#[derive(Debug, Clone, PartialEq)]
pub struct BlockColumn<I> {
    pub attnum: i16,
    pub name: String,
    pub source: i16,
    /// The element of a set column the block is taken from (1-based); None for a simhash64
    /// column.
    pub element: Option<u32>,
    pub index: u32,
    pub count: u32,
    /// A valid, non-partial B-tree index whose first key column is this one.
    pub btree: Option<I>,
    /// A valid, non-partial B-tree index on exactly (this column) INCLUDE or plus (source),
    /// ascending in the integer family: the lookup reads the distance off its leaf pages
    /// without visiting the table. For a permuted block, its index.
    pub covering: Option<I>,
    /// A permuted block index, `(simhash_permute(source, i, m))`: the block is its key's prefix,
    /// so only the leaf-page probe reads it (`btree` is None: no equality condition on the
    /// block can use it).
    pub permuted: bool,
    /// 1 for a block; for a key of several blocks (`keys::BlockKey`, `_simhash_block_key(source,
    /// lead, m)`), how many it leads with (then `index` is its place in the family, `keys::position`,
    /// and the index is `covering`, read as a permuted one).
    pub key_blocks: u32,
}

/// How a layout holds its blocks, for its bytes ([`layout_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holding {
    /// One permuted index a block: an 8-byte key, nothing added to the rows.
    Permuted,
    /// A generated block column and an index on it that includes the fingerprint.
    CoveringColumns,
    /// A generated block column and an index on it alone.
    Columns,
    /// An index on a block expression a block (with the fingerprint included when `covering`):
    /// nothing added to the rows.
    Expressions { covering: bool },
}

/// Bytes a B-tree entry of a block index takes, a row: a key of 8 bytes or less and the heap
/// pointer on 90 % full leaf pages, as `simhash_create_index` builds them (22.5 bytes a row a
/// permuted block, measured at 1M, 10M and 100M rows: BENCHMARKS.md, *How lookups grow with the
/// table*).
pub const ENTRY_BYTES: f64 = 22.5;
/// The same with the fingerprint included (covering indexes: 31.6 bytes a row a block at 1M
/// rows, BENCHMARKS.md, *Block-index layouts*).
pub const COVERING_ENTRY_BYTES: f64 = 31.6;
/// What a generated block column adds to a row (8.1 bytes a block at 1M rows, the same page).
pub const BLOCK_COLUMN_BYTES: f64 = 8.1;

/// The smallest B-tree: its metapage and one leaf page.
pub const MIN_INDEX_BYTES: f64 = 2.0 * 8192.0;

/// Bytes a layout of `blocks` blocks for each of `fingerprints` fingerprints a row (a set's
/// size, 1 for a fingerprint column) takes on `rows` rows, indexes and added columns together,
/// as built (inserts later split pages: up to about 1.4x that).
pub fn layout_bytes(rows: f64, blocks: u32, fingerprints: u32, holding: Holding) -> f64 {
    let (entry, column) = match holding {
        Holding::Permuted | Holding::Expressions { covering: false } => (ENTRY_BYTES, 0.0),
        Holding::Expressions { covering: true } => (COVERING_ENTRY_BYTES, 0.0),
        Holding::CoveringColumns => (COVERING_ENTRY_BYTES, BLOCK_COLUMN_BYTES),
        Holding::Columns => (ENTRY_BYTES, BLOCK_COLUMN_BYTES),
    };
    let rows = rows.max(0.0);
    let indexes = f64::from(blocks) * f64::from(fingerprints.max(1));
    indexes * ((rows * entry).max(MIN_INDEX_BYTES) + rows * column)
}

/// A complete, fully indexed set of block columns of one source column: `columns[i]` holds
/// block i of `count` (0: an expression index holds it); `covering[i]`, when every block has
/// one, its covering (or permuted) index.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout<I> {
    pub count: u32,
    pub columns: Vec<i16>,
    pub covering: Option<Vec<I>>,
    /// The blocks that only a permuted index holds: in the BitmapOr form their condition is one
    /// key range of that index per probed block value, not an equality.
    pub ranges: Vec<bool>,
    /// 1 for blocks; for a family of keys of several blocks (`keys`), the blocks a key leads
    /// with: then `covering` holds the family's C(count, key_blocks) indexes in its order, and
    /// only the probe reads them (`columns` and `ranges` say that no block has a column).
    pub key_blocks: u32,
}

/// Most of the table a join's lookup may read per outer row (the share of rows it fetches as
/// candidates): past this, the lookup the planner would run for every outer row costs about
/// what the nested loop's own scan of the table costs (a fetch by TID is several times a row of
/// a sequential scan), and its whole-index reads past the layout's k cost far more: at k = 64, a
/// LEFT JOIN of 20 rows by 240 whose probe ran as a filter for every pair took 23 s where the
/// distance as written takes milliseconds (issue 63, tests/hostile/query_shapes.py).
pub const JOIN_LOOKUP_MAX_SHARE: f64 = 0.1;

/// Whether a lookup at `k` through `blocks` blocks reads less than [`JOIN_LOOKUP_MAX_SHARE`] of
/// the table, so that a join may run it once per outer row.
pub fn join_lookup_pays(k: u32, blocks: u32) -> bool {
    probe::lookup_cost(i64::from(k), i64::from(blocks), 1.0).is_some_and(|c| c.candidates < JOIN_LOOKUP_MAX_SHARE)
}

/// Most key ranges a BitmapOr over permuted indexes may take: k = 7 on four blocks, the most a
/// layout of `simhash_create_index` needs at its own max_k, takes 68. Each range is two calls
/// in the condition, which the planner costs (it does not know that the distance test before
/// them rejects most rows) and JIT compiles where the plan is not an index scan: measured
/// under an OR with an unindexed arm, 188 ranges (k = 8 on four blocks) took 4.6 s to compile
/// (optimized and inlined), 68 took 1.0 s, and they tripled the estimated cost that turns JIT
/// on (issue 63, found by tests/hostile/query_shapes.py). Past this the call stays as written.
pub const MAX_RANGE_ARMS: u64 = 68;

impl<I> Layout<I> {
    /// Whether the BitmapOr form (for joins, row-level security and views) can answer `k`:
    /// equality conditions take a ball of block values as one array, key ranges one arm each.
    pub fn bitmap_serves(&self, k: i32) -> bool {
        let Ok(k) = u32::try_from(k) else { return false };
        if self.key_blocks > 1 {
            // One key range per probed value of each table of the family.
            let Ok(keys) = crate::keys::family(self.count, self.key_blocks) else { return false };
            let r = crate::keys::family_radius(k, self.count, self.key_blocks);
            let arms: u64 = keys.iter().map(|key| probe::ball_size(key.width, r)).fold(0, u64::saturating_add);
            return arms <= MAX_RANGE_ARMS;
        }
        let arms: u64 = probe::radii(k, self.count)
            .into_iter()
            .enumerate()
            .filter(|&(i, _)| self.ranges[i])
            .filter_map(|(i, r)| {
                let block = Block::new(i as i64, i64::from(self.count)).ok()?;
                Some(probe::ball_size(block.width, r?))
            })
            .sum();
        arms <= MAX_RANGE_ARMS
    }
}

/// The complete, fully indexed layouts of `source` (of its element `element`, for a set
/// column) among `columns`, each once, by block count.
pub fn layouts<I: Copy>(columns: &[BlockColumn<I>], source: i16, element: Option<u32>) -> Vec<Layout<I>> {
    // Per block count, per block: the index the probe reads (permuted before covering before
    // plain: smaller entries, the same answer) and the column equality conditions use.
    type Slots<'a, I> = Vec<(Option<&'a BlockColumn<I>>, Option<&'a BlockColumn<I>>)>;
    let mut by_count: HashMap<u32, Slots<I>> = HashMap::new();
    let wanted = |c: &&BlockColumn<I>| {
        c.source == source && c.element == element && (c.btree.is_some() || c.permuted) && c.index < c.count && c.key_blocks == 1
    };
    for c in columns.iter().filter(wanted) {
        let slots = by_count.entry(c.count).or_insert_with(|| vec![(None, None); c.count as usize]);
        let (probe, plain) = &mut slots[c.index as usize];
        let rank = |c: &BlockColumn<I>| u8::from(c.permuted) * 2 + u8::from(c.covering.is_some());
        if probe.is_none_or(|old| rank(old) < rank(c)) {
            *probe = Some(c);
        }
        if c.btree.is_some() && plain.is_none_or(|old| old.covering.is_none() && c.covering.is_some()) {
            *plain = Some(c);
        }
    }
    let mut out: Vec<Layout<I>> = by_count
        .into_iter()
        .filter_map(|(count, slots)| {
            let probes = slots.iter().map(|s| s.0).collect::<Option<Vec<&BlockColumn<I>>>>()?;
            Some(Layout {
                count,
                // Without an equality index for some block, its condition is the expression
                // simhash_block(source, i, m) (attnum 0): exact, though no index serves it.
                columns: slots.iter().map(|s| s.1.map_or(0, |c| c.attnum)).collect(),
                covering: probes.iter().map(|c| c.covering).collect(),
                ranges: slots.iter().map(|s| s.1.is_none()).collect(),
                key_blocks: 1,
            })
        })
        .collect();
    out.sort_by_key(|l| l.count);
    out
}

/// The complete families of keys of several blocks of column `source` among `columns` (every
/// table of the family indexed), each once, by block count then key size. Only the leaf-page
/// probe reads them; every other reader takes `layouts`.
pub fn keyed_layouts<I: Copy>(columns: &[BlockColumn<I>], source: i16) -> Vec<Layout<I>> {
    let mut by_family: HashMap<(u32, u32), Vec<Option<I>>> = HashMap::new();
    for c in columns.iter().filter(|c| c.source == source && c.element.is_none() && c.key_blocks > 1 && c.permuted) {
        let (Some(n), Some(index)) = (crate::keys::tables(c.count, c.key_blocks), c.covering) else { continue };
        let slots = by_family.entry((c.count, c.key_blocks)).or_insert_with(|| vec![None; n as usize]);
        if let Some(slot) = slots.get_mut(c.index as usize) {
            slot.get_or_insert(index);
        }
    }
    let mut out: Vec<Layout<I>> = by_family
        .into_iter()
        .filter_map(|((count, key_blocks), slots)| {
            Some(Layout {
                count,
                columns: vec![0; count as usize],
                covering: Some(slots.into_iter().collect::<Option<Vec<I>>>()?),
                ranges: vec![true; count as usize],
                key_blocks,
            })
        })
        .collect();
    out.sort_by_key(|l| (l.count, l.key_blocks));
    out
}

/// How a lookup may read a table's block indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The leaf-page probe under a TID scan: covering and permuted indexes, read directly.
    Probe,
    /// Only PostgreSQL's own index scans (the BitmapOr form, where the probe may not run):
    /// equality on block columns and, with `key_ranges`, key ranges of permuted indexes. Those
    /// conditions call `simhash_permute`, which cannot be leakproof (it refuses bad block
    /// numbers), so under row-level security they could only filter, not scan: no key ranges
    /// there.
    Bitmap { key_ranges: bool },
}

/// The layout that answers `k` with the least work on a table of `rows` rows, and its score
/// (`probe::best_layout`). Read by the BitmapOr form, covering and permuted indexes are scored
/// (and will be used) as plain ones, and layouts whose key ranges it may not use, or would need
/// too many of, are left out.
///
/// Families of keys of several blocks (`keyed_layouts`) are read by the probe only. One is taken
/// over the best block layout when the model of `simhash_create_index` (`lookup_entries`, in
/// leaf entries, measured with the leaf map) says it costs less, each index weighed
/// ([`family_pays`]); its score is then the block layout's, scaled by that ratio.
pub fn best_layout<I>(layouts: Vec<Layout<I>>, k: i32, rows: f64, reader: Reader) -> Option<(Layout<I>, f64)> {
    let probe = reader == Reader::Probe;
    let (mut keyed, mut layouts): (Vec<Layout<I>>, Vec<Layout<I>>) = layouts.into_iter().partition(|l| l.key_blocks > 1);
    if let Reader::Bitmap { key_ranges } = reader {
        layouts.retain(|l| l.bitmap_serves(k) && (key_ranges || !l.ranges.contains(&true)));
        // Read by the BitmapOr form, a family is key ranges of its indexes: only where no block
        // layout serves (they were chosen for the probe), and never under row-level security.
        keyed.retain(|l| key_ranges && l.bitmap_serves(k));
        if !layouts.is_empty() {
            keyed.clear();
        }
        if !keyed.is_empty() {
            let family = keyed.swap_remove(0);
            let cost = crate::keys::lookup_cost_keys(i64::from(k), family.count, family.key_blocks, rows)?;
            return Some((Layout { covering: None, ..family }, cost.score()));
        }
    }
    let shapes: Vec<(u32, bool)> = layouts.iter().map(|l| (l.count, probe && l.covering.is_some())).collect();
    let best_blocks = probe::best_layout(&shapes, i64::from(k), rows);
    let kk = u32::try_from(k).ok();
    // The family's entries with its indexes weighed, and its tables.
    let keyed_best = kk.and_then(|k| {
        keyed
            .into_iter()
            .filter_map(|l| {
                let tables = crate::keys::tables(l.count, l.key_blocks)?;
                Some((keyed_entries(k, l.count, l.key_blocks, rows)?.1, tables, l))
            })
            .min_by(|a, b| with_indexes(a.0, a.1).total_cmp(&with_indexes(b.0, b.1)))
    });
    match (best_blocks, keyed_best) {
        (Some((chosen, score)), Some((entries, tables, family))) => {
            let blocks = &layouts[chosen];
            let block_entries = kk.and_then(|k| {
                if blocks.covering.is_some() && blocks.ranges.iter().all(|&r| r) {
                    permuted_entries(k, blocks.count, rows).map(|(_, _, e)| e)
                } else {
                    lookup_entries(k, blocks.count, rows).map(|(_, e)| e)
                }
            });
            match block_entries.map(|block_entries| family_pays(entries, tables, block_entries, blocks.count)) {
                Some(pays) if pays > 1.0 => Some((family, score / pays)),
                _ => {
                    let mut layout = layouts.into_iter().nth(chosen)?;
                    if !probe {
                        layout.covering = None;
                    }
                    Some((layout, score))
                }
            }
        }
        (Some((chosen, score)), None) => {
            let mut layout = layouts.into_iter().nth(chosen)?;
            if !probe {
                layout.covering = None;
            }
            Some((layout, score))
        }
        // A family alone: scored in the probe's units (a probed value, a twentieth a candidate).
        (None, Some((_, _, family))) => {
            let cost = crate::keys::lookup_cost_keys(i64::from(k), family.count, family.key_blocks, rows)?;
            Some((family, cost.covering_score()))
        }
        (None, None) => None,
    }
}

/// A layout to build: its block count and form, and what a lookup through it costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Build {
    pub blocks: u32,
    /// Permuted B-trees (`simhash_permute(fp, i, m)`, no columns); else generated block columns
    /// with covering indexes.
    pub permuted: bool,
    /// Blocks per probed key in a lookup at the k the layout was chosen for (`probe_window`;
    /// always 1 for block columns).
    pub window: u32,
    /// 1 for blocks; else a family of keys of this many blocks (`keys`), C(blocks, key_blocks)
    /// permuted indexes.
    pub key_blocks: u32,
    /// A lookup at the k the layout was chosen for: B-tree descents and expected entries read.
    pub cost: probe::LookupCost,
    /// The same in leaf entries, a probed value counted as [`probe_descent_in_entries`].
    pub entries: f64,
}

/// The block counts a layout may be chosen from: past 16, blocks of 4 bits or fewer match a
/// sixteenth of the table each.
pub const MAX_CHOSEN_BLOCKS: u32 = 16;

/// Lookups whose cost is within this factor of the cheapest count as equals, and the fewest
/// blocks (the fewest, smallest indexes) wins among them.
const AS_CHEAP: f64 = 1.1;

/// Leaf entries one probed block value costs in a lookup read on the leaf pages (finding its
/// leaf page, reading its first entries), at any size (`probe_descent_in_entries`). Measured
/// on the grid of BENCHMARKS.md (*What `simhash_create_index` chooses*: permuted m = 2..8,
/// k = 0..12, 1M and 10M rows): a least-squares fit gives 50 (1M) and 110 (10M) entries a
/// value, but its choices were up to 1.4x off the best at large k, where many narrow probes
/// cost more than it says; 150 keeps every measured choice within 1.25x of the best lookup and
/// 1.5x of the smallest index as fast. Cheaper than `batch::DESCENT_IN_ENTRIES` (200), which
/// also carries a per-row lookup's own overhead (a statement, a scan), not paid again per
/// probed value.
pub const PROBE_DESCENT_IN_ENTRIES: f64 = 150.0;

/// [`PROBE_DESCENT_IN_ENTRIES`] in an index of `rows` entries: the same at every size. A probed
/// value starts at its leaf page through the backend's leaf map (`leaf_scan/leaf_map.rs`), not
/// with a descent whose cost grows with the tree (it grew as one, 3x at 100M, and so chose four
/// blocks at k = 3 and 7 where three were 1.4x faster), and an entry read costs more in a larger,
/// colder index too: fitted on lookups with few probed values per index (bench/scale.py,
/// BENCHMARKS.md *How lookups grow with the table*), a value costs 94 entries at 1M rows
/// (0.97 us against 10 ns), 86 at 10M (1.47 us against 17 ns) and about 45 at 100M (about
/// 2 us against 45 ns). 150 keeps the choices measured at 1M and 10M, and every one of 100M.
pub fn probe_descent_in_entries(_rows: f64) -> f64 {
    PROBE_DESCENT_IN_ENTRIES
}

/// What a lookup within `k` costs through `blocks` blocks read on their leaf pages (covering or
/// permuted) among `rows` fingerprints, in leaf entries; None when those blocks cannot serve k.
pub fn lookup_entries(k: u32, blocks: u32, rows: f64) -> Option<(probe::LookupCost, f64)> {
    window_entries(k, blocks, 1, rows)
}

/// The same through `blocks` permuted indexes, each probed on its window of `window` blocks
/// (`probe::plan_windows`).
pub fn window_entries(k: u32, blocks: u32, window: u32, rows: f64) -> Option<(probe::LookupCost, f64)> {
    let cost = probe::lookup_cost_windows(i64::from(k), i64::from(blocks), window, rows)?;
    Some((cost, cost.probes as f64 * probe_descent_in_entries(rows) + cost.candidates))
}

/// The window (blocks per probed key, `Block::window`) that a lookup within `k` through `blocks`
/// permuted indexes of `rows` entries reads with the least work: 1, each block alone, while
/// the table is small; wider as it grows past what the blocks were chosen for, where a probe's
/// candidates (rows / 2^width) outweigh the extra probed values of a wider, radius-probed key.
/// So a layout built for 10M rows keeps its lookups near flat at 1B without a rebuild. The
/// fewest blocks among equals; 1 when none serves k.
pub fn probe_window(k: u32, blocks: u32, rows: f64) -> u32 {
    permuted_entries(k, blocks, rows).map_or(1, |(window, _, _)| window)
}

/// [`window_entries`] at the window [`probe_window`] picks: what a lookup through `blocks`
/// permuted indexes costs; None when no window serves k.
pub fn permuted_entries(k: u32, blocks: u32, rows: f64) -> Option<(u32, probe::LookupCost, f64)> {
    // A block count from SQL may be anything: only 2 to 64 blocks have windows to weigh.
    if !(crate::blocks::MIN_BLOCKS..=crate::blocks::MAX_BLOCKS).contains(&blocks) {
        return None;
    }
    (1..blocks)
        .filter_map(|w| window_entries(k, blocks, w, rows).map(|(cost, entries)| (w, cost, entries)))
        .min_by(|a, b| a.2.total_cmp(&b.2))
}

/// The layout to build for lookups up to `max_k` on a table of `rows` rows: the block count
/// whose lookup at k = `max_k` reads the fewest entries (multi-index hashing: wide blocks while
/// the table is small, as few descents as the table's size allows as it grows), the fewest
/// blocks among near-equals. Permuted where `permuted_ok` (smaller and faster than block columns,
/// BENCHMARKS.md), which row-level security rules out: there only the BitmapOr form may run, and
/// it cannot use a permuted index.
///
/// Block counts are compared with each block probed alone (window 1), the model measured at 1M
/// and 10M rows. Windows serve a layout the table has outgrown (`probe_window`); read in windows,
/// more and narrower blocks would be chosen from about 10M rows on, at more bytes, which no
/// measurement has yet shown worth it.
pub fn layout_to_build(max_k: u32, rows: f64, permuted_ok: bool) -> Option<Build> {
    let candidates: Vec<Build> = (2..=MAX_CHOSEN_BLOCKS)
        .filter_map(|m| {
            let (cost, entries) = lookup_entries(max_k, m, rows)?;
            Some(Build { blocks: m, permuted: permuted_ok, window: 1, key_blocks: 1, cost, entries })
        })
        .collect();
    let cheapest = candidates.iter().map(|c| c.entries).min_by(f64::total_cmp)?;
    candidates.into_iter().find(|c| c.entries <= cheapest * AS_CHEAP)
}

/// The layout of `blocks` blocks, permuted where `permuted` (then read on the best window), and
/// what a lookup within `k` costs through it on `rows` rows; None when it cannot serve k.
pub fn layout_of(k: u32, blocks: u32, rows: f64, permuted: bool) -> Option<Build> {
    let (window, cost, entries) = if permuted {
        permuted_entries(k, blocks, rows)?
    } else {
        let (cost, entries) = lookup_entries(k, blocks, rows)?;
        (1, cost, entries)
    };
    Some(Build { blocks, permuted, window, key_blocks: 1, cost, entries })
}

/// What reading one more index costs a lookup, in leaf entries, beside its probed values and
/// entries: opening and locking it, checking its shape, starting its scan, at planning and at
/// execution. Block layouts of 2 to 5 indexes never needed it to be ranked (their choices were
/// measured without it), but a family of keys reads 10 to 56: on 10M and 30M rows a family of 10
/// indexes probed once each took as long as, then 1.45x as long as, three blocks probed 25 times
/// (BENCHMARKS.md, *Keys of several blocks*). Fitted there: about 3 us an index at 10M rows and
/// 12 us at 30M, against 2-3 us a probed value (`PROBE_DESCENT_IN_ENTRIES`); 1,000 entries ranks
/// every measured pair of family and blocks as measured. Weighed on both sides whenever a
/// family is compared with blocks ([`family_pays`]).
pub const INDEX_IN_ENTRIES: f64 = 1000.0;

/// What a lookup within `k` costs through the family of keys of `key_blocks` of `blocks` blocks
/// (`keys`) on `rows` rows, in leaf entries as [`lookup_entries`] counts them (its indexes not
/// counted: [`family_pays`] weighs them); None when the family cannot serve k.
pub fn keyed_entries(k: u32, blocks: u32, key_blocks: u32, rows: f64) -> Option<(probe::LookupCost, f64)> {
    let cost = crate::keys::lookup_cost_keys(i64::from(k), blocks, key_blocks, rows)?;
    Some((cost, cost.probes as f64 * probe_descent_in_entries(rows) + cost.candidates))
}

/// How many times cheaper a lookup through a family of `tables` indexes reading `family_entries`
/// is than one through `block_indexes` block indexes reading `block_entries` (above 1: the family
/// is cheaper), each index weighed [`INDEX_IN_ENTRIES`].
pub fn family_pays(family_entries: f64, tables: u64, block_entries: f64, block_indexes: u32) -> f64 {
    with_indexes(block_entries, u64::from(block_indexes)) / with_indexes(family_entries, tables).max(1e-9)
}

/// A lookup's cost in leaf entries: the `entries` it reads and its `indexes`, each weighed
/// [`INDEX_IN_ENTRIES`].
fn with_indexes(entries: f64, indexes: u64) -> f64 {
    entries + indexes as f64 * INDEX_IN_ENTRIES
}

/// The family of keys of `key_blocks` of `blocks` blocks as a layout to build, and what a lookup
/// within `k` costs through it on `rows` rows.
pub fn keyed_of(k: u32, blocks: u32, key_blocks: u32, rows: f64) -> Option<Build> {
    let (cost, entries) = keyed_entries(k, blocks, key_blocks, rows)?;
    Some(Build { blocks, permuted: true, window: key_blocks, key_blocks, cost, entries })
}

/// The family of keys of several blocks whose lookup within `max_k` reads the fewest entries on
/// `rows` rows, the fewest tables (bytes) among near-equals. Keys of all but one block are left
/// out: those are the windows of permuted blocks (`probe_window`), which a block layout reads
/// already.
pub fn keyed_to_build(max_k: u32, rows: f64) -> Option<Build> {
    let cost = |b: &Build| with_indexes(b.entries, crate::keys::tables(b.blocks, b.key_blocks).unwrap_or(0));
    let candidates: Vec<Build> = (3..=crate::keys::MAX_KEY_BLOCKS)
        .flat_map(|m| (2..m - 1).map(move |c| (m, c)))
        .filter_map(|(m, c)| keyed_of(max_k, m, c, rows))
        .collect();
    let cheapest = candidates.iter().map(cost).min_by(f64::total_cmp)?;
    candidates
        .into_iter()
        .filter(|c| cost(c) <= cheapest * AS_CHEAP)
        .min_by_key(|c| crate::keys::tables(c.blocks, c.key_blocks))
}

/// A family of keys worth naming beside `chosen`, the block layout built for `max_k` on `rows`
/// rows: the best one (`keyed_to_build`) when a lookup through it costs at most half, its indexes
/// weighed ([`family_pays`]). `simhash_create_index` builds only blocks unless asked: a family
/// takes C(m, c) indexes, and only `simhash_near`'s lookups read it (joins' filters,
/// nearest-first searches and the ETL helpers read blocks), so its bytes are the user's choice,
/// which the NOTICE puts to them.
pub fn keyed_alternative(max_k: u32, rows: f64, chosen: &Build) -> Option<Build> {
    keyed_to_build(max_k, rows).filter(|keyed| {
        let tables = crate::keys::tables(keyed.blocks, keyed.key_blocks).unwrap_or(u64::MAX);
        family_pays(keyed.entries, tables, chosen.entries, chosen.blocks) >= 2.0
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_join_looks_up_only_what_reads_a_small_share_of_the_table() {
        // k = 3 on four blocks reads 4/65,536 of the table; k = 7, 68/65,536, and a thirty-second
        // on eight blocks; k = 12 on eight blocks about a fifth, and k = 64 every row eight times.
        assert!(join_lookup_pays(3, 4) && join_lookup_pays(7, 4) && join_lookup_pays(7, 8) && join_lookup_pays(16, 4));
        assert!(!join_lookup_pays(12, 8) && !join_lookup_pays(64, 8) && !join_lookup_pays(64, 4));
    }


    #[test]
    fn bytes_follow_the_measured_entries() {
        // Three permuted blocks at 100M rows: 6.3 GB measured, four 8.4 GB.
        let gb = |b: f64| b / (1u64 << 30) as f64;
        assert!((gb(layout_bytes(1e8, 3, 1, Holding::Permuted)) - 6.3).abs() < 0.1);
        assert!((gb(layout_bytes(1e8, 4, 1, Holding::Permuted)) - 8.4).abs() < 0.1);
        // Four covering columns at 1M rows: 158.5 bytes a row measured.
        assert!((layout_bytes(1e6, 4, 1, Holding::CoveringColumns) / 1e6 - 158.5).abs() < 1.0);
        assert_eq!(layout_bytes(1e6, 4, 3, Holding::Expressions { covering: true }), 3.0 * layout_bytes(1e6, 4, 1, Holding::Expressions { covering: true }));
        // An index is at least a metapage and a leaf.
        assert_eq!(layout_bytes(-5.0, 4, 1, Holding::Columns), 4.0 * MIN_INDEX_BYTES);
        assert_eq!(layout_bytes(2.0, 4, 1, Holding::Permuted), 4.0 * MIN_INDEX_BYTES);
        assert_eq!(layout_bytes(1e6, 4, 0, Holding::Permuted), layout_bytes(1e6, 4, 1, Holding::Permuted));
    }

    use super::*;

    const BITMAP: Reader = Reader::Bitmap { key_ranges: true };

    /// Block `index` of `count` of column 1 in column `attnum` (0: an expression index), with
    /// index `id` as plain, covering or permuted.
    fn block(attnum: i16, index: u32, count: u32, id: u32, kind: &str) -> BlockColumn<u32> {
        BlockColumn {
            attnum,
            name: format!("b{index}of{count}"),
            source: 1,
            element: None,
            index,
            count,
            btree: (kind != "permuted").then_some(id),
            covering: (kind != "plain").then_some(id),
            permuted: kind == "permuted",
            key_blocks: 1,
        }
    }

    fn four(kind: &str, first_id: u32) -> Vec<BlockColumn<u32>> {
        (0..4).map(|i| block(if kind == "permuted" { 0 } else { 2 + i as i16 }, i, 4, first_id + i, kind)).collect()
    }

    #[test]
    fn a_layout_needs_every_block_indexed() {
        let mut columns = four("covering", 10);
        columns.pop();
        assert!(layouts(&columns, 1, None).is_empty());
        // A block without any index does not count either.
        columns.push(BlockColumn { btree: None, covering: None, ..block(5, 3, 4, 0, "plain") });
        assert!(layouts(&columns, 1, None).is_empty());
        // Another source column or element, or a nonsense block number, is not this layout.
        let mut other = four("covering", 10);
        other[3].source = 2;
        assert!(layouts(&other, 1, None).is_empty());
        other[3] = BlockColumn { element: Some(1), ..four("covering", 10)[3].clone() };
        assert!(layouts(&other, 1, None).is_empty());
        other[3] = BlockColumn { index: 7, ..four("covering", 10)[3].clone() };
        assert!(layouts(&other, 1, None).is_empty());
    }

    #[test]
    fn the_probe_prefers_permuted_then_covering_and_bitmaps_keep_the_columns() {
        let mut columns = four("plain", 10);
        columns.extend(four("covering", 20));
        columns.extend(four("permuted", 30));
        let found = layouts(&columns, 1, None);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].covering, Some(vec![30, 31, 32, 33]));
        assert_eq!(found[0].columns, vec![2, 3, 4, 5]);
        assert_eq!(found[0].ranges, vec![false; 4]);
        // Permuted indexes alone: the BitmapOr reads key ranges of every block.
        let permuted = layouts(&four("permuted", 30), 1, None);
        assert_eq!(permuted[0].columns, vec![0; 4]);
        assert_eq!(permuted[0].ranges, vec![true; 4]);
        // Plain indexes alone: a BitmapOr layout the probe cannot read.
        assert_eq!(layouts(&four("plain", 10), 1, None)[0].covering, None);
    }

    #[test]
    fn layouts_come_once_per_block_count_in_order() {
        let mut columns: Vec<BlockColumn<u32>> = (0..8).map(|i| block(10 + i as i16, i, 8, 100 + i, "covering")).collect();
        columns.extend(four("covering", 10));
        columns.extend(four("plain", 20));
        let found = layouts(&columns, 1, None);
        assert_eq!(found.iter().map(|l| l.count).collect::<Vec<_>>(), vec![4, 8]);
    }

    #[test]
    fn the_best_layout_follows_the_cost_model_and_the_probe_permission() {
        let mut columns: Vec<BlockColumn<u32>> = (0..8).map(|i| block(10 + i as i16, i, 8, 100 + i, "covering")).collect();
        columns.extend(four("covering", 10));
        let found = layouts(&columns, 1, None);
        // k = 3 on 10M rows: four 16-bit blocks read ~600 entries, eight 8-bit ones ~150,000.
        let (chosen, _) = best_layout(found.clone(), 3, 1e7, Reader::Probe).unwrap();
        assert_eq!(chosen.count, 4);
        // Without the probe the layout is scored and used as plain indexes.
        let (plain, _) = best_layout(found, 3, 1e7, BITMAP).unwrap();
        assert_eq!((plain.count, plain.covering), (4, None));
        // A permuted-only layout serves the BitmapOr while its key ranges are few: k = 7 on
        // four blocks takes 4 x 17 ranges, k = 11 4 x 137; a k no layout serves is None.
        let permuted = layouts(&four("permuted", 30), 1, None);
        assert!(best_layout(permuted.clone(), 3, 1e7, Reader::Probe).is_some());
        assert!(best_layout(permuted.clone(), 7, 1e7, BITMAP).is_some());
        assert!(permuted[0].bitmap_serves(7) && !permuted[0].bitmap_serves(11));
        assert!(best_layout(permuted.clone(), 11, 1e7, BITMAP).is_none());
        assert!(best_layout(permuted.clone(), 64, 1e7, Reader::Probe).is_none());
        // Under row-level security key ranges cannot be index conditions: no such layout.
        assert!(best_layout(permuted, 3, 1e7, Reader::Bitmap { key_ranges: false }).is_none());
    }
    #[test]
    fn an_outgrown_layout_reads_wider_windows() {
        // Four permuted blocks chosen for k = 3 at 10M rows: blocks alone there, windows of two
        // once a probe's candidates outweigh the radius probes of a 32-bit key.
        assert_eq!(probe_window(3, 4, 1e7), 1);
        let rows = (6..=12).map(|e| 10f64.powi(e)).find(|&rows| probe_window(3, 4, rows) == 2).unwrap();
        let (_, alone) = window_entries(3, 4, 1, rows).unwrap();
        let (_, wide) = window_entries(3, 4, 2, rows).unwrap();
        assert!(wide <= alone);
        // The window never costs more than the blocks alone, at any size.
        for k in 0..=10 {
            for m in 2..=8 {
                for rows in [1e3, 1e6, 1e8, 1e9, 1e10] {
                    if let (Some((_, _, best)), Some((_, alone))) = (permuted_entries(k, m, rows), lookup_entries(k, m, rows)) {
                        assert!(best <= alone, "k = {k}, m = {m}, rows = {rows}");
                    }
                }
            }
        }
        // Two blocks have no window wider than one; a count no layout has, none at all (and at
        // once: the count may come from SQL).
        assert_eq!(probe_window(3, 2, 1e12), 1);
        assert_eq!(probe_window(64, u32::MAX, f64::NEG_INFINITY), 1);
        assert_eq!(probe_window(3, 0, 1e9), 1);
        assert!(layout_of(64, i32::MAX as u32, 1e9, true).is_none());
    }

    #[test]
    fn the_layout_to_build_follows_the_table_size() {
        let blocks = |k, rows| layout_to_build(k, rows, true).unwrap().blocks;
        // k = 7 at 10M rows: four 16-bit blocks (68 descents, ~10,000 entries), not the eight
        // 8-bit blocks of "k + 1 blocks" (8 descents, ~310,000 entries), measured 9x slower.
        assert_eq!(blocks(7, 1e7), 4);
        assert_eq!(blocks(3, 1e7), 4);
        assert_eq!(blocks(3, 1e6), 4);
        // A small table affords narrow blocks, which need no radius probes.
        assert!(blocks(7, 1e4) > 4);
        // k = 0: one exact probe of one block; the widest blocks are the fewest.
        assert_eq!(blocks(0, 1e7), 2);
        // The block count never grows with the table at a fixed k.
        for k in 0..=12 {
            let counts: Vec<u32> = [1e3, 1e4, 1e5, 1e6, 1e7, 1e8].iter().map(|&rows| blocks(k, rows)).collect();
            assert!(counts.windows(2).all(|w| w[1] <= w[0]), "k = {k}: {counts:?}");
        }
        // Row-level security: block columns, the same count.
        let rls = layout_to_build(7, 1e7, false).unwrap();
        assert_eq!((rls.blocks, rls.permuted, rls.window), (4, false, 1));
        // What the grid of BENCHMARKS.md measured at 1M and 10M rows for max_k = 0..12.
        let chosen = |rows| (0..=12).map(|k| blocks(k, rows)).collect::<Vec<u32>>();
        assert_eq!(chosen(1e6), [2, 2, 3, 4, 5, 5, 4, 4, 5, 5, 5, 6, 5]);
        // At 10M, k = 5 takes three blocks (the old grid's best, 0.292 ms against 0.353 for four;
        // a tie in bench/scale.py's) and k = 9 four (1.12x the old grid's best, five blocks, at
        // 0.8x its bytes).
        assert_eq!(chosen(1e7), [2, 2, 3, 4, 4, 3, 4, 4, 4, 4, 4, 4, 4]);
        // At 100M, three blocks from k = 2 to 11: bench/scale.py measured them fastest at k = 3, 5
        // and 7 (0.168, 0.342 and 1.265 ms, against 0.243, 0.914 and 1.824 for four and 0.220,
        // 1.073 and 6.0 for two), at 0.75x the bytes of four.
        assert_eq!(chosen(1e8), [2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4]);
        // Up to 10M rows the chosen layout's lookups read blocks alone.
        for k in 0..=12 {
            for rows in [1e4, 1e6, 1e7] {
                let chosen = layout_to_build(k, rows, true).unwrap();
                assert_eq!(probe_window(k, chosen.blocks, rows), 1, "k = {k}, rows = {rows}");
            }
        }
        // The chosen layout is within 10 % of every other count's lookup.
        for k in 0..=12 {
            for rows in [1e4, 1e6, 1e7] {
                let chosen = layout_to_build(k, rows, true).unwrap();
                for m in 2..=MAX_CHOSEN_BLOCKS {
                    if let Some((_, entries)) = lookup_entries(k, m, rows) {
                        assert!(chosen.entries <= entries * 1.1, "k = {k}, rows = {rows}, m = {m}");
                    }
                }
            }
        }
    }

    /// The family of keys of `c` of `m` blocks of column 1, index ids from `first_id` in the
    /// family's order; `skip` leaves one table out.
    fn family(m: u32, c: u32, first_id: u32, skip: Option<u32>) -> Vec<BlockColumn<u32>> {
        (0..crate::keys::tables(m, c).unwrap() as u32)
            .filter(|&i| Some(i) != skip)
            .map(|i| BlockColumn { index: i, count: m, key_blocks: c, ..block(0, i, m, first_id + i, "permuted") })
            .collect()
    }

    #[test]
    fn families_of_keys_are_found_whole_and_read_by_the_probe_only() {
        let mut columns = four("permuted", 30);
        columns.extend(family(5, 2, 100, None));
        // Blocks readers see only blocks.
        assert_eq!(layouts(&columns, 1, None).len(), 1);
        let keyed = keyed_layouts(&columns, 1);
        assert_eq!(keyed.len(), 1);
        assert_eq!((keyed[0].count, keyed[0].key_blocks), (5, 2));
        assert_eq!(keyed[0].covering, Some((100..110).collect::<Vec<u32>>()));
        // A table missing, or another column's: no family.
        assert!(keyed_layouts(&family(5, 2, 100, Some(3)), 1).is_empty());
        assert!(keyed_layouts(&columns, 2).is_empty());
        // The probe takes the family where it costs less, its ten indexes weighed: k = 3 at 10B
        // rows (10 exact probes against 100 of two-block windows), not at 100M (four blocks read
        // about 6,000 entries, which cost less than opening six more indexes) nor at 1M.
        let mut all = layouts(&columns, 1, None);
        all.extend(keyed.clone());
        let (huge, _) = best_layout(all.clone(), 3, 1e10, Reader::Probe).unwrap();
        assert_eq!(huge.key_blocks, 2);
        for rows in [1e6, 1e8] {
            let (chosen, _) = best_layout(all.clone(), 3, rows, Reader::Probe).unwrap();
            assert_eq!((chosen.count, chosen.key_blocks), (4, 1), "rows = {rows}");
        }
        // The BitmapOr form reads a family only where no block layout serves, as key ranges (ten
        // at k = 3, 3,520 at k = 5: too many), never under row-level security; a family alone
        // serves the probe.
        let (bitmap, _) = best_layout(all, 3, 1e8, BITMAP).unwrap();
        assert_eq!(bitmap.key_blocks, 1);
        assert!(keyed[0].bitmap_serves(3) && !keyed[0].bitmap_serves(5));
        let (alone, _) = best_layout(keyed.clone(), 3, 1e8, BITMAP).unwrap();
        assert_eq!((alone.key_blocks, alone.covering), (2, None));
        assert!(best_layout(keyed.clone(), 5, 1e8, BITMAP).is_none());
        assert!(best_layout(keyed.clone(), 3, 1e8, Reader::Bitmap { key_ranges: false }).is_none());
        assert_eq!(best_layout(keyed, 3, 1e6, Reader::Probe).unwrap().0.key_blocks, 2);
    }

    #[test]
    fn a_family_is_named_only_where_it_costs_half() {
        // Read alone, a family of keys of 2 of 5 blocks (10 tables of 25-26 bits, one exact probe
        // each) reads a third of the entries of three blocks at 100M rows, k = 3, at 10/3 of
        // their bytes; its ten indexes cost more than that saves (measured at 10M and 30M rows).
        let chosen = layout_to_build(3, 1e8, true).unwrap();
        let keyed = keyed_to_build(3, 1e8).unwrap();
        assert_eq!((keyed.blocks, keyed.key_blocks, keyed.cost.probes), (5, 2, 10));
        assert!(keyed.entries * 2.5 < chosen.entries);
        assert!(family_pays(keyed.entries, 10, chosen.entries, chosen.blocks) < 1.0);
        // So with the indexes weighed a family halves the cost of the blocks built only around
        // ten billion rows, at k = 4 (keys of 3 of 7 blocks against two blocks) and k = 8 (2 of 5
        // against three): the NOTICE names none up to a billion rows, at any k to 12.
        let mut named = Vec::new();
        for k in 0..=12 {
            for rows in [1e6, 1e7, 1e8, 1e9, 1e10, 1e11] {
                let chosen = layout_to_build(k, rows, true).unwrap();
                if let Some(family) = keyed_alternative(k, rows, &chosen) {
                    named.push((k, rows, family.blocks, family.key_blocks));
                }
            }
        }
        assert_eq!(named, [(4, 1e10, 7, 3), (8, 1e10, 5, 2)]);
        // The rule itself: a family of 10 indexes reading 1,000 entries against 2 blocks reading
        // 30,000 costs 11,000 against 32,000.
        assert!((family_pays(1000.0, 10, 30000.0, 2) - 32.0 / 11.0).abs() < 1e-9);
        let cheap = Build { entries: 30000.0, blocks: 2, ..chosen };
        assert!(keyed_alternative(3, 1e10, &Build { entries: 1e6, ..cheap }).is_some());
        // Never keys of all but one block (the windows of the blocks), never more than 64 tables.
        for k in 0..=12 {
            for rows in [1e6, 1e8, 1e9, 1e10] {
                if let Some(b) = keyed_to_build(k, rows) {
                    assert!(b.key_blocks >= 2 && b.key_blocks + 1 < b.blocks);
                    assert!(crate::keys::tables(b.blocks, b.key_blocks).unwrap() <= crate::keys::MAX_KEY_TABLES);
                }
            }
        }
    }
}
