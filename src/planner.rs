//! How `WHERE simhash_near(fp, q, k)` reaches the block indexes: a planner support function
//! (SupportRequestSimplify) that rewrites the call, when `fp` is a column with a fully indexed
//! block layout, into
//!
//! ```sql
//! (fp_block0of4 = simhash_block(q, 0, 4) OR … OR fp_block3of4 = simhash_block(q, 3, 4))
//!   AND hamming_distance(fp, q) <= k
//! ```
//!
//! (`= ANY(simhash_block_ball(q, i, m, r))` when k >= m). The planner turns the OR into a
//! BitmapOr of index scans and keeps the distance as the recheck.
//!
//! When every block has a covering index (`(block) INCLUDE (fp)`), the call becomes instead
//!
//! ```sql
//! ctid = ANY(simhash_index_probe('{idx0,…,idx3}'::regclass[], q, k)) AND hamming_distance(fp, q) <= k
//! ```
//!
//! a TID scan fed by `simhash_index_probe` (`index_probe.rs`), which runs the same block probes
//! but checks the distance on the index tuples, so the table is read only for the matches. A
//! BitmapOr cannot do that (it fetches every candidate's heap page), and at 10M rows the
//! candidates, not the probes, are the cost. Joins (PostgreSQL does not parameterize a TID scan
//! by `= ANY`), tables with row-level security, and tables read through a view (whose owner's
//! rights apply, while the probe checks the caller's) get the BitmapOr form. The rewrite is equivalent for
//! every row, NULLs included, because the block columns are generated from `fp`: a row within k
//! has some block within floor(k/m) bits (pigeonhole), so the OR only ever removes rows the
//! distance test would reject. Anything the rewrite does not recognise is left alone, and
//! `simhash_near` then runs as written (a sequential scan), still exact.
//!
//! On a Citus distributed or reference table the call is left alone on the node that receives
//! the query: Citus sends it to every shard, whose own planner rewrites it (`citus.rs`).
//!
//! A `k` known only at run time (a generic plan's `$2`: drivers prepare `simhash_near(fp, $1,
//! $2)`) is passed to the probe as it is, so only the covering form takes it; the layout is
//! chosen for k = 3, and a k the chosen indexes cannot serve by block probes is answered by the
//! probe reading the whole of one covering index, still exact.
//!
//! Why Simplify and not IndexCondition: the index is on a block column, not on `fp`, so the
//! planner would never ask `simhash_near` for an index condition (it asks only for clauses whose
//! argument is the indexed column). Simplify runs once per call site while the query is
//! preprocessed, with the range table at hand, for literals, parameters and join columns alike.

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::Internal;
use simhash_core::blocks::Block;
use simhash_core::probe;

use crate::citus;
use crate::compat;
use crate::ext_objects::ExtOids;
use crate::layout::{self, Layout};
use crate::nodes::{self, cast, list_len, list_nth};

/// The support function of `simhash_near`: answers SupportRequestSimplify with the block-index
/// form of the call, and every other request with NULL ("nothing to offer").
#[pg_extern(immutable, strict, parallel_safe)]
pub fn simhash_near_support(request: Internal) -> Internal {
    let node = request.unwrap().map_or(std::ptr::null_mut(), |d| d.cast_mut_ptr::<pg_sys::Node>());
    // SAFETY: PostgreSQL passes a valid request node; we only read it and build new nodes in
    // the planner's memory context.
    let rewritten = unsafe {
        match cast::<pg_sys::SupportRequestSimplify>(node, pg_sys::NodeTag::T_SupportRequestSimplify) {
            Some(request) => simplify(request),
            None => None,
        }
    };
    Internal::from(Some(pg_sys::Datum::from(rewritten.unwrap_or(std::ptr::null_mut()))))
}

/// The distance bound of the call: a constant, or a value known only when the query runs (a
/// generic plan's `$2`, which drivers send): that one is passed to the probe as it is, and only
/// the covering form can take it (the BitmapOr form's probes depend on k's value).
#[derive(Clone, Copy)]
enum Bound {
    Known(i32),
    AtRunTime(*mut pg_sys::Node),
}

/// The k a layout is chosen for when k is only known at run time: the README's default, which
/// every layout serves (a different k at run time is still answered exactly, see
/// `index_probe`).
const RUN_TIME_K_FOR_COSTING: i32 = 3;

impl Bound {
    /// The k to cost layouts with.
    fn for_costing(self) -> i32 {
        match self {
            Bound::Known(k) => k,
            Bound::AtRunTime(_) => RUN_TIME_K_FOR_COSTING,
        }
    }

    /// The bound as an expression of the rewritten call.
    unsafe fn node(self) -> *mut pg_sys::Node {
        match self {
            Bound::Known(k) => int4_const(k),
            Bound::AtRunTime(expr) => copy(expr),
        }
    }
}

/// One way to run the call through an index: the column side, the query side and the layout.
struct Choice {
    column: *mut pg_sys::Var,
    query: *mut pg_sys::Node,
    layout: Layout,
    score: f64,
}

unsafe fn simplify(request: *mut pg_sys::SupportRequestSimplify) -> Option<*mut pg_sys::Node> {
    let root = (*request).root;
    let call = (*request).fcall;
    if root.is_null() || (*root).parse.is_null() || list_len((*call).args) != 3 {
        return None;
    }
    let k_arg = list_nth((*call).args, 2);
    let k = match nodes::int4_value(k_arg) {
        Some(k) if !(0..=64).contains(&k) => return None, // let simhash_near raise the error at run time
        Some(k) => Bound::Known(k),
        None if !pg_sys::contain_volatile_functions(k_arg) => Bound::AtRunTime(k_arg),
        None => return None,
    };
    let oids = ExtOids::of_member((*call).funcid)?;
    let a = list_nth((*call).args, 0);
    let b = list_nth((*call).args, 1);
    // The function is symmetric: either argument may be the indexed column.
    let choice = [(a, b), (b, a)]
        .into_iter()
        .filter_map(|(column, query)| choose(root, &oids, column, query, k))
        .min_by(|x, y| x.score.total_cmp(&y.score))?;
    build(&oids, &choice, k)
}

/// The best indexed layout for `column` when it is a plain table column and `query` can be
/// computed before scanning it.
unsafe fn choose(
    root: *mut pg_sys::PlannerInfo,
    oids: &ExtOids,
    column: *mut pg_sys::Node,
    query: *mut pg_sys::Node,
    k: Bound,
) -> Option<Choice> {
    let var = cast::<pg_sys::Var>(column, pg_sys::NodeTag::T_Var)?;
    if (*var).varlevelsup != 0 || (*var).varattno <= 0 || (*var).varno <= 0 {
        return None;
    }
    let rtable = (*(*root).parse).rtable;
    let rti = (*var).varno as usize;
    if rti > list_len(rtable) {
        return None;
    }
    let rte = list_nth(rtable, rti - 1).cast::<pg_sys::RangeTblEntry>();
    // Plain tables only, and not a parent read with its inheritance children: the rewrite names
    // one table's indexes, and would be copied as it is to every child. Left alone, the call is
    // simplified again for each child (and each partition) with that child's own indexes.
    if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION || (*rte).relkind as u8 != pg_sys::RELKIND_RELATION {
        return None;
    }
    // A Citus shell table: each shard rewrites the call to its own indexes (`citus`).
    if citus::manages((*rte).relid) {
        return None;
    }

    // The query side is evaluated once per block: it must not change between evaluations, and
    // must not depend on the row being scanned. A k known only at run time goes to the probe,
    // which takes constants and parameters only: no column of any table.
    if pg_sys::contain_volatile_functions(query) || compat::uses_relation_of(root, query, var) {
        return None;
    }
    if matches!(k, Bound::AtRunTime(k) if pg_sys::contain_var_clause(k)) {
        return None;
    }
    let rel = pg_sys::relation_open((*rte).relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    if (*rte).inh && (*(*rel).rd_rel).relhassubclass {
        pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        return None;
    }
    let columns = layout::block_columns(rel, oids);
    let tuples = f64::from((*(*rel).rd_rel).reltuples);
    let row_security = (*(*rel).rd_rel).relrowsecurity;
    pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
    let rows = if tuples >= 0.0 { tuples } else { 1e6 }; // never analysed: assume big
    // A TID scan takes `ctid = ANY(...)` only from constants and parameters: PostgreSQL does not
    // parameterize it by a join's outer row, so with a column of another table in `query` the
    // BitmapOr form (parameterized bitmap scans) is the one that uses the indexes.
    let use_covering = !row_security && !compat::read_as_other_user(root, rte) && !pg_sys::contain_var_clause(query);
    let mut layouts = layout::layouts(&columns, (*var).varattno);
    if let Bound::AtRunTime(_) = k {
        // Only the probe takes k at run time: the covering form.
        if !use_covering {
            return None;
        }
        layouts.retain(|l| l.covering.is_some());
    }
    let (layout, score) = layout::best_layout(layouts, k.for_costing(), rows, use_covering)?;
    Some(Choice { column: var, query, layout, score })
}

/// The rewritten call: the covering form when the layout has covering indexes, else the
/// BitmapOr form; both end in the exact distance test.
unsafe fn build(oids: &ExtOids, choice: &Choice, k: Bound) -> Option<*mut pg_sys::Node> {
    let lookup = match (&choice.layout.covering, k) {
        (Some(indexes), _) => probe_condition(oids, choice, indexes, k),
        (None, Bound::Known(k)) => block_conditions(oids, choice, k),
        (None, Bound::AtRunTime(_)) => return None, // choose() keeps covering layouts only
    };
    let mut both = std::ptr::null_mut();
    both = pg_sys::lappend(both, lookup.cast());
    both = pg_sys::lappend(both, distance_within(oids, choice, k).cast());
    Some(pg_sys::makeBoolExpr(pg_sys::BoolExprType::AND_EXPR, both, -1).cast())
}

/// `ctid = ANY(simhash_index_probe('{…}'::regclass[], query, k))`, which the planner runs as a
/// TID scan (parameterized, in a join).
unsafe fn probe_condition(oids: &ExtOids, choice: &Choice, indexes: &[pg_sys::Oid], k: Bound) -> *mut pg_sys::Node {
    let ctid = copy(choice.column.cast::<pg_sys::Node>()).cast::<pg_sys::Var>();
    (*ctid).varattno = pg_sys::SelfItemPointerAttributeNumber as i16;
    (*ctid).varattnosyn = (*ctid).varattno;
    (*ctid).vartype = pg_sys::TIDOID;
    (*ctid).vartypmod = -1;
    (*ctid).varcollid = pg_sys::InvalidOid;
    let mut datums: Vec<pg_sys::Datum> = indexes.iter().map(|&oid| pg_sys::Datum::from(oid)).collect();
    let array = pg_sys::construct_array(
        datums.as_mut_ptr(),
        datums.len() as i32,
        pg_sys::REGCLASSOID,
        4,
        true,
        pg_sys::TYPALIGN_INT as _,
    );
    let names =
        pg_sys::makeConst(pg_sys::REGCLASSARRAYOID, -1, pg_sys::InvalidOid, -1, pg_sys::Datum::from(array), false, false);
    let call = func(oids.probe_fn, pg_sys::TIDARRAYOID, &[names.cast(), copy(choice.query), k.node()]);
    any_eq(pg_sys::Oid::from(pg_sys::TIDEqualOperator), ctid.cast(), call)
}

/// `hamming_distance(column, query) <= k`: the exact test every rewritten form ends with.
unsafe fn distance_within(oids: &ExtOids, choice: &Choice, k: Bound) -> *mut pg_sys::Node {
    let distance = func(
        oids.distance_fn,
        pg_sys::INT4OID,
        &[copy(choice.column.cast()), copy(choice.query)],
    );
    let int4_le = pg_sys::get_opfamily_member(
        pg_sys::INTEGER_BTREE_FAM_OID,
        pg_sys::INT4OID,
        pg_sys::INT4OID,
        pg_sys::BTLessEqualStrategyNumber as i16,
    );
    let within = pg_sys::make_opclause(
        int4_le,
        pg_sys::BOOLOID,
        false,
        distance.cast(),
        k.node().cast(),
        pg_sys::InvalidOid,
        pg_sys::InvalidOid,
    );
    (*within.cast::<pg_sys::OpExpr>()).opfuncid = pg_sys::get_opcode(int4_le);
    within.cast()
}

/// `(block0 = … OR … OR block<m-1> = …)`, one arm per probed block (`probe::radii`), `= ANY(ball)`
/// where the block's radius is not 0.
unsafe fn block_conditions(oids: &ExtOids, choice: &Choice, k: i32) -> *mut pg_sys::Node {
    let m = choice.layout.count;
    let radii = probe::radii(k as u32, m);
    let query_value = cast::<pg_sys::Const>(choice.query, pg_sys::NodeTag::T_Const)
        .filter(|c| !(**c).constisnull)
        .map(|c| (*c).constvalue.value() as u64);
    let int8_eq = pg_sys::get_opfamily_member(
        pg_sys::INTEGER_BTREE_FAM_OID,
        pg_sys::INT8OID,
        pg_sys::INT8OID,
        pg_sys::BTEqualStrategyNumber as i16,
    );
    let mut arms = std::ptr::null_mut();
    for ((i, &attnum), r) in choice.layout.columns.iter().enumerate().zip(radii) {
        let Some(r) = r else { continue };
        let block_var = if attnum == 0 {
            // An expression index: the same expression, which the planner matches to it.
            func(oids.block_fn, pg_sys::INT8OID, &[copy(choice.column.cast()), int4_const(i as i32), int4_const(m as i32)])
        } else {
            let var = copy(choice.column.cast::<pg_sys::Node>()).cast::<pg_sys::Var>();
            (*var).varattno = attnum;
            (*var).varattnosyn = attnum;
            (*var).vartype = pg_sys::INT8OID;
            (*var).vartypmod = -1;
            (*var).varcollid = pg_sys::InvalidOid;
            var.cast()
        };
        let block = Block::new(i as i64, i64::from(m)).expect("layouts hold valid blocks only");
        let arm = if r == 0 {
            let value = match query_value {
                Some(q) => int8_const(block.extract(q) as i64),
                None => func(oids.block_fn, pg_sys::INT8OID, &[copy(choice.query), int4_const(i as i32), int4_const(m as i32)]),
            };
            let op = pg_sys::make_opclause(
                int8_eq,
                pg_sys::BOOLOID,
                false,
                block_var.cast(),
                value.cast(),
                pg_sys::InvalidOid,
                pg_sys::InvalidOid,
            );
            (*op.cast::<pg_sys::OpExpr>()).opfuncid = pg_sys::get_opcode(int8_eq);
            op.cast::<pg_sys::Node>()
        } else {
            let values = match query_value {
                Some(q) => int8_array_const(&probe::ball(block.extract(q), block.width, r)),
                None => func(
                    oids.ball_fn,
                    pg_sys::INT8ARRAYOID,
                    &[copy(choice.query), int4_const(i as i32), int4_const(m as i32), int4_const(r as i32)],
                ),
            };
            any_eq(int8_eq, block_var.cast(), values)
        };
        arms = pg_sys::lappend(arms, arm.cast());
    }
    if list_len(arms) == 1 {
        return list_nth(arms, 0); // k = 0: one block, no OR
    }
    pg_sys::makeBoolExpr(pg_sys::BoolExprType::OR_EXPR, arms, -1).cast()
}

unsafe fn copy(node: *mut pg_sys::Node) -> *mut pg_sys::Node {
    pg_sys::copyObjectImpl(node.cast()).cast()
}

unsafe fn func(funcid: pg_sys::Oid, rettype: pg_sys::Oid, args: &[*mut pg_sys::Node]) -> *mut pg_sys::Node {
    let mut list = std::ptr::null_mut();
    for &arg in args {
        list = pg_sys::lappend(list, arg.cast());
    }
    pg_sys::makeFuncExpr(
        funcid,
        rettype,
        list,
        pg_sys::InvalidOid,
        pg_sys::InvalidOid,
        pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
    )
    .cast()
}

unsafe fn int4_const(value: i32) -> *mut pg_sys::Node {
    pg_sys::makeConst(pg_sys::INT4OID, -1, pg_sys::InvalidOid, 4, pg_sys::Datum::from(value), false, true).cast()
}

unsafe fn int8_const(value: i64) -> *mut pg_sys::Node {
    pg_sys::makeConst(pg_sys::INT8OID, -1, pg_sys::InvalidOid, 8, pg_sys::Datum::from(value), false, true).cast()
}

unsafe fn int8_array_const(values: &[u64]) -> *mut pg_sys::Node {
    let array = nodes::int8_array(values);
    pg_sys::makeConst(pg_sys::INT8ARRAYOID, -1, pg_sys::InvalidOid, -1, pg_sys::Datum::from(array), false, false)
        .cast()
}

/// `left = ANY(values)`, which a B-tree index scan takes as one condition.
unsafe fn any_eq(eq: pg_sys::Oid, left: *mut pg_sys::Node, values: *mut pg_sys::Node) -> *mut pg_sys::Node {
    let mut args = std::ptr::null_mut();
    args = pg_sys::lappend(args, left.cast());
    args = pg_sys::lappend(args, values.cast());
    let expr = pg_sys::palloc0(std::mem::size_of::<pg_sys::ScalarArrayOpExpr>()).cast::<pg_sys::ScalarArrayOpExpr>();
    (*expr).xpr.type_ = pg_sys::NodeTag::T_ScalarArrayOpExpr;
    (*expr).opno = eq;
    (*expr).opfuncid = pg_sys::get_opcode(eq);
    (*expr).useOr = true;
    (*expr).inputcollid = pg_sys::InvalidOid;
    (*expr).args = args;
    (*expr).location = -1;
    expr.cast()
}
