//! Which `simhash_near` calls the planner may rewrite into index lookups: only those that filter
//! the rows of a scan, and nowhere else.
//!
//! The covering form of the rewrite (`planner.rs`), `ctid = ANY(_simhash_index_probe(…)) AND
//! hamming_distance(fp, q) <= k`, asks the indexes which rows are near, so it equals
//! `simhash_near(fp, q, k)` only for a row the probe can see: one read by a scan of the table
//! under the statement's snapshot. Elsewhere it answers wrongly: in RETURNING and in ON
//! CONFLICT DO UPDATE the row is one the statement has just written or found with another
//! snapshot, and in a WITH CHECK OPTION it is the new row. And where the call is not a filter
//! its value, not just its truth, counts: for a row whose `fp` is NULL the rewrite says false
//! where `simhash_near` says NULL, which `NOT`, `CASE`, `IS NULL` or a target list tell apart.
//! In a target list it would also run a probe for every row.
//!
//! So the planner hook (`distance_bounds.rs`) marks the calls that stand where a NULL and a
//! false both drop the row: the WHERE and JOIN ... ON conditions of each query level, through
//! AND and OR only (under OR, only into the BitmapOr form). The support function rewrites
//! marked calls and leaves every other call as written (`hamming_distance(fp, q) <= k` per row,
//! exact). Rows READ COMMITTED may recheck on a newer version (UPDATE, DELETE and MERGE
//! targets, FOR UPDATE) get the BitmapOr form too (`planner.rs`). Quals that reach the join tree
//! only during planning (an inlined SQL function's body, the first statement of a connection)
//! are marked by `relation_info` from the join tree the planner has simplified; a call whose
//! query side is a subquery is rewritten there too, once the subquery is planned.
//!
//! The mark is the call's input collation. `simhash_near` and `simhash_near_any` take no
//! collatable argument, so the parser always leaves it unset, and PostgreSQL hands it to the
//! support function unchanged (it rebuilds the call it passes, keeping only the function, the
//! arguments and the collations). The support function removes the mark from every call it
//! does not rewrite, so no marked call reaches a plan, except on an inheritance parent, whose
//! conditions PostgreSQL copies to each child and simplifies again there, and where a
//! subquery the call waits for stays a correlated subplan (then it runs as written).

use pgrx::pg_guard;
use pgrx::pg_sys;

use crate::ext_objects::ExtOids;
use crate::nodes::{cast, list_len, list_nth};

/// The marks: the "C" collation for a call that filters rows alone or beside other conditions
/// (AND), the default collation for one among alternatives (OR). Both are fixed OIDs in every
/// PostgreSQL and exist, so nothing that reads a call's collation can fail on them.
const FILTER: pg_sys::Oid = pg_sys::C_COLLATION_OID;
const ALTERNATIVE: pg_sys::Oid = pg_sys::DEFAULT_COLLATION_OID;

/// Where a marked call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The condition, or one of its ANDs: the scan may be driven by the call's lookup alone.
    Filter,
    /// Under an OR: other rows pass too, so a TID scan over the probe cannot drive the scan
    /// (and as a filter the probe would run once per row); the block conditions can, as one arm
    /// of a BitmapOr.
    Alternative,
}

/// Marks the `simhash_near` and `simhash_near_any` calls of `condition` that filter rows: the
/// condition itself, or an argument of its ANDs and ORs, recursively (an implicit-AND list
/// too).
///
/// # Safety
/// `condition` must be null or a valid expression tree, which is changed in place; inside a
/// transaction (recognising our calls may look the extension up in the catalogs).
pub unsafe fn mark(condition: *mut pg_sys::Node) {
    // SAFETY: the caller's contract, passed on (see # Safety).
    unsafe {
        mark_at(condition, Place::Filter)
    }
}

/// `mark` at `place`: where the calls of `condition` stand, as an argument of ANDs (the place
/// they inherit) or of ORs (an alternative).
/// #
/// # Safety
/// As [`mark`]; it runs while planning (the extension lookup of `is_near_call` reads catalogs).
unsafe fn mark_at(condition: *mut pg_sys::Node, place: Place) {
    // Recursive: a deep tree raises PostgreSQL's "stack depth limit exceeded" instead of
    // overflowing the stack. SAFETY: a plain check of this backend's stack.
    unsafe { pg_sys::check_stack_depth() };
    // SAFETY: `condition` is null or a valid expression tree that we may change (see # Safety);
    // `cast` checks each node's tag before we read it as that node type, and the list indexes stay
    // below the list lengths.
    unsafe {
        if let Some(bool_expr) = cast::<pg_sys::BoolExpr>(condition, pg_sys::NodeTag::T_BoolExpr) {
            let inner = match (*bool_expr).boolop {
                pg_sys::BoolExprType::NOT_EXPR => return,
                pg_sys::BoolExprType::OR_EXPR => Place::Alternative,
                _ => place,
            };
            for i in 0..list_len((*bool_expr).args) {
                mark_at(list_nth((*bool_expr).args, i), inner);
            }
        } else if let Some(list) = cast::<pg_sys::List>(condition, pg_sys::NodeTag::T_List) {
            for i in 0..list_len(list) {
                mark_at(list_nth(list, i), place);
            }
        } else if let Some(call) = cast::<pg_sys::FuncExpr>(condition, pg_sys::NodeTag::T_FuncExpr) {
            if is_near_call(call) {
                (*call).inputcollid = match place {
                    Place::Filter => FILTER,
                    Place::Alternative => ALTERNATIVE,
                };
            }
        }
    }
}

/// Whether `node` holds a marked call: one just marked, or one the support function left for
/// later (its query side was a subquery not yet planned).
///
/// # Safety
/// `node` must be null or a valid expression tree.
pub unsafe fn holds_marked(node: *mut pg_sys::Node) -> bool {
    /// PostgreSQL calls it from `expression_tree_walker` with each node of the tree (or null).
    #[pg_guard]
    unsafe extern "C-unwind" fn visit(node: *mut pg_sys::Node, context: *mut std::ffi::c_void) -> bool {
        // SAFETY: `node` is null or a valid node of the tree being walked, and `context` is passed
        // on unused.
        unsafe {
            if node.is_null() {
                return false;
            }
            if let Some(call) = cast::<pg_sys::FuncExpr>(node, pg_sys::NodeTag::T_FuncExpr) {
                if place_of(call).is_some() {
                    return true;
                }
            }
            pg_sys::expression_tree_walker(node, Some(visit), context)
        }
    }
    // SAFETY: `node` is null or a valid expression tree (the caller's contract, see # Safety).
    unsafe {
        visit(node, std::ptr::null_mut())
    }
}

/// Where the call handed to the support function stands, when it was marked.
///
/// # Safety
/// `call` must point to a valid FuncExpr.
pub unsafe fn place_of(call: *const pg_sys::FuncExpr) -> Option<Place> {
    // SAFETY: `call` is a valid FuncExpr (see # Safety).
    unsafe {
        match (*call).inputcollid {
            c if c == FILTER => Some(Place::Filter),
            c if c == ALTERNATIVE => Some(Place::Alternative),
            _ => None,
        }
    }
}

/// The call as written, without the mark: what the support function answers for a marked call
/// it does not rewrite. Kept marked (None: the call stays as it is) when an argument is a column
/// of an inheritance parent, whose children simplify a copy of the condition again, each with
/// its own indexes.
///
/// # Safety
/// Called while planning: `root` must be the planner's valid root and `call` a valid FuncExpr
/// whose arguments belong to the query of `root`. The result shares the call's argument list.
pub unsafe fn unmarked(root: *mut pg_sys::PlannerInfo, call: *const pg_sys::FuncExpr) -> Option<*mut pg_sys::Node> {
    // SAFETY: `root` and `call` are valid and the call's Vars index `root->parse->rtable` (see #
    // Safety); the range table index is checked against the list length before it is read, and
    // makeFuncExpr pallocs a new node in the current (planner) context.
    unsafe {
        let rtable = (*(*root).parse).rtable;
        let of_parent = |arg: *mut pg_sys::Node| {
            cast::<pg_sys::Var>(arg, pg_sys::NodeTag::T_Var).is_some_and(|var| {
                let rti = (*var).varno as usize;
                (*var).varlevelsup == 0
                    && rti >= 1
                    && rti <= list_len(rtable)
                    && (*list_nth(rtable, rti - 1).cast::<pg_sys::RangeTblEntry>()).inh
            })
        };
        if (0..list_len((*call).args)).any(|i| of_parent(list_nth((*call).args, i))) {
            return None;
        }
        let plain = pg_sys::makeFuncExpr(
            (*call).funcid,
            (*call).funcresulttype,
            (*call).args,
            (*call).funccollid,
            pg_sys::InvalidOid,
            pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
        );
        Some(plain.cast())
    }
}

/// Whether `call` calls our `simhash_near` or `simhash_near_any`. Cheap for the calls that are
/// not ours: only a three-argument boolean function can be.
///
/// # Safety
/// `call` must point to a valid FuncExpr; called inside a transaction (the extension lookup
/// reads catalogs).
unsafe fn is_near_call(call: *mut pg_sys::FuncExpr) -> bool {
    // SAFETY: `call` is a valid FuncExpr in a transaction (see # Safety).
    unsafe {
        if (*call).funcresulttype != pg_sys::BOOLOID || list_len((*call).args) != 3 {
            return false;
        }
        let funcid = (*call).funcid;
        let is_ours = |oids: ExtOids| oids.near_fn == funcid || oids.sets.is_some_and(|s| s.near_fn == funcid);
        match ExtOids::cached() {
            Some(oids) if is_ours(oids) => true,
            _ => ExtOids::of_member(funcid).is_some_and(is_ours),
        }
    }
}
