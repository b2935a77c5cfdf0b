//! `WHERE fp <-> $1 <= 3` (and `< 4`, `hamming_distance(fp, $1) <= 3`, `3 >= fp <-> $1`, the
//! same on sets) reaches the block indexes as `simhash_near(fp, $1, 3)` does.
//!
//! The comparison is a built-in integer operator, which has no support function of ours, so
//! PostgreSQL would never ask us about it: it would scan the table and compute every distance.
//! A planner hook rewrites such comparisons in WHERE and JOIN ... ON conditions (of the query
//! and of every subquery, CTE and sublink) into `simhash_near` (`simhash_near_any` on sets)
//! before the planner starts; the planner then asks `simhash_near`'s support function as
//! usual (`planner.rs`), and the plan is the one the function form gets.
//!
//! The rewrite never changes an answer:
//! - `d <= K` and `d < K` with a constant K that gives a bound in 0..=64 become
//!   `simhash_near(a, b, bound)`: both are strict and true exactly when the distance is within.
//! - Any other bound (a parameter of a generic plan, an out-of-range or `=` constant) becomes
//!   `simhash_near(a, b, K clamped to 0..=64) AND <the comparison as written>`: the clamped call
//!   is true for every row the comparison accepts (so the index finds them all) and never
//!   raises the out-of-range error, and the comparison keeps the exact meaning.
//! - Comparisons that cannot use an index (`d > K`, `d >= K`, a volatile K) are left alone.
//!
//! The extension's own queries that must not probe per row (the hash joins of
//! `simhash_pairs`) spell their distance tests so that this hook leaves them: `NOT (d > k)`.
//!
//! Both hooks are installed when the library is loaded, on the first call of a simhash_pg
//! function in a connection. A simhash64 literal or parameter loads it while the statement is
//! parsed, before planning; a statement that only compares columns or subqueries (the first
//! statement of an ETL job's connection, say) loads it only while the planner simplifies the
//! distance, inside planning: `hamming_distance` and `simhash_set_distance` carry a support
//! function that does nothing but that. For that one statement the planner hook was never
//! called, so `get_relation_info_hook`, which the planner calls afterwards for each table,
//! rewrites the (already simplified) conditions of its query level instead, and runs the
//! rewritten ones through the simplification again, which asks `simhash_near`'s support
//! function as before. Later statements all pass through the planner hook.

use std::ffi::{c_char, c_int, c_void};

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::Internal;

use crate::compat;
use crate::ext_objects::ExtOids;
use crate::filter_calls;
use crate::nodes::{self, cast, copy, func, int4_const, int8_const, list_len, list_nth};

/// The support function of `hamming_distance` and `simhash_set_distance` (so of `<->`): offers
/// nothing for any request. PostgreSQL loads the library to ask it, while it simplifies the
/// first distance of a statement, which installs the hooks in time for that statement (module
/// comment).
#[pg_extern(immutable, strict, parallel_safe, name = "_simhash_distance_support")]
pub fn simhash_distance_support(request: Internal) -> Internal {
    drop(request);
    Internal::from(Some(pg_sys::Datum::from(std::ptr::null_mut::<c_void>())))
}

/// The planner hook that was installed before ours (another extension's, or none).
static mut PREVIOUS: pg_sys::planner_hook_type = None;
/// The get_relation_info hook that was installed before ours.
static mut PREVIOUS_RELATION_INFO: pg_sys::get_relation_info_hook_type = None;
/// Whether our planner hook has run in this process: until it has, the statement being planned
/// is the one during which the library was loaded, and `relation_info` rewrites it.
static mut PLANNER_HOOK_RAN: bool = false;
/// The query level `relation_info` rewrote last (it is called once per table of the level).
static mut REWRITTEN_LEVEL: *mut pg_sys::PlannerInfo = std::ptr::null_mut();

/// Installs the hooks; called once per process from `_PG_init`.
pub fn install() {
    // SAFETY: _PG_init runs once per process, before any planning in it.
    unsafe {
        PREVIOUS = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(plan);
        PREVIOUS_RELATION_INFO = pg_sys::get_relation_info_hook;
        pg_sys::get_relation_info_hook = Some(relation_info);
    }
}

/// PostgreSQL calls it as `planner_hook` with the statement's Query (ours to rewrite in place,
/// as the planner itself does) and the planner's other arguments.
#[pg_guard]
unsafe extern "C-unwind" fn plan(
    parse: *mut pg_sys::Query,
    query_string: *const c_char,
    cursor_options: c_int,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    // SAFETY: we run in the planner hook, in the backend's only thread: the statics are written
    // only here, by `relation_info` and by `install`; `parse` is null or the Query being planned,
    // and the previous hook (or standard_planner) takes the arguments PostgreSQL gave us. The
    // previous hook is a bare function pointer, not one of pgrx's guarded bindings: it is called
    // inside `pg_guard_ffi_boundary` (nothing with a destructor in the closure), so that an ERROR
    // it raises comes back as a Rust panic, which `#[pg_guard]` turns into that ERROR again.
    unsafe {
        PLANNER_HOOK_RAN = true;
        let mut routed = None;
        let mut keyed = None;
        // simhash_pg.enable_index_lookups = off: nothing rewritten, nothing marked (so the support
        // function leaves every call as written); the keys a write names are still remembered.
        let lookups = crate::settings::index_lookups();
        if !parse.is_null() && lookups {
            walk(parse.cast(), std::ptr::null_mut());
            // After the walk: a comparison it turned into simhash_near routes too.
            routed = crate::routed::rewrite(parse);
        }
        if !parse.is_null() {
            // Before planning, which may rewrite the Query: the keys a write names.
            keyed = crate::routed_writes::keyed(parse);
        }
        // Each statement's levels are new to `relation_info`, even where the planner allocates a
        // root at the address an earlier statement's had (a repeated statement always does):
        // without this, the second run of a statement skipped its level and left inlined calls
        // unmarked, a sequential scan. A statement planned inside this one (SPI while
        // simplifying) gets its own, and this one's is back when it returns.
        let outer_level = REWRITTEN_LEVEL;
        REWRITTEN_LEVEL = std::ptr::null_mut();
        let planned = match PREVIOUS {
            Some(previous) => pg_sys::ffi::pg_guard_ffi_boundary(|| previous(parse, query_string, cursor_options, bound_params)),
            None => pg_sys::standard_planner(parse, query_string, cursor_options, bound_params),
        };
        REWRITTEN_LEVEL = outer_level;
        if let Some(rewritten) = routed {
            crate::routed::planned(planned, rewritten);
        }
        if let Some(keys) = keyed {
            crate::routed_writes::remember_keys(planned, keys);
        }
        planned
    }
}

/// Rewrites the conditions of the statement during whose planning the library was loaded, once
/// per query level (see the module comment), and in every statement marks the `simhash_near`
/// calls that reached the join tree only while the planner simplified it (an inlined SQL
/// function's body, `filter_calls.rs`). PostgreSQL calls it as `get_relation_info_hook` while
/// planning, with the query level's `root` and the table's `rel`.
#[pg_guard]
unsafe extern "C-unwind" fn relation_info(
    root: *mut pg_sys::PlannerInfo,
    relation: pg_sys::Oid,
    inheritance_parent: bool,
    rel: *mut pg_sys::RelOptInfo,
) {
    // SAFETY: we run in the get_relation_info hook, in the backend's only thread: `root` is null or
    // the planner's valid root, whose join tree we may rewrite (see rewrite_simplified); the
    // statics are only touched by the hooks and `install`, and REWRITTEN_LEVEL is compared, never
    // dereferenced. The previous hook takes the arguments PostgreSQL gave us, called inside
    // `pg_guard_ffi_boundary` as in `plan`.
    unsafe {
        if !root.is_null() && root != REWRITTEN_LEVEL && !(*root).parse.is_null() && crate::settings::index_lookups() {
            REWRITTEN_LEVEL = root;
            rewrite_simplified(root, (*(*root).parse).jointree.cast(), !PLANNER_HOOK_RAN);
        }
        if let Some(previous) = PREVIOUS_RELATION_INFO {
            pg_sys::ffi::pg_guard_ffi_boundary(|| previous(root, relation, inheritance_parent, rel));
        }
    }
}

/// The join tree of a query level whose conditions the planner has simplified already (each an
/// implicit-AND list): rewrites them when `comparisons` (distance comparisons into
/// `simhash_near`), marks the calls that filter rows, simplifies the changed ones again, and
/// keeps them flat.
///
/// # Safety
/// Called while planning, from `relation_info`: `root` must be the planner's valid root and
/// `node` null or a node of its query's join tree, whose conditions are rewritten in place in
/// the planner's memory context.
unsafe fn rewrite_simplified(root: *mut pg_sys::PlannerInfo, node: *mut pg_sys::Node, comparisons: bool) {
    // Recursive: a deep tree raises PostgreSQL's "stack depth limit exceeded" instead of
    // overflowing the stack. SAFETY: a plain check of this backend's stack.
    unsafe { pg_sys::check_stack_depth() };
    // SAFETY: `root` is valid and `node` is null or a node of its join tree (see # Safety); `cast`
    // checks each tag before a node is read as that type, list indexes stay below the list lengths,
    // and `quals` points into the FromExpr or JoinExpr it came from, which stays alive.
    unsafe {
        let quals = if let Some(from) = cast::<pg_sys::FromExpr>(node, pg_sys::NodeTag::T_FromExpr) {
            for i in 0..list_len((*from).fromlist) {
                rewrite_simplified(root, list_nth((*from).fromlist, i), comparisons);
            }
            &mut (*from).quals
        } else if let Some(join) = cast::<pg_sys::JoinExpr>(node, pg_sys::NodeTag::T_JoinExpr) {
            rewrite_simplified(root, (*join).larg, comparisons);
            rewrite_simplified(root, (*join).rarg, comparisons);
            &mut (*join).quals
        } else {
            return;
        };
        let Some(list) = cast::<pg_sys::List>(*quals, pg_sys::NodeTag::T_List) else {
            return;
        };
        // simhash_near's support function has run on this level already where the list holds its
        // output (`ctid = ANY(_simhash_index_probe(…))`, block or key comparisons, beside the distance
        // test that rechecks them): that test must stay as it is.
        let comparisons = comparisons
            && !ExtOids::cached().is_some_and(|oids| {
                let ours = [
                    oids.probe_fn,
                    oids.block_fn,
                    oids.ball_fn,
                    oids.permute_fn.unwrap_or(oids.probe_fn),
                    oids.key_fn.unwrap_or(oids.probe_fn),
                    oids.sets.map_or(oids.probe_fn, |s| s.probe_fn),
                ];
                (0..list_len(list)).any(|i| calls_any(list_nth(list, i), &ours))
            });
        let mut out: *mut pg_sys::List = std::ptr::null_mut();
        for i in 0..list_len(list) {
            let condition = list_nth(list, i);
            // A planned subquery (SubPlan) in the condition would be copied into the rewrite.
            if pg_sys::contain_subplans(condition) {
                out = pg_sys::lappend(out, condition.cast());
                continue;
            }
            let mut changed = false;
            let rewritten = if comparisons { rewrite_condition(condition, &mut changed) } else { condition };
            filter_calls::mark(rewritten);
            changed |= filter_calls::holds_marked(rewritten);
            if changed {
                let simplified = pg_sys::eval_const_expressions(root, rewritten);
                out = pg_sys::list_concat(out, pg_sys::make_ands_implicit(simplified.cast()));
            } else {
                out = pg_sys::lappend(out, condition.cast());
            }
        }
        *quals = out.cast();
    }
}

/// Whether `node` calls one of `functions` anywhere.
///
/// # Safety
/// `node` must be null or a valid expression tree.
unsafe fn calls_any(node: *mut pg_sys::Node, functions: &[pg_sys::Oid]) -> bool {
    /// PostgreSQL calls it from `expression_tree_walker` with each node of the tree (or null) and
    /// the `context` `calls_any` gave: a pointer to its `&[Oid]`.
    #[pg_guard]
    unsafe extern "C-unwind" fn visit(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
        if node.is_null() {
            return false;
        }
        // SAFETY: `node` is non-null and valid, and `context` points to the `&[Oid]` calls_any lent
        // for the walk; `cast` checks the tag before the node is read as a FuncExpr.
        unsafe {
            let functions = &*context.cast::<&[pg_sys::Oid]>();
            if let Some(call) = cast::<pg_sys::FuncExpr>(node, pg_sys::NodeTag::T_FuncExpr) {
                if functions.contains(&(*call).funcid) {
                    return true;
                }
            }
            pg_sys::expression_tree_walker(node, Some(visit), context)
        }
    }
    let mut functions = functions;
    // SAFETY: `node` is null or a valid tree (see # Safety), and `functions` outlives the walk.
    unsafe { visit(node, (&mut functions as *mut &[pg_sys::Oid]).cast()) }
}

/// Visits every query and join level, rewriting the conditions of each and marking the
/// `simhash_near` calls that filter its rows (`filter_calls.rs`). PostgreSQL calls it from
/// `query_tree_walker` and `expression_tree_walker` (started in `plan`) with each node of the
/// statement being planned, or null.
#[pg_guard]
unsafe extern "C-unwind" fn walk(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    // SAFETY: `node` is non-null and a node of the Query being planned, which the planner hook may
    // rewrite in place; each node is read as the type its tag names, and the walkers get back the
    // walker and context they called us with.
    unsafe {
        match (*node).type_ {
            pg_sys::NodeTag::T_Query => {
                // MERGE's ON condition: a join condition like JOIN ... ON, kept beside the join
                // tree until planning starts from PostgreSQL 17 on.
                compat::map_merge_condition(node.cast(), |condition| {
                    let condition = rewrite_condition(condition, &mut false);
                    filter_calls::mark(condition);
                    condition
                });
                return pg_sys::query_tree_walker(node.cast(), Some(walk), context, 0);
            }
            pg_sys::NodeTag::T_FromExpr => {
                let from = node.cast::<pg_sys::FromExpr>();
                (*from).quals = rewrite_condition((*from).quals, &mut false);
                filter_calls::mark((*from).quals);
            }
            pg_sys::NodeTag::T_JoinExpr => {
                let join = node.cast::<pg_sys::JoinExpr>();
                (*join).quals = rewrite_condition((*join).quals, &mut false);
                filter_calls::mark((*join).quals);
            }
            _ => {}
        }
        pg_sys::expression_tree_walker(node, Some(walk), context)
    }
}

/// `condition` with its index-able distance comparisons rewritten, through AND, OR and NOT;
/// sets `changed` when it rewrote one.
///
/// # Safety
/// While planning: `condition` must be null or a valid expression tree that may be changed in
/// place; new nodes are palloc'd in the current memory context.
unsafe fn rewrite_condition(condition: *mut pg_sys::Node, changed: &mut bool) -> *mut pg_sys::Node {
    // Recursive: a deep tree raises PostgreSQL's "stack depth limit exceeded" instead of
    // overflowing the stack. SAFETY: a plain check of this backend's stack.
    unsafe { pg_sys::check_stack_depth() };
    // SAFETY: `condition` is null or a valid tree (see # Safety); `cast` checks each tag, and the
    // cells written lie below the list length.
    unsafe {
        if let Some(bool_expr) = cast::<pg_sys::BoolExpr>(condition, pg_sys::NodeTag::T_BoolExpr) {
            let args = (*bool_expr).args;
            for i in 0..list_len(args) {
                let cell = (*args).elements.add(i);
                (*cell).ptr_value = rewrite_condition((*cell).ptr_value.cast(), changed).cast();
            }
            return condition;
        }
        match cast::<pg_sys::OpExpr>(condition, pg_sys::NodeTag::T_OpExpr).and_then(|op| rewrite_comparison(op)) {
            Some(rewritten) => {
                *changed = true;
                rewritten
            }
            None => condition,
        }
    }
}

/// B-tree strategy numbers of the integer comparison operators.
const LESS: i32 = pg_sys::BTLessStrategyNumber as i32;
const LESS_EQUAL: i32 = pg_sys::BTLessEqualStrategyNumber as i32;
const EQUAL: i32 = pg_sys::BTEqualStrategyNumber as i32;
const GREATER_EQUAL: i32 = pg_sys::BTGreaterEqualStrategyNumber as i32;
const GREATER: i32 = pg_sys::BTGreaterStrategyNumber as i32;

/// Built-in integer casts and subtraction (fixed OIDs since PostgreSQL 7; their fmgroids names
/// changed in 14): int2 -> int8, int4 -> int8, int8 -> int4, int8 - int8.
const INT28: u32 = 754;
const INT48: u32 = 481;
const INT84: u32 = 480;
const INT8MI: u32 = 464;

/// `simhash_near(a, b, bound)` (or its set form) for `op` when `op` compares one of our
/// distances with an integer bound in a way an index can serve.
///
/// # Safety
/// While planning: `op` must point to a valid OpExpr; the new nodes are palloc'd in the current
/// memory context.
unsafe fn rewrite_comparison(op: *mut pg_sys::OpExpr) -> Option<*mut pg_sys::Node> {
    // SAFETY: `op` is a valid OpExpr (see # Safety), its arguments valid expressions; list indexes
    // stay below the checked length, and every node built here is palloc'd in the current context.
    unsafe {
        if list_len((*op).args) != 2 {
            return None;
        }
        let strategy = pg_sys::get_op_opfamily_strategy((*op).opno, pg_sys::INTEGER_BTREE_FAM_OID);
        let (left, right) = (list_nth((*op).args, 0), list_nth((*op).args, 1));
        // Put the distance on the left: `K >= d` is `d <= K`.
        let (near_fn, a, b, bound, strategy) = if let Some((near_fn, a, b)) = distance_call(left) {
            (near_fn, a, b, right, strategy)
        } else {
            let (near_fn, a, b) = distance_call(right)?;
            let commuted = match strategy {
                LESS => GREATER,
                LESS_EQUAL => GREATER_EQUAL,
                GREATER_EQUAL => LESS_EQUAL,
                GREATER => LESS,
                other => other,
            };
            (near_fn, a, b, left, commuted)
        };
        // d < K is d <= K - 1; d = K needs d <= K.
        let (minus, keep_comparison) = match strategy {
            LESS_EQUAL => (0, false),
            LESS => (1, false),
            EQUAL => (0, true),
            _ => return None,
        };
        // A volatile side would be evaluated again by the rewritten call (and could differ).
        if pg_sys::contain_volatile_functions(bound) || pg_sys::contain_volatile_functions(a) || pg_sys::contain_volatile_functions(b) {
            return None;
        }
        // The forms that keep the comparison evaluate both sides twice: worth it only where an
        // index can serve the call, which needs a column on one side.
        let may_use_index = is_column(a) || is_column(b);
        let near = |k: *mut pg_sys::Node| func(near_fn, pg_sys::BOOLOID, &[copy(a), copy(b), k]);
        if let Some(value) = int_constant(bound) {
            let Some(value) = value else {
                return None; // a NULL bound: the comparison is NULL for every row, as written
            };
            let k = value.saturating_sub(minus);
            if (0..=64).contains(&k) && !keep_comparison {
                return Some(near(int4_const(k as i32)));
            }
            if !may_use_index {
                return None;
            }
            let clamped = near(int4_const(k.clamp(0, 64) as i32));
            return Some(both(clamped, op.cast()));
        }
        if !may_use_index {
            return None;
        }
        let as_int8 = match pg_sys::exprType(bound) {
            pg_sys::INT2OID => func(pg_sys::Oid::from(INT28), pg_sys::INT8OID, &[copy(bound)]),
            pg_sys::INT4OID => func(pg_sys::Oid::from(INT48), pg_sys::INT8OID, &[copy(bound)]),
            pg_sys::INT8OID => copy(bound),
            _ => return None,
        };
        // GREATEST(LEAST(K, 64 + minus), minus) - minus, as int4: always in 0..=64.
        let mut k = min_max(pg_sys::MinMaxOp::IS_LEAST, as_int8, int8_const(64 + minus));
        k = min_max(pg_sys::MinMaxOp::IS_GREATEST, k, int8_const(minus));
        if minus != 0 {
            k = func(pg_sys::Oid::from(INT8MI), pg_sys::INT8OID, &[k, int8_const(minus)]);
        }
        let k = func(pg_sys::Oid::from(INT84), pg_sys::INT4OID, &[k]);
        Some(both(near(k), op.cast()))
    }
}

/// Whether `node` is a column (under binary-compatible casts): the side a block index serves.
///
/// # Safety
/// `node` must be null or a valid expression node.
unsafe fn is_column(mut node: *mut pg_sys::Node) -> bool {
    // SAFETY: `node` is null or valid (see # Safety), and `cast` checks the tag before it is read.
    unsafe {
        while let Some(relabel) = cast::<pg_sys::RelabelType>(node, pg_sys::NodeTag::T_RelabelType) {
            node = (*relabel).arg.cast();
        }
        cast::<pg_sys::Var>(node, pg_sys::NodeTag::T_Var).is_some()
    }
}

/// When `node` calls our distance on two fingerprints (`<->` or `hamming_distance`, or the
/// set forms): the matching `simhash_near` function and the two arguments.
///
/// # Safety
/// While planning (it may look our functions up in the catalogs): `node` must be null or a
/// valid expression node; an OpExpr's missing function OID is filled in.
unsafe fn distance_call(node: *mut pg_sys::Node) -> Option<(pg_sys::Oid, *mut pg_sys::Node, *mut pg_sys::Node)> {
    // SAFETY: `node` is null or valid (see # Safety); `cast` checks each tag before the node is
    // read as that type, and the two arguments read exist (the length is checked first).
    unsafe {
        let (funcid, args) = if let Some(op) = cast::<pg_sys::OpExpr>(node, pg_sys::NodeTag::T_OpExpr) {
            if (*op).opfuncid == pg_sys::InvalidOid {
                pg_sys::set_opfuncid(op);
            }
            ((*op).opfuncid, (*op).args)
        } else {
            let call = cast::<pg_sys::FuncExpr>(node, pg_sys::NodeTag::T_FuncExpr)?;
            ((*call).funcid, (*call).args)
        };
        if list_len(args) != 2 || pg_sys::exprType(node) != pg_sys::INT4OID {
            return None;
        }
        // Most int4 functions of two arguments are not ours: once this backend knows our
        // functions, they are told apart without a catalog lookup.
        let oids = match ExtOids::cached() {
            Some(oids) if oids.distance_fn == funcid || oids.sets.is_some_and(|s| s.distance_fn == funcid) => oids,
            Some(_) => return None,
            None => ExtOids::of_member(funcid)?,
        };
        let near_fn = if oids.distance_fn == funcid {
            oids.near_fn
        } else {
            oids.sets.filter(|s| s.distance_fn == funcid)?.near_fn
        };
        Some((near_fn, list_nth(args, 0), list_nth(args, 1)))
    }
}

/// The value of an int2, int4 or int8 constant (`Some(None)` when it is NULL); `None` for
/// anything else.
///
/// # Safety
/// `node` must be null or a valid expression node.
unsafe fn int_constant(node: *mut pg_sys::Node) -> Option<Option<i64>> {
    // SAFETY: `node` is null or valid (see # Safety), and `cast` checks the tag before it is read.
    unsafe {
        let c = cast::<pg_sys::Const>(node, pg_sys::NodeTag::T_Const)?;
        if (*c).constisnull {
            return Some(None);
        }
        let datum = (*c).constvalue.value();
        match (*c).consttype {
            pg_sys::INT2OID => Some(Some(i64::from(datum as i16))),
            pg_sys::INT4OID => Some(Some(i64::from(datum as i32))),
            pg_sys::INT8OID => Some(Some(datum as i64)),
            _ => None,
        }
    }
}

/// `LEAST(a, b)` or `GREATEST(a, b)` of two int8 expressions.
///
/// # Safety
/// Inside a transaction, with the memory context the node should live in current; `a` and `b`
/// must be valid int8 expressions.
unsafe fn min_max(op: pg_sys::MinMaxOp::Type, a: *mut pg_sys::Node, b: *mut pg_sys::Node) -> *mut pg_sys::Node {
    // SAFETY: the node is palloc0'd here with the size of a MinMaxExpr and filled in; the arguments
    // are valid (see # Safety).
    unsafe {
        let expr = pg_sys::palloc0(std::mem::size_of::<pg_sys::MinMaxExpr>()).cast::<pg_sys::MinMaxExpr>();
        (*expr).xpr.type_ = pg_sys::NodeTag::T_MinMaxExpr;
        (*expr).minmaxtype = pg_sys::INT8OID;
        (*expr).op = op;
        (*expr).args = pg_sys::lappend(pg_sys::lappend(std::ptr::null_mut(), a.cast()), b.cast());
        (*expr).location = -1;
        expr.cast()
    }
}

/// `a AND b`.
///
/// # Safety
/// Inside a transaction, with the memory context the node should live in current; `a` and `b`
/// must be valid boolean expressions.
unsafe fn both(a: *mut pg_sys::Node, b: *mut pg_sys::Node) -> *mut pg_sys::Node {
    // SAFETY: palloc'd nodes from valid arguments (see # Safety).
    unsafe {
        let args = pg_sys::lappend(pg_sys::lappend(std::ptr::null_mut(), a.cast()), b.cast());
        nodes::bool_expr(pg_sys::BoolExprType::AND_EXPR, args)
    }
}
