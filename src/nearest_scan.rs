//! `ORDER BY fp <-> q LIMIT n` (pgvector's idiom, also spelled `hamming_distance(fp, q)` or
//! `q <-> fp`) read through the covering block indexes, nearest first, instead of computing
//! every row's distance and sorting.
//!
//! A B-tree on a block column cannot return rows by distance, so PostgreSQL would never find an
//! ordered path. This `set_rel_pathlist_hook` adds one: a custom scan, "SimHash Nearest Scan",
//! that widens through rings (`simhash_core::nearest`): every row within radius r that a smaller
//! radius did not return, read off the covering indexes' leaf pages (`leaf_scan`), sorted by
//! distance, fetched from the table with the snapshot applied. The last ring reads a whole
//! covering index, then the rows whose fingerprint is NULL follow (`NULLS LAST`), so the scan
//! returns every row exactly once in the order the ORDER BY asks for, whatever stops it.
//!
//! Other conditions on the table (`WHERE lang = 'en'`) are checked on each row the scan
//! returns, so a LIMIT over them reads rings until it has enough rows that pass: the filtered
//! answer is exact, as pgvector's iterative index scans made theirs. A `k` given too
//! (`WHERE fp <-> q <= 3 ORDER BY fp <-> q`) is better served by the TID scan plus a sort, and
//! the planner chooses that by cost.
//!
//! The path is offered when the first sort key of the query is the distance between a
//! simhash64 column with covering block indexes and an expression that does not depend on the
//! table's rows (a literal, a parameter, a scalar subquery; the outer row's fingerprint in a
//! LATERAL subquery), ascending with NULLs last; the planner then chooses it by cost, which
//! favours it under a LIMIT. Partitions each get their own path, merged by a Merge Append.

use std::ffi::{c_char, CStr};

use pgrx::pg_guard;
use pgrx::pg_sys;
use pgrx::PgMemoryContexts;
use simhash_core::nearest;
use simhash_core::probe::{self, PlanError};

use crate::citus;
use crate::ext_objects::ExtOids;
use crate::index_probe;
use crate::layout::{self, Reader};
use crate::leaf_scan::{LeafScan, Shape};
use crate::nodes::{cast, list_len, list_nth};

/// What EXPLAIN calls the scan, and the name PostgreSQL finds its methods by.
const NAME: &CStr = c"SimHash Nearest Scan";

/// The method tables PostgreSQL keeps pointers to: statics, never written after `install`.
struct Methods {
    path: pg_sys::CustomPathMethods,
    scan: pg_sys::CustomScanMethods,
    exec: pg_sys::CustomExecMethods,
}

// SAFETY: the tables hold function pointers and a pointer to a static string, read only.
unsafe impl Sync for Methods {}

static METHODS: Methods = Methods {
    path: pg_sys::CustomPathMethods {
        CustomName: NAME.as_ptr(),
        PlanCustomPath: Some(plan_path),
        ReparameterizeCustomPathByChild: None,
    },
    scan: pg_sys::CustomScanMethods { CustomName: NAME.as_ptr(), CreateCustomScanState: Some(create_state) },
    exec: pg_sys::CustomExecMethods {
        CustomName: NAME.as_ptr(),
        BeginCustomScan: Some(begin),
        ExecCustomScan: Some(exec),
        EndCustomScan: Some(end),
        ReScanCustomScan: Some(rescan),
        MarkPosCustomScan: None,
        RestrPosCustomScan: None,
        EstimateDSMCustomScan: None,
        InitializeDSMCustomScan: None,
        ReInitializeDSMCustomScan: None,
        InitializeWorkerCustomScan: None,
        ShutdownCustomScan: None,
        ExplainCustomScan: Some(explain),
    },
};

/// Registers the scan's methods (so that a plan holding the scan can be read back); called
/// once per process from `_PG_init`. The path comes from `paths_hook.rs`.
pub fn install() {
    // SAFETY: _PG_init runs once per process, before any planning in it; the methods are static.
    unsafe {
        pg_sys::RegisterCustomScanMethods(&METHODS.scan);
    }
}

// ---------------------------------------------------------------------------------------------
// Planning

/// What the planner learned about the ordering: kept in the path's and then the plan's
/// `custom_private` as an integer list `[query argument, blocks, index oids…]`, the distance
/// expression itself in `custom_exprs` (so that PostgreSQL fixes its Vars and Params).
struct Ordering {
    /// `fp <-> q` (or its other spellings) with `fp` a Var of the scanned relation.
    expr: *mut pg_sys::Node,
    /// Which argument of `expr` is the query side (0 or 1).
    query_arg: usize,
    /// The layout's block count, and its covering indexes, block by block.
    blocks: u32,
    indexes: Vec<pg_sys::Oid>,
    /// The sort keys after the distance that the scan orders rows of equal distance by.
    ties: Vec<TieKey>,
}

/// A sort key after the distance (`ORDER BY fp <-> q, id`): a column of the table. Only the scan
/// knows where a ring ends, so it sorts each distance's rows by these keys itself; an
/// Incremental Sort above it would have to read the first row of the next distance, and so
/// the next ring, to know a group is complete.
struct TieKey {
    /// The column (under binary-compatible casts) as a column of the scanned relation.
    expr: *mut pg_sys::Node,
    pathkey: *mut pg_sys::PathKey,
    sortop: pg_sys::Oid,
    collation: pg_sys::Oid,
    nulls_first: bool,
}

/// After PostgreSQL made its own paths for a table, offers the nearest-first scan when the
/// query's first sort key is a distance the table's covering block indexes can order (called
/// by `paths_hook.rs`).
///
/// # Safety
/// The pointers are the planner's own, as `set_rel_pathlist_hook` receives them.
pub(crate) unsafe fn add_nearest_path(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
    rte: *mut pg_sys::RangeTblEntry,
) {
    // SAFETY: the planner's own pointers, as `set_rel_pathlist_hook` receives them (see # Safety):
    // `rel` and `rte` describe range table entry `rti` of `root`, query_pathkeys (checked
    // non-empty) is a list of PathKeys, and the path is palloc'd in the planner's memory context.
    unsafe {
        let plain_scan = matches!(
            (*rel).reloptkind,
            pg_sys::RelOptKind::RELOPT_BASEREL | pg_sys::RelOptKind::RELOPT_OTHER_MEMBER_REL
        ) && (*rte).rtekind == pg_sys::RTEKind::RTE_RELATION
            && (*rte).relkind as u8 == pg_sys::RELKIND_RELATION
            && !(*rte).inh
            && (*rte).tablesample.is_null();
        if !plain_scan
            || (*root).query_pathkeys.is_null()
            || (*(*root).parse).commandType != pg_sys::CmdType::CMD_SELECT
            || needs_system_columns(rel)
        {
            return;
        }
        let pathkey = list_nth((*root).query_pathkeys, 0).cast::<pg_sys::PathKey>();
        if !crate::compat::ascending_nulls_last(pathkey) {
            return;
        }
        let Some(ordering) = ordering_of(root, rel, rti, (*rte).relid, pathkey) else {
            return;
        };
        pg_sys::add_path(rel, new_path(rel, pathkey, ordering).cast());
    }
}

/// Whether the query reads system columns other than ctid and tableoid from the relation: the
/// scan hands rows over in a virtual slot (the executor gives a custom scan one before
/// PostgreSQL 16), which has no xmin, cmin and the like.
///
/// # Safety
/// `rel` must be the planner's valid RelOptInfo of a base or member relation (its attr_needed
/// array covers min_attr..=max_attr).
unsafe fn needs_system_columns(rel: *mut pg_sys::RelOptInfo) -> bool {
    // SAFETY: `rel` is valid (see # Safety) and `attno - min` stays within attr_needed, which
    // starts at min_attr.
    unsafe {
        let min = i32::from((*rel).min_attr);
        (min..0).any(|attno| {
            attno != pg_sys::SelfItemPointerAttributeNumber
                && attno != pg_sys::TableOidAttributeNumber
                && !(*(*rel).attr_needed.add((attno - min) as usize)).is_null()
        })
    }
}

/// The ordering the scan can provide for `pathkey` on relation `rti` (table `relid`): the
/// pathkey's expression must be our distance between a column of the table with covering
/// block indexes and an expression computable before the scan.
///
/// # Safety
/// While planning, from the pathlist hook: `root`, `rel` and `pathkey` must be the planner's
/// valid pointers, `rel` the relation of range table entry `rti` and table `relid`.
unsafe fn ordering_of(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
    relid: pg_sys::Oid,
    pathkey: *mut pg_sys::PathKey,
) -> Option<Ordering> {
    // SAFETY: the planner's valid pointers (see # Safety): the pathkey's equivalence class and
    // members, each member's expression, checked by `cast` before it is read as a Var, and the list
    // indexes, which stay below the list lengths (a distance call has two arguments).
    unsafe {
        if (*pathkey).pk_opfamily != pg_sys::INTEGER_BTREE_FAM_OID || citus::manages(relid) {
            return None;
        }
        // The relation the ORDER BY names: the table itself, or the partitioned table (or
        // inheritance parent) whose partition this is, several levels up.
        let named = if (*rel).reloptkind == pg_sys::RelOptKind::RELOPT_OTHER_MEMBER_REL {
            let top = pg_sys::bms_singleton_member((*rel).top_parent_relids);
            pg_sys::Index::try_from(top).ok()?
        } else {
            rti
        };
        let eclass = (*pathkey).pk_eclass;
        let members = (*eclass).ec_members;
        for i in 0..list_len(members) {
            let member = list_nth(members, i).cast::<pg_sys::EquivalenceMember>();
            if (*member).em_is_child || (*member).em_is_const {
                continue;
            }
            let Some((call_args, funcid)) = distance_call((*member).em_expr.cast()) else { continue };
            // Most two-argument sort keys are not ours: once this backend knows our functions, they
            // are told apart without a catalog lookup.
            let oids = match ExtOids::cached() {
                Some(oids) if oids.distance_fn == funcid => oids,
                Some(_) => continue,
                None => match ExtOids::of_member(funcid).filter(|o| o.distance_fn == funcid) {
                    Some(oids) => oids,
                    None => continue,
                },
            };
            for query_arg in 0..2 {
                let column = list_nth(call_args, 1 - query_arg);
                let query = list_nth(call_args, query_arg);
                let Some(var) = cast::<pg_sys::Var>(column, pg_sys::NodeTag::T_Var) else { continue };
                if (*var).varno as pg_sys::Index != named
                    || (*var).varlevelsup != 0
                    || (*var).varattno <= 0
                    || pg_sys::contain_var_clause(query)
                    || pg_sys::contain_volatile_functions(query)
                {
                    continue;
                }
                let attno = attno_in(root, rti, named, (*var).varattno)?;
                let (blocks, indexes) = covering_layout(relid, attno, &oids)?;
                let expr = with_column((*member).em_expr.cast(), 1 - query_arg, rti, attno);
                let ties = tie_keys(root, rel, rti, named);
                return Some(Ordering { expr, query_arg, blocks, indexes, ties });
            }
        }
        None
    }
}

/// The sort keys after the distance that are columns of the table, as far as they go. None
/// where rows must keep their TID (row locks, `ctid` read): sorted rows lose it (and a cursor
/// over a scan with tie keys is not a simply updatable scan: `begin`).
///
/// # Safety
/// As [`ordering_of`]; `named` is the range table index the ORDER BY names (`rti` or an
/// ancestor of it).
unsafe fn tie_keys(root: *mut pg_sys::PlannerInfo, rel: *mut pg_sys::RelOptInfo, rti: pg_sys::Index, named: pg_sys::Index) -> Vec<TieKey> {
    // SAFETY: the planner's valid pointers (see # Safety): attr_needed covers the ctid column
    // (min_attr is at most its number), the pathkeys and equivalence members are read as the
    // planner keeps them, `cast` checks each tag before a node is read as that type, and the Var
    // changed is in our own copy of the member's expression.
    unsafe {
        let mut ties = Vec::new();
        let ctid = pg_sys::SelfItemPointerAttributeNumber - i32::from((*rel).min_attr);
        if !(*(*root).parse).rowMarks.is_null() || !(*(*rel).attr_needed.add(ctid as usize)).is_null() {
            return ties;
        }
        let keys = (*root).query_pathkeys;
        'keys: for k in 1..list_len(keys) {
            let pathkey = list_nth(keys, k).cast::<pg_sys::PathKey>();
            let eclass = (*pathkey).pk_eclass;
            if (*eclass).ec_has_volatile {
                break;
            }
            let members = (*eclass).ec_members;
            for i in 0..list_len(members) {
                let member = list_nth(members, i).cast::<pg_sys::EquivalenceMember>();
                if (*member).em_is_child || (*member).em_is_const {
                    continue;
                }
                let mut node: *mut pg_sys::Node = (*member).em_expr.cast();
                while let Some(relabel) = cast::<pg_sys::RelabelType>(node, pg_sys::NodeTag::T_RelabelType) {
                    node = (*relabel).arg.cast();
                }
                let Some(var) = cast::<pg_sys::Var>(node, pg_sys::NodeTag::T_Var) else { continue };
                if (*var).varno as pg_sys::Index != named || (*var).varlevelsup != 0 || (*var).varattno <= 0 {
                    continue;
                }
                let Some(attno) = attno_in(root, rti, named, (*var).varattno) else { break 'keys };
                let strategy = crate::compat::pathkey_strategy(pathkey);
                let sortop = pg_sys::get_opfamily_member(
                    (*pathkey).pk_opfamily,
                    (*member).em_datatype,
                    (*member).em_datatype,
                    strategy as i16,
                );
                if sortop == pg_sys::InvalidOid {
                    break 'keys;
                }
                let expr = crate::nodes::copy((*member).em_expr.cast());
                let mut inner = expr;
                while let Some(relabel) = cast::<pg_sys::RelabelType>(inner, pg_sys::NodeTag::T_RelabelType) {
                    inner = (*relabel).arg.cast();
                }
                let inner = inner.cast::<pg_sys::Var>();
                (*inner).varno = rti as _;
                (*inner).varattno = attno;
                ties.push(TieKey { expr, pathkey, sortop, collation: (*eclass).ec_collation, nulls_first: (*pathkey).pk_nulls_first });
                continue 'keys;
            }
            break;
        }
        ties
    }
}

/// The arguments and function of `node` when it is a two-argument operator or function call.
///
/// # Safety
/// `node` must be null or a valid expression node (an operator's function is looked up in the
/// catalogs when not set yet: inside a transaction).
unsafe fn distance_call(node: *mut pg_sys::Node) -> Option<(*mut pg_sys::List, pg_sys::Oid)> {
    // SAFETY: `node` is null or valid (see # Safety), and `cast` checks the tag before it is read.
    unsafe {
        if let Some(op) = cast::<pg_sys::OpExpr>(node, pg_sys::NodeTag::T_OpExpr) {
            let funcid = if (*op).opfuncid == pg_sys::InvalidOid { pg_sys::get_opcode((*op).opno) } else { (*op).opfuncid };
            return (list_len((*op).args) == 2).then_some(((*op).args, funcid));
        }
        let call = cast::<pg_sys::FuncExpr>(node, pg_sys::NodeTag::T_FuncExpr)?;
        (list_len((*call).args) == 2).then_some(((*call).args, (*call).funcid))
    }
}

/// Column `attno` of relation `named` as a column of relation `rti`, one of its partitions or
/// inheritance children (possibly several levels down): each level's AppendRelInfo maps the
/// parent's columns to the child's.
///
/// # Safety
/// While planning: `root` must be the planner's valid root, `rti` and `named` range table
/// indexes of its query, and when they differ `append_rel_array` must be set (`rti` a member
/// relation of `named`).
unsafe fn attno_in(root: *mut pg_sys::PlannerInfo, rti: pg_sys::Index, named: pg_sys::Index, attno: i16) -> Option<i16> {
    // Recursive: a deep tree raises PostgreSQL's "stack depth limit exceeded" instead of
    // overflowing the stack. SAFETY: a plain check of this backend's stack.
    unsafe { pg_sys::check_stack_depth() };
    if rti == named {
        return Some(attno);
    }
    // SAFETY: `root` is valid and, for a member relation, append_rel_array has an entry (or null)
    // per range table index (see # Safety); each AppendRelInfo's translated_vars is read within its
    // length, and `cast` checks the tag before a Var is read.
    unsafe {
        let info = *(*root).append_rel_array.add(rti as usize);
        if info.is_null() {
            return None;
        }
        let parent_attno = attno_in(root, (*info).parent_relid, named, attno)?;
        let translated = (*info).translated_vars;
        let index = usize::try_from(parent_attno).ok()?.checked_sub(1)?;
        if index >= list_len(translated) {
            return None;
        }
        let var = cast::<pg_sys::Var>(list_nth(translated, index), pg_sys::NodeTag::T_Var)?;
        Some((*var).varattno)
    }
}

/// The covering layout of column `attno` of table `relid` a nearest-first scan reads: the one
/// the planner would choose for a k = 3 lookup (the rings start small).
///
/// # Safety
/// Inside a transaction (the table is opened and closed here, its lock kept).
unsafe fn covering_layout(relid: pg_sys::Oid, attno: i16, oids: &ExtOids) -> Option<(u32, Vec<pg_sys::Oid>)> {
    // SAFETY: inside a transaction (see # Safety): the table is open between relation_open and
    // relation_close, as block_columns and rows_estimate need.
    let (columns, rows) = unsafe {
        let rel = pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let columns = layout::block_columns(rel, oids);
        let rows = crate::table_info::rows_estimate(rel);
        pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        (columns, rows)
    };
    let layouts: Vec<layout::Layout> =
        layout::layouts(&columns, attno, None).into_iter().filter(|l| l.covering.is_some()).collect();
    let (chosen, _) = layout::best_layout(layouts, 3, rows, Reader::Probe)?;
    Some((chosen.count, chosen.covering?))
}

/// A copy of the distance call `expr` whose argument `column_arg` is column `attno` of
/// relation `rti` (the partition's own column when the ORDER BY names its parent).
///
/// # Safety
/// `expr` must be a valid distance call of two arguments (as `ordering_of` found it), with a Var
/// as argument `column_arg`; the copy is palloc'd in the current memory context.
unsafe fn with_column(expr: *mut pg_sys::Node, column_arg: usize, rti: pg_sys::Index, attno: i16) -> *mut pg_sys::Node {
    // SAFETY: `expr` is a valid two-argument distance call with a Var at `column_arg` (see #
    // Safety), so its copy is one too, and that Var is ours to change.
    unsafe {
        let copy = crate::nodes::copy(expr);
        let args = distance_call(copy).map_or(std::ptr::null_mut(), |(args, _)| args);
        let var = list_nth(args, column_arg).cast::<pg_sys::Var>();
        (*var).varno = rti as _;
        (*var).varattno = attno;
        copy
    }
}

/// The custom path: the rows in `pathkey`'s order, costed so that the planner takes it where
/// few rows are read (a LIMIT), and a sort of a sequential scan where all are.
///
/// # Safety
/// While planning, from the pathlist hook: `rel` and `pathkey` must be the planner's valid
/// pointers, and `ordering`'s nodes valid; the path is palloc'd in the planner's memory context.
unsafe fn new_path(
    rel: *mut pg_sys::RelOptInfo,
    pathkey: *mut pg_sys::PathKey,
    ordering: Ordering,
) -> *mut pg_sys::CustomPath {
    // SAFETY: the path is palloc0'd here with the size of a CustomPath and filled in from the
    // planner's valid `rel`, `pathkey` and ordering (see # Safety); METHODS is a static.
    unsafe {
        let path = pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomPath>()).cast::<pg_sys::CustomPath>();
        (*path).path.type_ = pg_sys::NodeTag::T_CustomPath;
        (*path).path.pathtype = pg_sys::NodeTag::T_CustomScan;
        (*path).path.parent = rel;
        (*path).path.pathtarget = (*rel).reltarget;
        (*path).path.param_info = std::ptr::null_mut();
        (*path).path.parallel_aware = false;
        (*path).path.parallel_safe = false;
        (*path).path.rows = (*rel).rows;
        let (startup, total) = costs(rel, ordering.blocks);
        (*path).path.startup_cost = startup;
        (*path).path.total_cost = total;
        let mut pathkeys = pg_sys::lappend(std::ptr::null_mut(), pathkey.cast());
        for tie in &ordering.ties {
            pathkeys = pg_sys::lappend(pathkeys, tie.pathkey.cast());
        }
        (*path).path.pathkeys = pathkeys;
        (*path).flags = crate::compat::CUSTOM_SCAN_PROJECTS;
        // [ints, distance, tie keys...]: the expressions go to the plan's custom_exprs.
        let mut private = pg_sys::lappend(std::ptr::null_mut(), private_ints(&ordering).cast());
        private = pg_sys::lappend(private, ordering.expr.cast());
        for tie in &ordering.ties {
            private = pg_sys::lappend(private, tie.expr.cast());
        }
        (*path).custom_private = private;
        (*path).methods = &METHODS.path;
        path
    }
}

/// `[query argument, blocks, index count, index oids…, then per tie key: sort operator,
/// collation, NULLs first]` as an integer list.
///
/// # Safety
/// Inside a transaction, in the memory context the list should live in.
unsafe fn private_ints(ordering: &Ordering) -> *mut pg_sys::List {
    // SAFETY: inside a transaction (see # Safety); lappend_int starts the list from NIL.
    unsafe {
        let mut ints = std::ptr::null_mut();
        let mut push = |v: i32| ints = pg_sys::lappend_int(ints, v);
        push(ordering.query_arg as i32);
        push(ordering.blocks as i32);
        push(ordering.indexes.len() as i32);
        for oid in &ordering.indexes {
            push(oid.to_u32() as i32);
        }
        for tie in &ordering.ties {
            push(tie.sortop.to_u32() as i32);
            push(tie.collation.to_u32() as i32);
            push(i32::from(tie.nulls_first));
        }
        ints
    }
}

/// Startup: the first rings' descents, one per block and a few leaf pages each. Total: reading
/// every covering index entry and every table page at random, sorting the entries, checking
/// every row's conditions: a full ordered read costs more than a sequential scan and a sort,
/// so without a LIMIT the planner keeps the sort.
///
/// # Safety
/// `rel` must be the planner's valid RelOptInfo, with its reltarget set.
unsafe fn costs(rel: *mut pg_sys::RelOptInfo, blocks: u32) -> (f64, f64) {
    // SAFETY: `rel` and its reltarget are valid (see # Safety); the cost settings are plain globals
    // of this backend.
    unsafe {
        let tuples = (*rel).tuples.max(1.0);
        let pages = f64::from((*rel).pages).max(1.0);
        let descents = f64::from(blocks) * 3.0;
        let startup = descents * (pg_sys::random_page_cost + 50.0 * pg_sys::cpu_operator_cost);
        let index_pages = (tuples * 24.0 / 8192.0).ceil();
        let quals = (*rel).baserestrictcost.per_tuple;
        let total = startup
            + index_pages * pg_sys::seq_page_cost
            + pages * pg_sys::random_page_cost
            + tuples * (pg_sys::cpu_index_tuple_cost + pg_sys::cpu_tuple_cost + quals)
            + tuples * tuples.log2().max(1.0) * 2.0 * pg_sys::cpu_operator_cost
            + (*(*rel).reltarget).cost.per_tuple * (*rel).rows;
        (startup, total)
    }
}

/// The plan of the path: the distance and the tie keys in `custom_exprs` (PostgreSQL fixes
/// their Vars and Params there), the layout in `custom_private`, the table's conditions as its
/// qual.
///
/// PostgreSQL calls it (PlanCustomPath) to turn our CustomPath into a plan, with the planner's
/// pointers and the scan's target list and clauses.
#[pg_guard]
unsafe extern "C-unwind" fn plan_path(
    _root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    best_path: *mut pg_sys::CustomPath,
    tlist: *mut pg_sys::List,
    clauses: *mut pg_sys::List,
    _custom_plans: *mut pg_sys::List,
) -> *mut pg_sys::Plan {
    // SAFETY: the plan node is palloc0'd here with the size of a CustomScan and filled in from the
    // planner's valid pointers; `custom_private` is the list `new_path` built, its first element
    // the integer list and the rest expressions. METHODS is a static.
    unsafe {
        let scan = pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomScan>()).cast::<pg_sys::CustomScan>();
        (*scan).scan.plan.type_ = pg_sys::NodeTag::T_CustomScan;
        (*scan).scan.plan.targetlist = tlist;
        (*scan).scan.plan.qual = pg_sys::extract_actual_clauses(clauses, false);
        (*scan).scan.scanrelid = (*rel).relid;
        (*scan).flags = (*best_path).flags;
        let private = (*best_path).custom_private;
        (*scan).custom_private = pg_sys::lappend(std::ptr::null_mut(), list_nth(private, 0).cast());
        for i in 1..list_len(private) {
            (*scan).custom_exprs = pg_sys::lappend((*scan).custom_exprs, list_nth(private, i).cast());
        }
        (*scan).methods = &METHODS.scan;
        scan.cast()
    }
}

// ---------------------------------------------------------------------------------------------
// Execution

/// The executor state: PostgreSQL's part first, as it requires, then a pointer to ours (Rust
/// memory, freed when the query's memory context goes, however the query ends).
#[repr(C)]
struct NearestScanState {
    css: pg_sys::CustomScanState,
    scan: *mut Scan,
}

/// Where the scan stands.
enum Phase {
    /// Before the first row: the query side is not evaluated yet.
    Start,
    /// Returning the ring up to `radius`: `pending[next..]` are still to fetch.
    Ring { radius: u32 },
    /// Every row with a fingerprint returned; now those whose fingerprint is NULL, whose
    /// distance is NULL and sorts last.
    Nulls,
    /// The query side is NULL: every distance is NULL, every row comes, in index order.
    AllRows,
    Done,
}

/// The Rust side of the executor state.
struct Scan {
    phase: Phase,
    /// The query fingerprint, once evaluated (`Phase::Start`).
    query: u64,
    /// The query side of the distance, compiled for this plan node.
    query_state: *mut pg_sys::ExprState,
    blocks: usize,
    index_oids: Vec<pg_sys::Oid>,
    indexes: Vec<pg_sys::Relation>,
    /// How each index holds its block and the fingerprint (covering or permuted).
    shapes: Vec<Shape>,
    /// The ring being returned: (distance, (block, offset)) by distance.
    pending: Vec<(u32, (u32, u16))>,
    next: usize,
    /// Fetches rows by TID (HOT chains, snapshot, predicate locks), as an index scan does.
    fetch: pg_sys::IndexScanDesc,
    /// A scan of the first covering index for the NULL phases.
    nulls: pg_sys::IndexScanDesc,
    heap_slot: *mut pg_sys::TupleTableSlot,
    /// The sort keys rows of equal distance are ordered by (none: any order).
    ties: Ties,
    /// The rows of one distance, sorted by `ties`, being returned.
    sorted: *mut pg_sys::Tuplesortstate,
    /// For EXPLAIN ANALYZE.
    rings: u64,
    widest: Option<u32>,
    fetched: u64,
    /// The table. `ss_currentRelation` is NULL where rows come out of the tie sort (`begin`).
    heap: pg_sys::Relation,
}

/// The executor state for a plan node: ours begins with PostgreSQL's, as it requires.
/// The tie keys as `tuplesort_begin_heap` takes them, and the slot sorted rows come back in.
struct Ties {
    attnums: Vec<pg_sys::AttrNumber>,
    sortops: Vec<pg_sys::Oid>,
    collations: Vec<pg_sys::Oid>,
    nulls_first: Vec<bool>,
    slot: *mut pg_sys::TupleTableSlot,
}

impl Default for Ties {
    fn default() -> Self {
        Ties { attnums: Vec::new(), sortops: Vec::new(), collations: Vec::new(), nulls_first: Vec::new(), slot: std::ptr::null_mut() }
    }
}

/// PostgreSQL calls it (CreateCustomScanState) with our CustomScan plan node at executor startup.
#[pg_guard]
unsafe extern "C-unwind" fn create_state(plan: *mut pg_sys::CustomScan) -> *mut pg_sys::Node {
    // SAFETY: the state is palloc0'd here with the size of a NearestScanState, whose first field is
    // the CustomScanState PostgreSQL expects; `plan` is valid, and METHODS is a static.
    unsafe {
        let state = pg_sys::palloc0(std::mem::size_of::<NearestScanState>()).cast::<NearestScanState>();
        (*state).css.ss.ps.type_ = pg_sys::NodeTag::T_CustomScanState;
        (*state).css.flags = (*plan).flags;
        (*state).css.methods = &METHODS.exec;
        state.cast()
    }
}

/// Our part of the executor state (set by `begin`).
///
/// # Safety
/// `node` must be a NearestScanState that `begin` has run on and whose query memory context is
/// still alive (the Scan is freed with it); the caller must not hold another reference to it.
unsafe fn scan_of<'a>(node: *mut pg_sys::CustomScanState) -> &'a mut Scan {
    // SAFETY: `node` is a NearestScanState with a live Scan, not otherwise borrowed (see # Safety).
    unsafe { &mut *(*node.cast::<NearestScanState>()).scan }
}

/// Opens the covering indexes and the row fetcher; the query side is evaluated on the first
/// row, when parameters and init plans have their values.
///
/// PostgreSQL calls it (BeginCustomScan) with our scan state, created by `create_state`, and the
/// executor state, at executor startup.
#[pg_guard]
unsafe extern "C-unwind" fn begin(node: *mut pg_sys::CustomScanState, estate: *mut pg_sys::EState, _eflags: i32) {
    // SAFETY: `node` is our NearestScanState and `plan` the CustomScan `plan_path` made
    // (custom_private holds its integer list, custom_exprs the distance and then the tie keys;
    // `cast` checks tags). The indexes are opened and checked, the scan begun with the executor's
    // snapshot, and the slots made in the executor's tuple table; es_query_cxt is the live query
    // context, whose reset callback frees the Scan once.
    unsafe {
        let plan = (*node).ss.ps.plan.cast::<pg_sys::CustomScan>();
        let ints = list_nth((*plan).custom_private, 0).cast::<pg_sys::List>();
        let int_at = |i: usize| pg_sys::list_nth_int(ints, i as i32);
        let query_arg = int_at(0) as usize;
        let blocks = int_at(1) as usize;
        let count = int_at(2) as usize;
        let index_oids: Vec<pg_sys::Oid> = (3..3 + count).map(|i| pg_sys::Oid::from(int_at(i) as u32)).collect();
        let mut ties = Ties::default();
        for (n, i) in (3 + count..list_len(ints)).step_by(3).enumerate() {
            // The tie key's column, after setrefs: a Var of the scanned relation.
            let mut key = list_nth((*plan).custom_exprs, n + 1);
            while let Some(relabel) = cast::<pg_sys::RelabelType>(key, pg_sys::NodeTag::T_RelabelType) {
                key = (*relabel).arg.cast();
            }
            let var = cast::<pg_sys::Var>(key, pg_sys::NodeTag::T_Var)
                .unwrap_or_else(|| pgrx::error!("SimHash Nearest Scan: a tie key is not a column"));
            ties.attnums.push((*var).varattno);
            ties.sortops.push(pg_sys::Oid::from(int_at(i) as u32));
            ties.collations.push(pg_sys::Oid::from(int_at(i + 1) as u32));
            ties.nulls_first.push(int_at(i + 2) != 0);
        }
        let expr = list_nth((*plan).custom_exprs, 0);
        let (args, _) = distance_call(expr).unwrap_or_else(|| pgrx::error!("SimHash Nearest Scan: not a distance"));
        let query_state = pg_sys::ExecInitExpr(list_nth(args, query_arg).cast(), &mut (*node).ss.ps);

        let heap = (*node).ss.ss_currentRelation;
        let indexes: Vec<pg_sys::Relation> = index_oids
            .iter()
            .map(|&oid| pg_sys::index_open(oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE))
            .collect();
        let shapes: Vec<Shape> = indexes.iter().map(|&index| index_probe::check_block_index(index)).collect();
        let snapshot = (*estate).es_snapshot;
        let fetch = crate::compat::begin_index_scan(heap, indexes[0], snapshot);
        let heap_slot = pg_sys::table_slot_create(heap, &mut (*estate).es_tupleTable);
        if !ties.attnums.is_empty() {
            ties.slot = pg_sys::ExecInitExtraTupleSlot(estate, (*heap).rd_att, &pg_sys::TTSOpsMinimalTuple);
            // Rows sorted by the tie keys lose their TID (a minimal tuple has none), so the scan
            // slot holds no TID for WHERE CURRENT OF to read. Without a current relation the cursor
            // is "not a simply updatable scan" (execCurrent.c's search_plan_tree skips a custom scan
            // that has none), as it is over a Sort; the scan reads the table from `Scan::heap`.
            (*node).ss.ss_currentRelation = std::ptr::null_mut();
        }
        let scan = Scan {
            phase: Phase::Start,
            query: 0,
            query_state,
            blocks,
            index_oids,
            indexes,
            shapes,
            pending: Vec::new(),
            next: 0,
            fetch,
            nulls: std::ptr::null_mut(),
            heap_slot,
            ties,
            sorted: std::ptr::null_mut(),
            rings: 0,
            widest: None,
            fetched: 0,
            heap,
        };
        // Rust memory goes with the query's memory context, on success and on error alike: pgrx
        // boxes the Scan and drops it from a reset callback of that context (pg_guard'ed).
        (*node.cast::<NearestScanState>()).scan = PgMemoryContexts::For((*estate).es_query_cxt).leak_and_drop_on_delete(scan);
    }
}

/// The next row that passes the scan's conditions, projected (ExecScan does both).
///
/// PostgreSQL calls it (ExecCustomScan) for each row, with our scan state.
#[pg_guard]
unsafe extern "C-unwind" fn exec(node: *mut pg_sys::CustomScanState) -> *mut pg_sys::TupleTableSlot {
    // SAFETY: `node` is our scan state, begun; `next_row` and `recheck` are what ExecScan takes.
    unsafe { pg_sys::ExecScan(&mut (*node).ss, Some(next_row), Some(recheck)) }
}

/// Every condition of the scan is in its qual, which ExecScan checks; nothing to recheck. But
/// under EvalPlanQual (a row locked by FOR UPDATE or changed by the statement was updated
/// concurrently) `slot` is PostgreSQL's own slot holding the row's new version, not our scan
/// slot, and the scan's qual and projection were compiled for our virtual slot, which they read
/// without deforming: its columns are unpacked here, else they would read garbage (a crash on
/// the first text column).
///
/// PostgreSQL calls it from ExecScan under EvalPlanQual, with the row to recheck in `slot`.
#[pg_guard]
unsafe extern "C-unwind" fn recheck(_node: *mut pg_sys::ScanState, slot: *mut pg_sys::TupleTableSlot) -> bool {
    // SAFETY: `slot` is a valid slot that ExecScan hands us.
    unsafe { pg_sys::slot_getallattrs(slot) };
    true
}

/// The next row in distance order, in the scan slot; an empty slot at the end.
///
/// PostgreSQL calls it from ExecScan (see `exec`) with our scan state, for the next row.
#[pg_guard]
unsafe extern "C-unwind" fn next_row(ss: *mut pg_sys::ScanState) -> *mut pg_sys::TupleTableSlot {
    // SAFETY: `ss` is our begun NearestScanState (ExecScan passes it back), so its Scan is live and
    // borrowed only here; the executor state, slots, relations and snapshot are those `begin` set
    // up, and `query_state` was compiled by ExecInitExpr for this node. A tuple sort is ended before the next begins, and the nulls scan is begun
    // once per pass (`rescan` ends it).
    unsafe {
        let node = ss.cast::<pg_sys::CustomScanState>();
        let scan = scan_of(node);
        let out = (*ss).ss_ScanTupleSlot;
        let heap = scan.heap;
        let snapshot = (*(*ss).ps.state).es_snapshot;
        loop {
            // Rows of one distance, sorted by the tie keys, go first.
            if !scan.sorted.is_null() {
                let slot = scan.ties.slot;
                if pg_sys::tuplesort_gettupleslot(scan.sorted, true, false, slot, std::ptr::null_mut()) {
                    copy_to(out, slot);
                    (*out).tts_tableOid = (*heap).rd_id;
                    return out;
                }
                end_sort(scan);
            }
            match scan.phase {
                Phase::Start => {
                    // PostgreSQL's own ExecEvalExprSwitchContext (pgrx's guarded binding, not the
                    // bare evalfunc pointer): evaluated in the per-tuple memory context, the current
                    // one restored after it.
                    let mut isnull = false;
                    let value = pg_sys::ExecEvalExprSwitchContext(scan.query_state, (*ss).ps.ps_ExprContext, &mut isnull);
                    if isnull {
                        scan.phase = Phase::AllRows;
                        scan.nulls = begin_nulls_scan(heap, scan.indexes[0], snapshot, false);
                    } else {
                        scan.query = value.value() as u64;
                        read_ring(scan, heap, snapshot, None);
                    }
                }
                Phase::Ring { radius } => {
                    if let Some(&(distance, (block, offset))) = scan.pending.get(scan.next) {
                        scan.next += 1;
                        if scan.ties.attnums.is_empty() {
                            if fetch(scan, tid(block, offset)) {
                                return copy_to(out, scan.heap_slot);
                            }
                            continue;
                        }
                        // Every row at this distance, sorted by the tie keys.
                        let sort = begin_sort(scan, heap);
                        let mut at = Some((block, offset));
                        while let Some((block, offset)) = at {
                            if fetch(scan, tid(block, offset)) {
                                pg_sys::tuplesort_puttupleslot(sort, scan.heap_slot);
                            }
                            at = scan.pending.get(scan.next).filter(|&&(d, _)| d == distance).map(|&(_, row)| row);
                            if at.is_some() {
                                scan.next += 1;
                            }
                        }
                        pg_sys::tuplesort_performsort(sort);
                        scan.sorted = sort;
                        continue;
                    }
                    if radius >= 64 {
                        scan.phase = Phase::Nulls;
                        scan.nulls = begin_nulls_scan(heap, scan.indexes[0], snapshot, true);
                    } else {
                        read_ring(scan, heap, snapshot, Some(radius));
                    }
                }
                Phase::Nulls | Phase::AllRows if !scan.ties.attnums.is_empty() => {
                    // One group of equal (NULL) distances: all of it, sorted by the tie keys.
                    let sort = begin_sort(scan, heap);
                    while pg_sys::index_getnext_slot(scan.nulls, pg_sys::ScanDirection::ForwardScanDirection, scan.heap_slot) {
                        scan.fetched += 1;
                        pg_sys::tuplesort_puttupleslot(sort, scan.heap_slot);
                    }
                    pg_sys::tuplesort_performsort(sort);
                    scan.sorted = sort;
                    scan.phase = Phase::Done;
                }
                Phase::Nulls | Phase::AllRows => {
                    if pg_sys::index_getnext_slot(scan.nulls, pg_sys::ScanDirection::ForwardScanDirection, scan.heap_slot) {
                        scan.fetched += 1;
                        return copy_to(out, scan.heap_slot);
                    }
                    scan.phase = Phase::Done;
                }
                Phase::Done => {
                    return clear(out);
                }
            }
        }
    }
}

/// Reads the ring after `previous`: the entries within its radius and farther than
/// `previous`, by distance. When its probes would cost more than reading every entry of one
/// covering index, it reads every entry instead, keeping the widest complete ring that fits in
/// `work_mem` (`nearest::BoundedRing`).
///
/// # Safety
/// `scan` must be begun (indexes open and checked, query evaluated) and `heap` and `snapshot`
/// the executor's; no buffer lock held.
unsafe fn read_ring(scan: &mut Scan, heap: pg_sys::Relation, snapshot: pg_sys::Snapshot, previous: Option<u32>) {
    let Some(radius) = nearest::next_ring(previous) else {
        scan.phase = Phase::Done;
        return;
    };
    let query = scan.query;
    // Past `entries / DESCENT_IN_ENTRIES` probes, reading the whole index is the cheaper way.
    // SAFETY: the scan's indexes are open and checked and the snapshot active (see # Safety); each
    // leaf scan ends before the next starts.
    let (radius, pending) = unsafe {
        let probes = match probe::plan(query, i64::from(radius), scan.blocks as i64) {
            Ok(probes) => {
                let count: usize = probes.iter().map(|b| b.values.len()).sum();
                (count as f64 <= index_entries(scan.indexes[0], scan.shapes[0]) / simhash_core::batch::DESCENT_IN_ENTRIES).then_some(probes)
            }
            Err(PlanError::TooManyProbes { .. }) => None,
            Err(e) => pgrx::error!("SimHash Nearest Scan: {e}"),
        };
        // Either way, the widest complete ring that fits in work_mem (a crowded table's ring
        // can hold every row).
        let entry = std::mem::size_of::<(u32, u16)>();
        let cap = usize::try_from(pg_sys::work_mem).unwrap_or(4096).saturating_mul(1024) / entry;
        match probes {
            Some(probes) => {
                let mut ring = nearest::BoundedRing::new(previous, cap);
                for block in probes {
                    let i = block.index as usize;
                    let mut leaf = LeafScan::new(heap, scan.indexes[i], snapshot, scan.shapes[i]);
                    let mut values: Vec<i64> = block.values.iter().map(|&v| v as i64).collect();
                    values.sort_unstable();
                    for value in values {
                        leaf.range_with(value, value, query, radius, &mut |d, tid| ring.offer(d, index_probe::tid_order(&tid)));
                    }
                }
                // Complete up to the probes' radius, or less where work_mem dropped distances.
                let (kept, rows) = ring.finish();
                (kept.min(radius), rows)
            }
            None => {
                // One pass over every entry.
                let mut ring = nearest::BoundedRing::new(previous, cap);
                read_whole_index(scan, heap, snapshot, &mut |d, tid| ring.offer(d, index_probe::tid_order(&tid)));
                ring.finish()
            }
        }
    };
    scan.pending = pending;
    scan.next = 0;
    scan.rings += 1;
    scan.widest = Some(radius);
    scan.phase = Phase::Ring { radius };
}

/// Hands every entry of the first covering index to `keep`, with its distance to the query.
///
/// # Safety
/// As [`read_ring`].
unsafe fn read_whole_index<F: FnMut(u32, pg_sys::ItemPointerData)>(
    scan: &Scan,
    heap: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    keep: &mut F,
) {
    // SAFETY: as for this function (see # Safety).
    unsafe {
        let mut leaf = LeafScan::new(heap, scan.indexes[0], snapshot, scan.shapes[0]);
        leaf.every_entry_with(scan.blocks as u32, scan.query, simhash_core::distance::BITS, keep);
    }
}

/// About how many entries `index` holds: its pages times what a page of its entries holds
/// (24-byte covering ones or 16-byte permuted ones, with their line pointers, at nbtree's
/// default fill): the relation's size is known without reading it, unlike a stale reltuples.
///
/// # Safety
/// `index` must be an open relation.
unsafe fn index_entries(index: pg_sys::Relation, shape: Shape) -> f64 {
    // SAFETY: `index` is open (see # Safety).
    let pages = unsafe { pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM) };
    f64::from(pages)
        * match shape {
            Shape::Covering => 290.0,
            Shape::Permuted(_) | Shape::Keyed(_) => 370.0,
        }
}

/// The TID of (block, offset).
fn tid(block: u32, offset: u16) -> pg_sys::ItemPointerData {
    pg_sys::ItemPointerData {
        ip_blkid: pg_sys::BlockIdData { bi_hi: (block >> 16) as u16, bi_lo: (block & 0xFFFF) as u16 },
        ip_posid: offset,
    }
}

/// Fetches the visible row of the HOT chain `tid` points to into the heap slot.
///
/// # Safety
/// `scan` must be begun and not ended (its fetch scan and heap slot live).
unsafe fn fetch(scan: &mut Scan, tid: pg_sys::ItemPointerData) -> bool {
    // As in `index_probe::find`: a fresh chain each time.
    // SAFETY: `scan.fetch` and `scan.heap_slot` are live (see # Safety); a TID fetch starts a new
    // HOT chain by setting the TID and clearing xs_heap_continue.
    let found = unsafe {
        (*scan.fetch).xs_heaptid = tid;
        (*scan.fetch).xs_heap_continue = false;
        pg_sys::index_fetch_heap(scan.fetch, scan.heap_slot)
    };
    if found {
        scan.fetched += 1;
    }
    found
}

/// A scan of `index` (a covering block index) for the entries whose block is NULL (the rows
/// whose fingerprint is NULL), or for every entry.
///
/// # Safety
/// As [`crate::compat::begin_index_scan_with_keys`]; the scan must be ended with
/// `index_endscan` (`end_nulls_scan`).
unsafe fn begin_nulls_scan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    only_nulls: bool,
) -> pg_sys::IndexScanDesc {
    // SAFETY: the relations are open and the snapshot live (see # Safety); the scan key is
    // palloc0'd here, initialised as a NULL test, and the rescan takes as many keys as the scan was
    // begun for.
    unsafe {
        let scan = crate::compat::begin_index_scan_with_keys(heap, index, snapshot, i32::from(only_nulls));
        let key = pg_sys::palloc0(std::mem::size_of::<pg_sys::ScanKeyData>()).cast::<pg_sys::ScanKeyData>();
        if only_nulls {
            pg_sys::ScanKeyEntryInitialize(
                key,
                (pg_sys::SK_ISNULL | pg_sys::SK_SEARCHNULL) as i32,
                1,
                0, // InvalidStrategy: no operator, a NULL test
                pg_sys::InvalidOid,
                pg_sys::InvalidOid,
                pg_sys::InvalidOid,
                pg_sys::Datum::from(0),
            );
            pg_sys::index_rescan(scan, key, 1, std::ptr::null_mut(), 0);
        } else {
            pg_sys::index_rescan(scan, std::ptr::null_mut(), 0, std::ptr::null_mut(), 0);
        }
        scan
    }
}

/// A sort of rows of the table by the tie keys, in `work_mem` (spilling beyond it).
///
/// # Safety
/// Inside the executor: `heap` must be the open table (its descriptor outlives the sort), and
/// the sort ended by `end_sort` or with the query.
unsafe fn begin_sort(scan: &mut Scan, heap: pg_sys::Relation) -> *mut pg_sys::Tuplesortstate {
    let ties = &mut scan.ties;
    // SAFETY: `heap` is open (see # Safety); the tie vectors have one entry per tie key each.
    unsafe {
        crate::compat::begin_heap_sort((*heap).rd_att, &mut ties.attnums, &mut ties.sortops, &mut ties.collations, &mut ties.nulls_first)
    }
}

/// Ends the sort of one distance's rows, if one is open.
///
/// # Safety
/// `scan.sorted` must be null or a live sort `begin_sort` made.
unsafe fn end_sort(scan: &mut Scan) {
    if !scan.sorted.is_null() {
        // SAFETY: `scan.sorted` is a live sort (see # Safety), ended once: the pointer is cleared
        // next.
        unsafe { pg_sys::tuplesort_end(scan.sorted) };
        scan.sorted = std::ptr::null_mut();
    }
}

/// The row in `from` copied into the scan's own slot, with its TID and table.
///
/// # Safety
/// `out` and `from` must be distinct valid slots of the same descriptor, `from` not empty.
unsafe fn copy_to(out: *mut pg_sys::TupleTableSlot, from: *mut pg_sys::TupleTableSlot) -> *mut pg_sys::TupleTableSlot {
    // SAFETY: `out` and `from` are valid slots of the same descriptor (see # Safety), distinct,
    // `from` not empty (every caller copies a row just fetched or sorted): as ExecCopySlot, pgrx's
    // guarded binding of PostgreSQL's inline helper (the slot's copyslot method), requires.
    unsafe {
        pg_sys::ExecCopySlot(out, from);
        (*out).tts_tid = (*from).tts_tid;
        (*out).tts_tableOid = (*from).tts_tableOid;
    }
    out
}

/// An empty slot: the end of the scan.
///
/// # Safety
/// `slot` must be a valid slot.
unsafe fn clear(slot: *mut pg_sys::TupleTableSlot) -> *mut pg_sys::TupleTableSlot {
    // SAFETY: `slot` is valid (see # Safety); ExecClearTuple is pgrx's guarded binding of
    // PostgreSQL's inline helper (the slot's clear method).
    unsafe {
        if (*slot).tts_flags & pg_sys::TTS_FLAG_EMPTY as u16 == 0 {
            pg_sys::ExecClearTuple(slot);
        }
    }
    slot
}

/// Starts again, for a new outer row (LATERAL) or changed parameters: the query side is
/// evaluated anew.
///
/// PostgreSQL calls it (ReScanCustomScan) with our begun scan state.
#[pg_guard]
unsafe extern "C-unwind" fn rescan(node: *mut pg_sys::CustomScanState) {
    // SAFETY: `node` is our begun scan state, its Scan live and borrowed only here; the nulls scan
    // and the sort are ended at most once (their pointers are cleared).
    unsafe {
        let scan = scan_of(node);
        end_nulls_scan(scan);
        end_sort(scan);
        scan.phase = Phase::Start;
        scan.pending = Vec::new();
        scan.next = 0;
        pg_sys::ExecScanReScan(&mut (*node).ss);
    }
}

/// Ends the NULL-fingerprint scan, if one is open.
///
/// # Safety
/// `scan.nulls` must be null or a live index scan.
unsafe fn end_nulls_scan(scan: &mut Scan) {
    if !scan.nulls.is_null() {
        // SAFETY: `scan.nulls` is a live scan (see # Safety), ended once: the pointer is cleared
        // next.
        unsafe {
            pg_sys::index_endscan(scan.nulls);
            scan.nulls = std::ptr::null_mut();
        }
    }
}

/// Closes what `begin` opened (Rust memory goes with the query context).
///
/// PostgreSQL calls it (EndCustomScan) with our begun scan state, at executor shutdown.
#[pg_guard]
unsafe extern "C-unwind" fn end(node: *mut pg_sys::CustomScanState) {
    // SAFETY: `node` is our begun scan state, its Scan live and borrowed only here; each scan is
    // ended and each index closed once (pointers cleared, the vector drained).
    unsafe {
        let scan = scan_of(node);
        end_nulls_scan(scan);
        end_sort(scan);
        if !scan.fetch.is_null() {
            pg_sys::index_endscan(scan.fetch);
            scan.fetch = std::ptr::null_mut();
        }
        for index in scan.indexes.drain(..) {
            pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
        }
    }
}

/// EXPLAIN's lines: the order, the indexes read, and under ANALYZE how far the rings went.
///
/// PostgreSQL calls it (ExplainCustomScan) with our begun scan state, EXPLAIN's ancestors and
/// its ExplainState.
#[pg_guard]
unsafe extern "C-unwind" fn explain(node: *mut pg_sys::CustomScanState, ancestors: *mut pg_sys::List, es: *mut pg_sys::ExplainState) {
    // SAFETY: `node` is our begun scan state and `es` EXPLAIN's valid state; the deparsed
    // expressions are NUL-terminated C strings, and the tie vectors have one entry per expression
    // after the first.
    unsafe {
        let plan = (*node).ss.ps.plan;
        let scan = scan_of(node);
        let context = pg_sys::set_deparse_context_plan((*es).deparse_cxt, plan, ancestors);
        let prefix = list_len((*es).rtable) > 1 || (*es).verbose;
        let exprs = (*plan.cast::<pg_sys::CustomScan>()).custom_exprs;
        let keys: Vec<String> = (0..list_len(exprs))
            .map(|i| {
                let key = CStr::from_ptr(pg_sys::deparse_expression(list_nth(exprs, i), context, prefix, false));
                let mut key = key.to_string_lossy().into_owned();
                if i > 0 {
                    // As EXPLAIN shows a Sort's keys: DESC, and NULLS FIRST/LAST where not the default.
                    let ties = &scan.ties;
                    let mut reverse = false;
                    pg_sys::get_equality_op_for_ordering_op(ties.sortops[i - 1], &mut reverse);
                    if reverse {
                        key.push_str(" DESC");
                    }
                    match (ties.nulls_first[i - 1], reverse) {
                        (true, false) => key.push_str(" NULLS FIRST"),
                        (false, true) => key.push_str(" NULLS LAST"),
                        _ => {}
                    }
                }
                key
            })
            .collect();
        let order = std::ffi::CString::new(keys.join(", ")).unwrap_or_default();
        pg_sys::ExplainPropertyText(c"Order By".as_ptr(), order.as_ptr(), es);
        let names: Vec<String> = scan.index_oids.iter().map(|&oid| index_probe::relation_name(oid)).collect();
        let names = std::ffi::CString::new(names.join(", ")).unwrap_or_default();
        pg_sys::ExplainPropertyText(c"Block Indexes".as_ptr(), names.as_ptr(), es);
        if (*es).analyze {
            let widest = scan.widest.map_or(-1, i64::from);
            pg_sys::ExplainPropertyInteger(c"Rings".as_ptr(), std::ptr::null::<c_char>(), scan.rings as i64, es);
            pg_sys::ExplainPropertyInteger(c"Widest Radius".as_ptr(), std::ptr::null::<c_char>(), widest, es);
            pg_sys::ExplainPropertyInteger(c"Rows Fetched".as_ptr(), std::ptr::null::<c_char>(), scan.fetched as i64, es);
        }
    }
}
