//! Reads a block index's entries for one block value straight from its B-tree leaf pages,
//! checking the fingerprint each entry carries.
//!
//! Through the index AM a k = 7 probe pays ~75 ns per index entry inside `btgettuple` (scan-key
//! checks through the function manager, a copy of every tuple, one call per entry) and reads
//! ~10,000 entries to keep a few dozen: that, not the descents, was most of its time. Here the
//! descent is nbtree's own (`_bt_search`, with its concurrent-split handling), and the leaf
//! level is read the way nbtree's forward scans read it: under a share lock, page by page to
//! the right until the high key says no entry with the value can follow, stepping over deleted
//! and half-dead pages. Each entry costs a comparison and a popcount.
//!
//! At k = 7 a lookup reads 68 values, each from a leaf page not in the CPU's cache, and then
//! cache misses are the cost: the start of a value on its page is found by interpolation
//! (`simhash_core::sorted_search`) over line pointers fetched all at once, not by a binary
//! search that misses nine times in a row; and the values of one index are read in key order,
//! a value that starts on the page the one before ended on (or on the next) read from there
//! without a new descent (`LeafScan::onward`). Together a quarter off a k = 7 lookup at 10M rows.
//!
//! Two shapes of index are read (`Shape`): covering ones, `(block) INCLUDE (fp)`, where a block
//! value is one key; and permuted ones, `(_simhash_permute(fp, i, m))`, where it is the range of
//! keys that start with it and the key is the fingerprint rotated.
//!
//! What keeps it correct, as for nbtree's own scans of an MVCC snapshot: the caller fetches
//! each TID from the table afterwards through the table AM, which applies the snapshot; a TID
//! that VACUUM freed and a new row took in between belongs to a row the snapshot cannot see.
//! SERIALIZABLE transactions get the same predicate locks as an index scan (each leaf page
//! read, or the whole index when it is empty). The index's first key must be int8, ascending,
//! in the integer B-tree family; posting lists (deduplication, which a permuted index of
//! repeated fingerprints uses) are read TID by TID: `index_probe::check_block_index` checks
//! the shape before any page is read.

use pgrx::pg_sys;
use simhash_core::blocks::Block;

mod leaf_map;
mod nbtree;

pub(crate) use leaf_map::stats as leaf_map_stats;

// `tuple` decodes ItemIdData's bitfield as laid out on little-endian machines.
#[cfg(target_endian = "big")]
compile_error!("leaf_scan reads B-tree line pointers as little-endian bitfields");

/// Ranges a whole-index read is cut into: between them no buffer lock is held, so a cancel
/// is served within one range's worth of leaf pages.
const WHOLE_INDEX_RANGES: u64 = 1024;

/// Ranges read one after the other without a descent at most, so that a cancel is served.
const ONWARD_RUN: usize = 64;

/// How a block index's entries hold the block and the fingerprint (`index_probe::check_block_index`
/// tells them apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `(block) INCLUDE (fp)`, or the two keys `(block, fp)`: the key is the block's value, the
    /// fingerprint follows it.
    Covering,
    /// `(_simhash_permute(fp, i, m))`: the key is the fingerprint rotated so that block i leads;
    /// a block value is a range of keys, and the fingerprint is the key rotated back.
    Permuted(Block),
    /// `(_simhash_block_key(fp, lead, m))`: the key is the fingerprint with the blocks of `lead`
    /// first; a lead value is a range of keys, and the fingerprint is the key put back.
    Keyed(simhash_core::keys::BlockKey),
}

/// One block index, ready to be read value by value.
pub(crate) struct LeafScan {
    index: pg_sys::Relation,
    heap: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    key: *mut nbtree::ScanInsert,
    shape: Shape,
}

/// Where a covering entry's fields sit: the key right after the 8-byte tuple header, the
/// fingerprint after it; both move 8 bytes further when the tuple has a null bitmap (its 4
/// bytes MAXALIGNed).
const KEY_OFFSET: usize = 8;
const KEY_OFFSET_WITH_NULLS: usize = 16;

/// One index tuple as this reader sees it. A NULL key sorts after every value (ASC NULLS LAST).
struct Entry {
    key: Option<i64>,
    fingerprint: Option<u64>,
    tid: pg_sys::ItemPointerData,
    /// A posting list (B-tree deduplication, which a permuted index of repeated fingerprints
    /// uses): its first heap TID and how many follow, all of them rows with this key; `tid` is
    /// then not a row's.
    posting: Option<(*const pg_sys::ItemPointerData, usize)>,
}

impl LeafScan {
    /// # Safety
    /// `index` must be open, locked, and a block index of the open `heap` of the `shape`
    /// `index_probe::check_block_index` found; `snapshot` must be an MVCC snapshot that
    /// outlives the scan.
    pub(crate) unsafe fn new(heap: pg_sys::Relation, index: pg_sys::Relation, snapshot: pg_sys::Snapshot, shape: Shape) -> Self {
        // With no tuple, every key is a NULL placeholder; `entries` fills in the first.
        // SAFETY: `index` is an open, locked block index (see # Safety); the key is palloc'd in the
        // current memory context and freed by Drop.
        unsafe {
            let key = nbtree::make_key(index);
            leaf_map::note_lookup(index);
            crate::compat::count_index_scan(index);
            LeafScan { index, heap, snapshot, key, shape }
        }
    }

    /// Appends to `out` the heap TIDs of the entries whose block value is one of `values` and
    /// whose fingerprint is within `k` bits of `query`. The values' key ranges are read in key
    /// order (`key_ranges`): a range that starts on the leaf page the one before ended on, or
    /// just right of it, is read from there without a new descent.
    ///
    /// # Safety
    /// As for `new`; no buffer lock may be held by the caller.
    pub(crate) unsafe fn entries(&mut self, values: &[i64], query: u64, k: u32, out: &mut Vec<pg_sys::ItemPointerData>) {
        let ranges = self.block_key_ranges(values.iter().map(|&value| (value, value)));
        // SAFETY: as for this function (see # Safety).
        unsafe {
            self.key_ranges(&ranges, &mut |fp, tid| {
                if (fp ^ query).count_ones() <= k {
                    out.push(tid);
                }
            });
        }
    }

    /// Hands each entry whose block value lies in `low..=high` and whose fingerprint is within
    /// `k` bits of `query` to `keep`, with its distance: the nearest-first scan
    /// (`nearest_scan`) orders rows by it. One descent, then the leaf level to the right;
    /// interrupts are served before the descent only (a buffer lock is held from there on), so
    /// a long read goes in several ranges.
    ///
    /// # Safety
    /// As for `entries`.
    pub(crate) unsafe fn range_with<F: FnMut(u32, pg_sys::ItemPointerData)>(
        &mut self,
        low: i64,
        high: i64,
        query: u64,
        k: u32,
        keep: &mut F,
    ) {
        // SAFETY: as for this function (see # Safety).
        unsafe {
            self.range_of_fingerprints(low, high, &mut |fp, tid| {
                let distance = (fp ^ query).count_ones();
                if distance <= k {
                    keep(distance, tid);
                }
            });
        }
    }

    /// As `range_with`, handing every entry with a fingerprint (not NULL) to `keep`: the pass
    /// of `simhash_ingest` over a whole index (`batch_probe`) checks each against its batch.
    ///
    /// # Safety
    /// As for `entries`.
    pub(crate) unsafe fn range_of_fingerprints<F: FnMut(u64, pg_sys::ItemPointerData)>(
        &mut self,
        low: i64,
        high: i64,
        keep: &mut F,
    ) {
        let ranges = self.block_key_ranges([(low, high)]);
        // SAFETY: as for this function (see # Safety).
        unsafe { self.key_ranges(&ranges, keep) };
    }

    /// The index keys of the block values in `ranges` (`low..=high` each; block values are
    /// never negative), as `key_ranges` reads them: sorted and merged, signed. A covering key is
    /// the block value; a permuted one is a range of keys starting with it, one unsigned range
    /// that the integer opclass orders signed, so a range across 2^63 is read as its two halves.
    fn block_key_ranges<I: IntoIterator<Item = (i64, i64)>>(&self, ranges: I) -> Vec<(i64, i64)> {
        simhash_core::sorted_search::signed_ranges(ranges.into_iter().map(|(low, high)| match self.shape {
            Shape::Covering => (low as u64, high as u64),
            Shape::Permuted(block) => block.permuted_range(low as u64, high as u64),
            Shape::Keyed(key) => key.range(low as u64, high as u64),
        }))
    }

    /// The entries whose index key lies in one of `ranges` (signed, sorted, disjoint: as
    /// `sorted_search::signed_ranges` gives them). A range starts where the one before left off
    /// when it can (`onward`), else with a descent; interrupts are served before each descent
    /// (no buffer lock is held then), and at least every `ONWARD_RUN` ranges.
    ///
    /// # Safety
    /// As for `entries`: the scan's relations open and locked, its snapshot live, no buffer lock
    /// held by the caller; `ranges` as `block_key_ranges` makes them. Returns with no buffer held.
    unsafe fn key_ranges<F: FnMut(u64, pg_sys::ItemPointerData)>(&mut self, ranges: &[(i64, i64)], keep: &mut F) {
        // SAFETY: the scan's relations are open and its snapshot live (see # Safety). At most one
        // leaf page is held at a time, in `held`, share-locked and pinned: it is passed on to
        // `onward` or `read_from`, which return the page they hold, or released, and released at
        // the end. Interrupts are served only with no buffer held.
        unsafe {
            let mut held: Option<pg_sys::Buffer> = None;
            for (n, &(low, high)) in ranges.iter().enumerate() {
                let onward = match held.take() {
                    Some(buf) if n % ONWARD_RUN != 0 => self.onward(buf, low),
                    Some(buf) => {
                        nbtree::release(self.index, buf);
                        None
                    }
                    None => None,
                };
                let buf = match onward {
                    Some(buf) => buf,
                    None => {
                        pg_sys::check_for_interrupts!();
                        let buf = match leaf_map::leaf_for(self.index, self.snapshot, low) {
                            Some(buf) => buf,
                            None => self.descend(low),
                        };
                        if buf == pg_sys::InvalidBuffer as pg_sys::Buffer {
                            // No root page: an empty index, which nbtree's own scans lock whole.
                            nbtree::lock_relation(self.index, self.snapshot);
                            return;
                        }
                        buf
                    }
                };
                held = Some(self.read_from(buf, low, high, keep));
            }
            if let Some(buf) = held {
                nbtree::release(self.index, buf);
            }
        }
    }

    /// Where the next range, from `low` on, can be read without a descent, given the leaf page
    /// `buf` (share-locked) that the range before it ended on: no entry left of `buf` is `low`
    /// or above, since that range's keys were all below `low` and it was read left to right.
    /// So `buf` itself serves when its high key does not bound it below `low` (nbtree's move
    /// right would stay there too); its right sibling when `low` lies less than the key span of
    /// `buf`'s own entries beyond its high key (the keys are spread evenly, so that is most
    /// likely the next page; if not, reading goes on to the right from there, as from any page
    /// left of the right one); otherwise None, `buf` released, and the caller descends.
    ///
    /// # Safety
    /// `buf` must be a pinned, share-locked leaf page of this scan's index, which the caller gives
    /// up: the page returned is held instead, or none.
    unsafe fn onward(&mut self, buf: pg_sys::Buffer, low: i64) -> Option<pg_sys::Buffer> {
        // SAFETY: `buf` is a pinned, share-locked leaf page of the index (see # Safety), so its
        // special space and line pointers may be read; `entry` reads offsets up to `max_offset`
        // only, and `step_to` gives `buf` up for its right sibling.
        unsafe {
            let page = pg_sys::BufferGetPage(buf);
            let opaque = page_opaque(page);
            if opaque.flags & nbtree::IGNORE == 0 {
                if opaque.next == nbtree::NONE {
                    return Some(buf);
                }
                if has_key(page, nbtree::HIKEY) {
                    match entry(self.index, page, nbtree::HIKEY).key {
                        None => return Some(buf), // a NULL high key: every value sorts below it
                        Some(high) if high >= low => return Some(buf),
                        Some(high) => {
                            let first = nbtree::HIKEY + 1;
                            let span = (first <= max_offset(page))
                                .then(|| entry(self.index, page, first).key)
                                .flatten()
                                .map(|first| i128::from(high) - i128::from(first));
                            if span.is_some_and(|span| span > 0 && i128::from(low) - i128::from(high) < span) {
                                let buf = leaf_map::step_to(self.index, buf, opaque.next);
                                nbtree::test_for_old_snapshot(self.snapshot, self.index, pg_sys::BufferGetPage(buf));
                                return Some(buf);
                            }
                        }
                    }
                }
            }
            nbtree::release(self.index, buf);
            None
        }
    }

    /// Hands every entry of this index, block 0 of `blocks`, within `k` bits of `query` to
    /// `keep`, with its distance. Block 0 holds values 0 .. 2^width - 1 (never negative; NULL
    /// keys, of NULL fingerprints, sort last and never match); they are read in
    /// `WHOLE_INDEX_RANGES` ranges, so that a cancel is served between two.
    ///
    /// # Safety
    /// As for `entries`; the index must be block 0 of a `blocks`-block layout.
    pub(crate) unsafe fn every_entry_with<F: FnMut(u32, pg_sys::ItemPointerData)>(
        &mut self,
        blocks: u32,
        query: u64,
        k: u32,
        keep: &mut F,
    ) {
        // SAFETY: as for this function (see # Safety).
        unsafe {
            // A keyed index's ranges are of its lead values, whatever `blocks` says; lead values
            // wider than the ranges' 32 bits go by their first 32.
            let (width, below) = match self.shape {
                Shape::Keyed(key) => (key.width.min(32), key.width.saturating_sub(32)),
                _ => (simhash_core::blocks::Block::new(0, i64::from(blocks)).map_or(32, |b| b.width), 0),
            };
            for (low, high) in whole_index_ranges(width) {
                self.range_with(low << below, (high << below) | ((1i64 << below) - 1), query, k, keep);
            }
        }
    }

    /// nbtree's descent to the leaf page where entries equal to `value` begin, share-locked;
    /// an invalid buffer when the index is empty.
    ///
    /// # Safety
    /// The scan's relations open and locked and its snapshot live; no buffer lock held (the
    /// descent locks pages).
    unsafe fn descend(&mut self, value: i64) -> pg_sys::Buffer {
        // SAFETY: `self.key` is the scan key `make_key` made for this index, ours alone (see #
        // Safety), and the descent takes the index, heap and snapshot it was made for.
        unsafe {
            {
                let key = &mut *self.key;
                key.keysz = 1;
                key.nextkey = false;
                key.pivotsearch_or_backward = false;
                key.anynullkeys = false;
                key.scantid = std::ptr::null_mut();
                key.scankeys[0].sk_flags &= !(pg_sys::SK_ISNULL as i32);
                key.scankeys[0].sk_argument = pg_sys::Datum::from(value);
            }
            nbtree::search(self.index, self.heap, self.key, self.snapshot)
        }
    }

    /// Reads the entries with keys in `low..=high` from the share-locked leaf page `buf` on, to
    /// the right as far as they go, and returns the last page read, still share-locked.
    ///
    /// # Safety
    /// `buf` must be a pinned, share-locked leaf page of this scan's index, which the caller gives
    /// up for the page returned.
    unsafe fn read_from<F: FnMut(u64, pg_sys::ItemPointerData)>(
        &mut self,
        mut buf: pg_sys::Buffer,
        low: i64,
        high: i64,
        keep: &mut F,
    ) -> pg_sys::Buffer {
        // SAFETY: `buf` is always a pinned, share-locked leaf page of the index (see # Safety;
        // `step_to` swaps it for its right sibling): its special space, line pointers and tuples
        // are read under the lock, at offsets up to `max_offset`, and a posting list's `n` TIDs lie
        // within its tuple (`entry` checks that before it hands them out).
        unsafe {
            loop {
                let page = pg_sys::BufferGetPage(buf);
                let opaque = page_opaque(page);
                if opaque.flags & nbtree::IGNORE == 0 {
                    nbtree::lock_page(self.index, pg_sys::BufferGetBlockNumber(buf), self.snapshot);
                    let rightmost = opaque.next == nbtree::NONE;
                    let first = if rightmost { nbtree::HIKEY } else { nbtree::HIKEY + 1 };
                    let last = max_offset(page);
                    prefetch_line_pointers(page, last);
                    let mut done = false;
                    let mut offset = lower_bound(self.index, page, first, last, low);
                    while offset <= last {
                        let entry = entry(self.index, page, offset);
                        match entry.key {
                            Some(key) if (low..=high).contains(&key) => {
                                let fingerprint = match self.shape {
                                    Shape::Covering => entry.fingerprint,
                                    Shape::Permuted(block) => Some(block.unpermute(key as u64)),
                                    Shape::Keyed(block_key) => Some(block_key.unkey(key as u64)),
                                };
                                if let Some(fp) = fingerprint {
                                    match entry.posting {
                                        None => keep(fp, entry.tid),
                                        Some((tids, n)) => {
                                            for t in 0..n {
                                                keep(fp, tids.add(t).read_unaligned());
                                            }
                                        }
                                    }
                                }
                            }
                            Some(key) if key < low => {}
                            _ => {
                                done = true;
                                break;
                            }
                        }
                        offset += 1;
                    }
                    if done || rightmost || high_key_above(self.index, page, high) {
                        break;
                    }
                } else if opaque.next == nbtree::NONE {
                    break;
                }
                let next = opaque.next;
                buf = leaf_map::step_to(self.index, buf, next);
                nbtree::test_for_old_snapshot(self.snapshot, self.index, pg_sys::BufferGetPage(buf));
            }
            buf
        }
    }
}

impl Drop for LeafScan {
    fn drop(&mut self) {
        // SAFETY: palloc'd by _bt_mkscankey in a context that is still current or a parent.
        unsafe { pg_sys::pfree(self.key.cast()) };
    }
}

/// The key ranges a whole-index read of a block index with `width`-bit values goes in
/// (`WHOLE_INDEX_RANGES` of them, at most): between two, no buffer lock is held, so a cancel is
/// served. NULL keys (NULL fingerprints) sort after every range and are never read.
pub(crate) fn whole_index_ranges(width: u32) -> impl Iterator<Item = (i64, i64)> {
    let values = 1u64 << width.min(32);
    let step = values.div_ceil(WHOLE_INDEX_RANGES).max(1);
    (0..values).step_by(step as usize).map(move |low| (low as i64, (low + step - 1).min(values - 1) as i64))
}

/// Whether `index`'s first key is in the order this reader walks: ascending, NULLs last, by the
/// integer B-tree family's comparison (signed 64-bit). A DESC or NULLS FIRST block index, or
/// one with a custom operator class, still serves the BitmapOr plan.
///
/// # Safety
/// `index` must be an open B-tree index with at least one key column.
pub(crate) unsafe fn walkable(index: pg_sys::Relation) -> bool {
    // SAFETY: `index` is an open B-tree index with a key column (see # Safety): its relcache entry
    // has one indoption and opfamily per key column.
    unsafe { *(*index).rd_indoption == 0 && *(*index).rd_opfamily == pg_sys::INTEGER_BTREE_FAM_OID }
}

/// The page's header.
///
/// # Safety
/// `page` must be a pinned, share-locked B-tree page.
unsafe fn page_header<'a>(page: pg_sys::Page) -> &'a pg_sys::PageHeaderData {
    // SAFETY: `page` is a pinned, locked page (see # Safety), whose header is its first bytes.
    unsafe { &*page.cast::<pg_sys::PageHeaderData>() }
}

/// The page's B-tree special space: its siblings and flags.
///
/// # Safety
/// `page` must be a pinned, share-locked B-tree page.
unsafe fn page_opaque<'a>(page: pg_sys::Page) -> &'a nbtree::PageOpaque {
    // SAFETY: `page` is a pinned, locked B-tree page (see # Safety): pd_special, checked when the
    // page was read in, is the offset of its special space within the page.
    unsafe { &*page.cast::<u8>().add(usize::from(page_header(page).pd_special)).cast::<nbtree::PageOpaque>() }
}

/// `PageGetMaxOffsetNumber`.
///
/// # Safety
/// `page` must be a pinned, share-locked B-tree page.
unsafe fn max_offset(page: pg_sys::Page) -> pg_sys::OffsetNumber {
    // SAFETY: `page` is a pinned, locked page (see # Safety).
    let lower = unsafe { usize::from(page_header(page).pd_lower) };
    let header = std::mem::offset_of!(pg_sys::PageHeaderData, pd_linp);
    (lower.saturating_sub(header) / std::mem::size_of::<pg_sys::ItemIdData>()) as pg_sys::OffsetNumber
}

/// Asks the CPU to bring the page's line pointers (1.4 kB on a full page of 8-byte keys) into
/// its cache all at once: the search that follows reads a few of them far apart, each a cache
/// miss of its own otherwise.
///
/// # Safety
/// `page` must be a pinned, share-locked page with `last` line pointers.
#[inline]
unsafe fn prefetch_line_pointers(page: pg_sys::Page, last: pg_sys::OffsetNumber) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `page` is pinned with `last` line pointers (see # Safety), so the addresses stay
        // within it (and a prefetch never faults anyway).
        unsafe {
            let start = page_header(page).pd_linp.as_ptr().cast::<u8>();
            let bytes = usize::from(last) * std::mem::size_of::<pg_sys::ItemIdData>();
            for at in (0..bytes).step_by(64) {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(start.add(at).cast());
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (page, last);
}

/// The tuple at `offset` (1-based), with its length; None for a line pointer without storage,
/// or one that points outside the page (a damaged page reads as an empty slot, never as memory
/// beyond it).
///
/// # Safety
/// `page` must be a pinned, share-locked B-tree page and `offset` at most its
/// `max_offset` (so the line pointer itself lies within the page header's array).
unsafe fn tuple(page: pg_sys::Page, offset: pg_sys::OffsetNumber) -> Option<(*const u8, usize)> {
    // ItemIdData is the bitfield lp_off:15, lp_flags:2, lp_len:15 in one 32-bit word; read
    // whole, it is two shifts instead of bindgen's byte-by-byte accessors.
    // SAFETY: `offset` is at most `max_offset` (see # Safety): its line pointer lies in the page's
    // array.
    let word = unsafe { page_header(page).pd_linp.as_ptr().add(usize::from(offset) - 1).cast::<u32>().read() };
    let (off, len) = ((word & 0x7FFF) as usize, (word >> 17) as usize);
    let inside = off + len <= pg_sys::BLCKSZ as usize;
    // SAFETY: `off + len` is checked to lie within the page.
    (inside && len >= std::mem::size_of::<pg_sys::IndexTupleData>()).then(|| (unsafe { page.cast::<u8>().add(off) }.cast_const(), len))
}

/// Whether the pivot tuple at `offset` kept its key attribute (suffix truncation may remove it
/// only on internal pages, but a reader should not rely on that).
///
/// # Safety
/// `page` must be a pinned, share-locked B-tree page, `offset` at most its `max_offset`.
unsafe fn has_key(page: pg_sys::Page, offset: pg_sys::OffsetNumber) -> bool {
    // SAFETY: `page` and `offset` are as `tuple` needs them (see # Safety).
    let Some((ptr, _)) = (unsafe { tuple(page, offset) }) else { return false };
    // SAFETY: `tuple` returns only tuples of at least an IndexTupleData, within the page.
    let tuple = unsafe { &*ptr.cast::<pg_sys::IndexTupleData>() };
    if usize::from(tuple.t_info) & pg_sys::INDEX_AM_RESERVED_BIT as usize == 0 {
        return true; // not a pivot: all attributes present
    }
    // BTreeTupleGetNAtts: the attribute count lives in the offset number's low 12 bits.
    tuple.t_tid.ip_posid & 0x0FFF >= 1
}

/// Whether the page's high key, the lower bound of everything to its right, is above `value`
/// (a NULL high key is: NULLs sort last). A high key whose key was truncated away bounds
/// nothing, so the scan goes on.
///
/// # Safety
/// `page` must be a pinned, share-locked B-tree page of the open `index` that is not the
/// rightmost of its level.
unsafe fn high_key_above(index: pg_sys::Relation, page: pg_sys::Page, value: i64) -> bool {
    // SAFETY: `page` is a pinned, locked page of `index` that has a high key (see # Safety).
    unsafe { has_key(page, nbtree::HIKEY) && entry(index, page, nbtree::HIKEY).key.is_none_or(|high| high > value) }
}

/// Reads the entry at `offset`. A tuple too short for the null bitmap its header announces is
/// reported as a corrupted `index` (SQLSTATE XX002), never read past its end.
///
/// # Safety
/// `page` must be a pinned, share-locked B-tree page of the open `index`, `offset` at most its
/// `max_offset`.
unsafe fn entry(index: pg_sys::Relation, page: pg_sys::Page, offset: pg_sys::OffsetNumber) -> Entry {
    // SAFETY: an all-zero ItemPointerData is valid.
    let mut result = Entry { key: None, fingerprint: None, tid: unsafe { std::mem::zeroed() }, posting: None };
    // SAFETY: `page` and `offset` are as `tuple` needs them (see # Safety).
    let Some((ptr, len)) = (unsafe { tuple(page, offset) }) else { return result };
    // SAFETY: `tuple` returns only tuples of at least an IndexTupleData, within the page.
    let header = unsafe { &*ptr.cast::<pg_sys::IndexTupleData>() };
    let info = usize::from(header.t_info);
    result.tid = header.t_tid;
    // The key attributes end where a posting list begins (BTreeTupleIsPosting: the alternative
    // TID format, its offset number flagged BT_IS_POSTING, carrying the count in its low 12
    // bits and the list's byte offset in its block number).
    let mut data_end = len;
    if info & pg_sys::INDEX_AM_RESERVED_BIT as usize != 0 && header.t_tid.ip_posid & POSTING != 0 {
        let at = (usize::from(header.t_tid.ip_blkid.bi_hi) << 16) | usize::from(header.t_tid.ip_blkid.bi_lo);
        let n = usize::from(header.t_tid.ip_posid & POSTING_COUNT);
        let size = std::mem::size_of::<pg_sys::ItemPointerData>();
        if at > std::mem::size_of::<pg_sys::IndexTupleData>() && at + n * size <= len {
            // SAFETY: the posting list lies within the tuple (`at + n * size <= len`).
            result.posting = Some((unsafe { ptr.add(at) }.cast(), n));
            data_end = at;
        } else {
            result.posting = Some((ptr.cast(), 0)); // damaged: no rows
        }
    }
    let (key_null, fp_null, key_at) = if info & pg_sys::INDEX_NULL_MASK as usize != 0 {
        // The null bitmap follows the header, and the data begins after it, MAXALIGNed
        // (IndexInfoFindDataOffset): every tuple with one is at least that long, even with all its
        // attributes NULL. A shorter one is damaged.
        if len < KEY_OFFSET_WITH_NULLS {
            // SAFETY: `index` is open (see # Safety).
            unsafe { corrupted(index, offset, len) };
        }
        // A set bit means "not null".
        // SAFETY: the null bitmap lies right after the header, within the tuple (`len` is at least
        // KEY_OFFSET_WITH_NULLS, checked above), so within the page.
        let bits = unsafe { *ptr.add(std::mem::size_of::<pg_sys::IndexTupleData>()) };
        (bits & 1 == 0, bits & 2 == 0, KEY_OFFSET_WITH_NULLS)
    } else {
        (false, false, KEY_OFFSET)
    };
    if !key_null && data_end >= key_at + 8 {
        // SAFETY: `key_at + 8 <= data_end <= len`: the key lies within the tuple.
        result.key = Some(unsafe { std::ptr::read_unaligned(ptr.add(key_at).cast::<i64>()) });
        if !fp_null && data_end >= key_at + 16 {
            // SAFETY: `key_at + 16 <= data_end <= len`: the fingerprint lies within the tuple.
            result.fingerprint = Some(unsafe { std::ptr::read_unaligned(ptr.add(key_at + 8).cast::<u64>()) });
        }
    }
    result
}

/// Reports the tuple at `offset`, `len` bytes long, as too short for its null bitmap: an ERROR
/// with SQLSTATE XX002 (ERRCODE_INDEX_CORRUPTED), as PostgreSQL reports a damaged index. The
/// buffer lock the caller holds is released by the transaction's abort, as for nbtree's own
/// corruption errors.
///
/// # Safety
/// `index` must be an open relation.
#[cold]
unsafe fn corrupted(index: pg_sys::Relation, offset: pg_sys::OffsetNumber, len: usize) -> ! {
    // SAFETY: `index` is open (see # Safety): its relcache entry's name is a NUL-terminated
    // NameData (RelationGetRelationName).
    let name = unsafe { std::ffi::CStr::from_ptr((*(*index).rd_rel).relname.data.as_ptr()) };
    crate::errors::index_corrupted(
        format!("index \"{}\" contains a corrupted tuple", name.to_string_lossy()),
        format!("Item {offset} of a leaf page has a null bitmap but is {len} bytes long, less than its {KEY_OFFSET_WITH_NULLS}-byte data offset."),
    )
}

/// `BT_IS_POSTING` and `BT_OFFSET_MASK` (access/nbtree.h).
const POSTING: u16 = 0x2000;
const POSTING_COUNT: u16 = 0x0FFF;

/// The first offset in `first..=last` whose key is not below `value` (NULL keys last), or
/// `last + 1`: the page's entries are sorted, and their keys are searched by interpolation
/// (`simhash_core::sorted_search`: a few cache misses instead of a binary search's nine).
///
/// # Safety
/// `page` must be a pinned, share-locked B-tree page of the open `index`, `last` at most its
/// `max_offset`.
unsafe fn lower_bound(index: pg_sys::Relation, page: pg_sys::Page, first: pg_sys::OffsetNumber, last: pg_sys::OffsetNumber, value: i64) -> pg_sys::OffsetNumber {
    let found = simhash_core::sorted_search::lower_bound(usize::from(first), usize::from(last) + 1, value, |offset| {
        // SAFETY: offset lies in first..=last, within the page's line pointers.
        unsafe { entry(index, page, offset as pg_sys::OffsetNumber).key }
    });
    found as pg_sys::OffsetNumber
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// A leaf page (palloc'd, not a buffer) whose only item is a tuple of `len` bytes whose header
    /// announces a null bitmap, every bit clear (all attributes NULL).
    fn page_with_null_bitmap_tuple(len: u16) -> pg_sys::Page {
        let at = 8000usize;
        let linp = std::mem::offset_of!(pg_sys::PageHeaderData, pd_linp);
        // SAFETY: a test runs inside a transaction; everything written lies within the zeroed
        // BLCKSZ bytes: the header, one line pointer after it, and `len` bytes at `at`.
        unsafe {
            let page = pg_sys::palloc0(pg_sys::BLCKSZ as usize).cast::<u8>();
            (*page.cast::<pg_sys::PageHeaderData>()).pd_lower = (linp + 4) as u16;
            // ItemIdData: lp_off:15, lp_flags:2 (LP_NORMAL), lp_len:15.
            page.add(linp).cast::<u32>().write((at as u32) | (1 << 15) | (u32::from(len) << 17));
            // IndexTupleData: the 6-byte heap TID, then t_info (size and INDEX_NULL_MASK).
            page.add(at + 6).cast::<u16>().write_unaligned(len | pg_sys::INDEX_NULL_MASK as u16);
            page.cast()
        }
    }

    /// An open B-tree index for the error message to name.
    fn an_index() -> pg_sys::Relation {
        Spi::run("CREATE TABLE leaf_tuples (v int8)").expect("table");
        Spi::run("CREATE INDEX leaf_tuples_v ON leaf_tuples (v)").expect("index");
        let oid = Spi::get_one::<pg_sys::Oid>("SELECT 'leaf_tuples_v'::regclass::oid").ok().flatten().expect("oid");
        // SAFETY: a test runs inside a transaction; the index was just created.
        unsafe { pg_sys::index_open(oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE) }
    }

    #[pg_test]
    fn a_tuple_with_a_null_bitmap_reads_its_nulls() {
        let index = an_index();
        // SAFETY: the page holds one item (max_offset 1), its tuple within the page; the index is
        // closed once, after the read.
        let entry = unsafe {
            let entry = super::entry(index, page_with_null_bitmap_tuple(16), 1);
            pg_sys::index_close(index, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
            entry
        };
        assert_eq!((entry.key, entry.fingerprint), (None, None));
    }

    #[pg_test(error = "index \"leaf_tuples_v\" contains a corrupted tuple")]
    fn a_tuple_too_short_for_its_null_bitmap_is_corruption() {
        let index = an_index();
        // SAFETY: as above; the tuple is 12 bytes, less than its 16-byte data offset.
        let _ = unsafe { super::entry(index, page_with_null_bitmap_tuple(12), 1) };
    }
}
