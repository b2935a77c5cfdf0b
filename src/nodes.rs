//! Small helpers for PostgreSQL parse nodes and lists, shared by the code that reads block
//! expressions (`layout.rs`) and the code that writes rewritten conditions (`planner.rs`).

use pgrx::pg_sys;

/// `node` as a `T` when its tag says so.
///
/// # Safety
/// `node` must be null or point to a valid node.
pub unsafe fn cast<T>(node: *mut pg_sys::Node, tag: pg_sys::NodeTag) -> Option<*mut T> {
    // SAFETY: a non-null `node` points to a valid node (the caller's contract, see # Safety).
    (!node.is_null() && unsafe { (*node).type_ } == tag).then_some(node.cast())
}

/// The value of a non-null int4 constant.
///
/// # Safety
/// `node` must be null or point to a valid node.
pub unsafe fn int4_value(node: *mut pg_sys::Node) -> Option<i32> {
    // SAFETY: `node` is null or a valid node (the caller's contract, see # Safety), and `cast`
    // returns it only when its tag says it is a Const.
    unsafe {
        let c = cast::<pg_sys::Const>(node, pg_sys::NodeTag::T_Const)?;
        ((*c).consttype == pg_sys::INT4OID && !(*c).constisnull).then(|| (*c).constvalue.value() as i32)
    }
}

/// The value of `node` when it is a non-null int8 constant.
///
/// # Safety
/// `node` must be null or a valid node.
pub unsafe fn int8_value(node: *mut pg_sys::Node) -> Option<i64> {
    // SAFETY: as int4_value.
    unsafe {
        let c = cast::<pg_sys::Const>(node, pg_sys::NodeTag::T_Const)?;
        ((*c).consttype == pg_sys::INT8OID && !(*c).constisnull).then(|| (*c).constvalue.value() as i64)
    }
}

/// An int8[] of block values, built in the current memory context: the probes of one block, for
/// the planner's `= ANY(...)` constants.
///
/// # Safety
/// Must run inside a transaction (palloc).
pub unsafe fn int8_array(values: &[u64]) -> *mut pg_sys::ArrayType {
    let mut datums: Vec<pg_sys::Datum> = values.iter().map(|&v| pg_sys::Datum::from(v as i64)).collect();
    // SAFETY: inside a transaction (see # Safety); `datums` holds `len` by-value int8 datums and
    // outlives the call, which copies them.
    unsafe { pg_sys::construct_array(datums.as_mut_ptr(), datums.len() as i32, pg_sys::INT8OID, 8, true, pg_sys::TYPALIGN_DOUBLE as _) }
}

/// Length of a possibly empty (NIL) list.
///
/// # Safety
/// `list` must be NIL or a valid list.
pub unsafe fn list_len(list: *mut pg_sys::List) -> usize {
    if list.is_null() {
        0
    } else {
        // SAFETY: a non-null `list` is a valid list (the caller's contract, see # Safety).
        unsafe { (*list).length as usize }
    }
}

/// Element `n` of a pointer list.
///
/// # Safety
/// `list` must be a valid pointer list with more than `n` elements.
pub unsafe fn list_nth(list: *mut pg_sys::List, n: usize) -> *mut pg_sys::Node {
    // SAFETY: `list` is a valid pointer list longer than `n` (the caller's contract, see # Safety).
    unsafe { pg_sys::list_nth(list, n as i32).cast() }
}

/// A deep copy, so that a rewritten expression never shares nodes with another (the planner
/// scribbles on what it is given).
///
/// # Safety
/// `node` must point to a valid node; runs in the current memory context.
pub unsafe fn copy(node: *mut pg_sys::Node) -> *mut pg_sys::Node {
    // SAFETY: `node` is a valid node (the caller's contract, see # Safety).
    unsafe { pg_sys::copyObjectImpl(node.cast()).cast() }
}

/// A call of function `funcid` as an explicit call (no collation).
///
/// # Safety
/// The arguments must be valid nodes of the function's argument types.
pub unsafe fn func(funcid: pg_sys::Oid, rettype: pg_sys::Oid, args: &[*mut pg_sys::Node]) -> *mut pg_sys::Node {
    // SAFETY: the arguments are valid nodes and we are in a transaction (the caller's contract,
    // see # Safety); lappend starts a new list from NIL and makeFuncExpr only stores the list.
    unsafe {
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
}

/// A non-null int4 constant.
///
/// # Safety
/// Must run inside a transaction (palloc).
pub unsafe fn int4_const(value: i32) -> *mut pg_sys::Node {
    // SAFETY: inside a transaction (see # Safety); makeConst pallocs a node from plain values.
    unsafe { pg_sys::makeConst(pg_sys::INT4OID, -1, pg_sys::InvalidOid, 4, pg_sys::Datum::from(value), false, true).cast() }
}

/// A non-null int8 constant.
///
/// # Safety
/// Must run inside a transaction (palloc).
pub unsafe fn int8_const(value: i64) -> *mut pg_sys::Node {
    // SAFETY: inside a transaction (see # Safety); makeConst pallocs a node from plain values.
    unsafe { pg_sys::makeConst(pg_sys::INT8OID, -1, pg_sys::InvalidOid, 8, pg_sys::Datum::from(value), false, true).cast() }
}

/// The AND (or OR) of the expressions in list `args`, flat: an argument that is itself an AND (an OR) gives
/// its own arguments instead, and a single argument is returned as it is.
///
/// Flat is what the planner expects of every condition it distributes: it flattens the
/// conditions it preprocesses (`canonicalize_qual`), but not those it copies to the members of
/// an append relation (partitions, inheritance children, UNION ALL), which it only simplifies
/// again. There a rewrite that put an AND directly inside an AND, under one arm of an OR, gave
/// the index matcher a bare AND where it reads a RestrictInfo, and the backend crashed (issue 63).
///
/// # Safety
/// Inside a transaction, in the memory context the node should live in; `args` must be NIL or a
/// pointer list of valid boolean expressions.
pub unsafe fn bool_expr(kind: pg_sys::BoolExprType::Type, args: *mut pg_sys::List) -> *mut pg_sys::Node {
    debug_assert!(kind == pg_sys::BoolExprType::AND_EXPR || kind == pg_sys::BoolExprType::OR_EXPR);
    // SAFETY: the arguments are valid boolean expressions (see # Safety); `cast` checks each tag
    // before an argument is read as a BoolExpr, and its list indexes stay below the length.
    unsafe {
        let mut list = std::ptr::null_mut();
        for i in 0..list_len(args) {
            let arg = list_nth(args, i);
            match cast::<pg_sys::BoolExpr>(arg, pg_sys::NodeTag::T_BoolExpr).filter(|b| (**b).boolop == kind) {
                Some(same) => {
                    for i in 0..list_len((*same).args) {
                        list = pg_sys::lappend(list, list_nth((*same).args, i).cast());
                    }
                }
                None => list = pg_sys::lappend(list, arg.cast()),
            }
        }
        match list_len(list) {
            // An AND of nothing is true, an OR of nothing false (no caller builds one).
            0 => pg_sys::makeBoolConst(kind == pg_sys::BoolExprType::AND_EXPR, false),
            1 => list_nth(list, 0),
            _ => pg_sys::makeBoolExpr(kind, list, -1).cast(),
        }
    }
}

/// Whether `node` is flat in the sense of [`bool_expr`] throughout: no AND directly under an AND,
/// no OR directly under an OR, at any depth of its AND, OR and NOT nodes. What the support
/// function returns must be (checked in debug builds and by the tests).
///
/// # Safety
/// `node` must be null or a valid expression tree.
pub unsafe fn is_flat(node: *mut pg_sys::Node) -> bool {
    // Recursive over a tree we built (a few levels), checked anyway. SAFETY: a plain stack check.
    unsafe { pg_sys::check_stack_depth() };
    // SAFETY: `node` is null or valid (see # Safety); `cast` checks the tags before reading.
    unsafe {
        let Some(b) = cast::<pg_sys::BoolExpr>(node, pg_sys::NodeTag::T_BoolExpr) else {
            return true;
        };
        (0..list_len((*b).args)).all(|i| {
            let arg = list_nth((*b).args, i);
            let same = cast::<pg_sys::BoolExpr>(arg, pg_sys::NodeTag::T_BoolExpr)
                .is_some_and(|a| (*a).boolop == (*b).boolop && (*b).boolop != pg_sys::BoolExprType::NOT_EXPR);
            !same && is_flat(arg)
        })
    }
}
