//! Which block indexes of a table a lookup reads: the complete layouts among the block columns
//! and indexes the extension found (`src/layout.rs` reads them from the catalog), and the one
//! that answers a k with the least work.
//!
//! Plain Rust so the rules are unit-tested here; the index identity `I` is PostgreSQL's Oid in
//! the extension and a small integer in the tests.

use std::collections::HashMap;

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
}

/// A complete, fully indexed set of block columns of one source column: `columns[i]` holds
/// block i of `count` (0: an expression index holds it); `covering[i]`, when every block has
/// one, its covering (or permuted) index.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout<I> {
    pub count: u32,
    pub columns: Vec<i16>,
    pub covering: Option<Vec<I>>,
    /// Whether every block has an index that equality conditions on the block can use (the
    /// BitmapOr form): false when some block has only a permuted index.
    pub plain: bool,
}

/// The complete, fully indexed layouts of `source` (of its element `element`, for a set
/// column) among `columns`, each once, by block count.
pub fn layouts<I: Copy>(columns: &[BlockColumn<I>], source: i16, element: Option<u32>) -> Vec<Layout<I>> {
    // Per block count, per block: the index the probe reads (permuted before covering before
    // plain: smaller entries, the same answer) and the column equality conditions use.
    type Slots<'a, I> = Vec<(Option<&'a BlockColumn<I>>, Option<&'a BlockColumn<I>>)>;
    let mut by_count: HashMap<u32, Slots<I>> = HashMap::new();
    let wanted = |c: &&BlockColumn<I>| {
        c.source == source && c.element == element && (c.btree.is_some() || c.permuted) && c.index < c.count
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
            let plain = slots.iter().map(|s| s.1).collect::<Option<Vec<&BlockColumn<I>>>>();
            Some(Layout {
                count,
                // Without an equality index for some block, its condition is the expression
                // simhash_block(source, i, m) (attnum 0): exact, though no index serves it.
                columns: slots.iter().map(|s| s.1.map_or(0, |c| c.attnum)).collect(),
                covering: probes.iter().map(|c| c.covering).collect(),
                plain: plain.is_some(),
            })
        })
        .collect();
    out.sort_by_key(|l| l.count);
    out
}

/// The layout that answers `k` with the least work on a table of `rows` rows, and its score
/// (`probe::best_layout`). With `use_covering` false (the probe may not read index pages, under
/// row-level security, say), covering indexes are scored (and will be used) as plain ones and
/// layouts that only a permuted index completes are left out.
pub fn best_layout<I>(mut layouts: Vec<Layout<I>>, k: i32, rows: f64, use_covering: bool) -> Option<(Layout<I>, f64)> {
    if !use_covering {
        layouts.retain(|l| l.plain);
    }
    let shapes: Vec<(u32, bool)> = layouts.iter().map(|l| (l.count, use_covering && l.covering.is_some())).collect();
    let (chosen, score) = probe::best_layout(&shapes, i64::from(k), rows)?;
    let mut layout = layouts.into_iter().nth(chosen)?;
    if !use_covering {
        layout.covering = None;
    }
    Some((layout, score))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(found[0].plain);
        // Permuted indexes alone: the probe's layout, no BitmapOr (columns are expressions).
        let permuted = layouts(&four("permuted", 30), 1, None);
        assert_eq!(permuted[0].columns, vec![0; 4]);
        assert!(!permuted[0].plain);
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
        let (chosen, _) = best_layout(found.clone(), 3, 1e7, true).unwrap();
        assert_eq!(chosen.count, 4);
        // Without the probe the layout is scored and used as plain indexes.
        let (plain, _) = best_layout(found, 3, 1e7, false).unwrap();
        assert_eq!((plain.count, plain.covering), (4, None));
        // A permuted-only layout serves the probe only; a k no layout serves is None.
        let permuted = layouts(&four("permuted", 30), 1, None);
        assert!(best_layout(permuted.clone(), 3, 1e7, true).is_some());
        assert!(best_layout(permuted.clone(), 3, 1e7, false).is_none());
        assert!(best_layout(permuted, 64, 1e7, true).is_none());
    }
}
