//! Rust-level checks inside a running PostgreSQL (`cargo pgrx test`). The SQL surface is covered
//! by the pg_regress suite in `tests/pg_regress`; these check what SQL output cannot show well:
//! catalog properties of the type and the Datum glue.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::SimHash64;

    #[pg_test]
    fn type_is_eight_bytes_by_value_aligned_like_int8() {
        let row = Spi::get_three::<i16, bool, String>(
            "SELECT typlen, typbyval, typalign::text FROM pg_type WHERE typname = 'simhash64'",
        );
        assert_eq!(row, Ok((Some(8), Some(true), Some("d".to_string()))));
    }

    #[pg_test]
    fn datum_round_trips_through_spi() {
        let fp = Spi::get_one::<SimHash64>("SELECT 'fedcba9876543210'::simhash64");
        assert_eq!(fp, Ok(Some(SimHash64(0xfedc_ba98_7654_3210))));
        let text = Spi::get_one_with_args::<String>(
            "SELECT $1::text",
            &[SimHash64(0x8000_0000_0000_0001).into()],
        );
        assert_eq!(text, Ok(Some("8000000000000001".to_string())));
    }

    /// Calls the type's receive function the way COPY (FORMAT binary) does.
    fn receive(bytes: &[u8]) -> SimHash64 {
        let typoid = Spi::get_one::<pg_sys::Oid>("SELECT 'simhash64'::regtype::oid")
            .ok()
            .flatten()
            .unwrap_or(pg_sys::InvalidOid);
        let mut receive_fn = pg_sys::InvalidOid;
        let mut ioparam = pg_sys::InvalidOid;
        // SAFETY: a test runs inside a transaction; the StringInfo is palloc'd from `bytes` and
        // simhash64's receive function returns a by-value Datum.
        unsafe {
            pg_sys::getTypeBinaryInputInfo(typoid, &mut receive_fn, &mut ioparam);
            let raw = pgrx::StringInfo::from(bytes).into_pg();
            let datum = pg_sys::OidReceiveFunctionCall(receive_fn, raw, ioparam, -1);
            SimHash64(datum.value() as u64)
        }
    }

    #[pg_test]
    fn binary_receive_reads_network_order() {
        let fp = receive(&[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
        assert_eq!(fp, SimHash64(0x0123_4567_89ab_cdef));
    }

    #[pg_test(error = "insufficient data left in message")]
    fn binary_receive_rejects_short_messages() {
        receive(&[1, 2, 3]);
    }

    #[pg_test]
    fn the_test_server_preloads_the_library() {
        // The server started with the library in shared_preload_libraries: _PG_init loaded
        // jieba in the postmaster without harm, and fingerprints are the same as without it.
        let setting = Spi::get_one::<String>("SHOW shared_preload_libraries");
        assert_eq!(setting, Ok(Some("simhash_pg".to_string())));
        let fp = Spi::get_one::<String>("SELECT simhash('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。')::text");
        assert_eq!(fp, Ok(Some("46b58b86d69c7ead".to_string())));
    }

    #[pg_test]
    fn every_function_has_the_right_markings_and_a_comment() {
        // IMMUTABLE STRICT PARALLEL SAFE unless listed; never SECURITY DEFINER; always COMMENTed.
        let bad = Spi::get_one::<i64>(
            "WITH expected(name, nargs, volatility, strict, parallel) AS (VALUES
                 ('simhash_block_columns', NULL, 's', true, 's'),
                 ('simhash_block_keys', NULL, 's', true, 's'),
                 ('_simhash_keyed_to_build', NULL, 'i', false, 's'),
                 ('_simhash_create_key_indexes', NULL, 'v', false, 'u'),
                 ('_simhash_key_marker', NULL, 'i', true, 's'),
                 ('_simhash_index_probe', NULL, 's', true, 's'),
                 ('_simhash_leaf_map', NULL, 'v', true, 'r'),
                 ('_simhash_table_problem', NULL, 's', false, 's'),
                 ('_simhash_citus_table', NULL, 's', true, 's'),
                 ('_simhash_heap_only', NULL, 's', true, 's'),
                 ('_simhash_set_size', NULL, 's', true, 's'),
                 ('_simhash_rows_estimate', NULL, 's', true, 's'),
                 ('_simhash_lookup_cost', NULL, 's', true, 's'),
                 ('_simhash_batch_prefers_joins', NULL, 'i', false, 's'),
                 ('_simhash_ingest_method', NULL, 's', true, 's'),
                 ('_simhash_batch_near', NULL, 's', true, 's'),
                 ('_simhash_index_name', NULL, 's', true, 's'),
                 ('_simhash_column_list', NULL, 's', true, 's'),
                 ('_simhash_create_expression_indexes', NULL, 'v', false, 'u'),
                 ('_simhash_drop_layouts', NULL, 'v', false, 'u'),
                 ('_simhash_create_index', NULL, 'v', false, 'u'),
                 ('simhash_index_statements', NULL, 'v', false, 'u'),
                 ('simhash_drop_index_statements', NULL, 'v', false, 'u'),
                 ('simhash_refingerprint_statements', NULL, 'v', false, 'u'),
                 ('simhash_backfill', NULL, 'v', false, 'u'),
                 ('_simhash_fill', NULL, 'v', false, 'u'),
                 ('_simhash_fill_recipe', NULL, 's', true, 's'),
                 ('_simhash_fill_triggers', NULL, 's', true, 's'),
                 ('_simhash_trigger_args', NULL, 's', true, 's'),
                 ('_simhash_ingest_horizon', NULL, 'v', false, 'r'),
                 ('_simhash_ingest_slots', NULL, 's', true, 's'),
                 ('_simhash_ingest_log_readable', NULL, 's', true, 's'),
                 ('_simhash_ingest_paths', NULL, 's', true, 's'),
                 ('_simhash_ingest_log_done', NULL, 'v', true, 'u'),
                 ('_simhash_guard_row', NULL, 'v', false, 'u'),
                 ('_simhash_guard_check', NULL, 'v', false, 'u'),
                 ('_simhash_guard_triggers', NULL, 's', true, 's'),
                 ('simhash_guard', NULL, 'v', false, 'u'),
                 ('simhash_drop_guard', NULL, 'v', true, 'u'),
                 ('simhash_guards', NULL, 's', true, 's'),
                 ('_simhash_online_end', NULL, 's', false, 'u'),
                 ('_simhash_layout_drops', NULL, 's', false, 'u'),
                 ('_simhash_index_statements_for', NULL, 's', false, 'u'),
                 ('_simhash_expression_index_statements', NULL, 's', false, 'u'),
                 ('_simhash_key_index_statements', NULL, 's', false, 'u'),
                 ('_simhash_layout_to_build', NULL, 'i', false, 's'),
                 ('_simhash_layout_rows', NULL, 's', true, 'r'),
                 ('_simhash_not_permuted', NULL, 's', true, 's'),
                 ('simhash_index_report', NULL, 's', false, 'r'),
                 ('simhash_k_report', NULL, 'v', false, 'r'),
                 ('_simhash_pairs', NULL, 's', false, 'r'),
                 ('_simhash_scan_pairs', NULL, 's', true, 'r'),
                 ('_simhash_pairs_on_workers', NULL, 'v', false, 'u'),
                 ('_simhash_pairs_on_workers_or_why', NULL, 's', false, 's'),
                 ('_simhash_clusters', NULL, 's', false, 'r'),
                 ('_simhash_checked_pairs', NULL, 's', false, 'r'),
                 ('_simhash_verified_pairs', NULL, 's', false, 'r'),
                 ('_simhash_k_problem', NULL, 'i', false, 's'),
                 ('_simhash_verify_problem', NULL, 's', false, 's'),
                 ('_simhash_check_pairs_call', NULL, 's', false, 's'),
                 ('_simhash_nearest', NULL, 's', false, 'r'),
                 ('simhash_pairs', NULL, 's', false, 'r'),
                 ('simhash_pairs_between', NULL, 's', false, 'r'),
                 ('simhash_chained_groups', NULL, 's', false, 'r'),
                 ('simhash_representative_groups', NULL, 's', false, 'r'),
                 ('_simhash_representative_groups', NULL, 's', false, 'r'),
                 ('_simhash_verify_parts', NULL, 's', false, 's'),
                 ('simhash_clusters', NULL, 's', false, 'r'),
                 ('simhash_groups', NULL, 's', false, 'r'),
                 ('simhash_ingest', NULL, 'v', false, 'u'),
                 ('simhash_create_index', NULL, 'v', false, 'u'),
                 ('simhash_drop_index', NULL, 'v', false, 'u'),
                 ('simhash_nearest', 4, 's', true, 'r'),
                 ('simhash_nearest', 5, 's', false, 'r'),
                 ('simhash_nearest', 6, 's', false, 'r'),
                 ('_simhash_took', NULL, 'v', true, 's'),
                 ('_simhash_block_marker', NULL, 'i', true, 's'),
                 ('_simhash_routed_args', NULL, 's', true, 's'),
                 ('_simhash_routed_columns', NULL, 's', true, 's'),
                 ('_simhash_routed_view_columns', NULL, 's', true, 's'),
                 ('_simhash_key_equality', NULL, 's', true, 's'),
                 ('_simhash_add_routes', NULL, 'v', true, 'u'),
                 ('_simhash_unique_key', NULL, 's', true, 's'),
                 ('_simhash_routed_layout', NULL, 's', true, 's'),
                 ('_simhash_routed_enter', NULL, 'v', false, 'u'),
                 ('_simhash_routed_leave', NULL, 'v', false, 'u'),
                 ('_simhash_routed_covers', NULL, 's', true, 's'),
                 ('_simhash_routes_name', NULL, 's', true, 's'),
                 ('_simhash_transaction', NULL, 'v', false, 'u'),
                 ('_simhash_routed_set', NULL, 'v', false, 'u'),
                 ('_simhash_routed_set_local', NULL, 'v', false, 'u'),
                 ('_simhash_routed_guard', NULL, 'v', false, 'u'),
                 ('_simhash_routed_insert', NULL, 'v', false, 'u'),
                 ('_simhash_routed_drain', NULL, 'v', false, 'u'),
                 ('_simhash_routed_drain_keys', NULL, 'v', false, 'u'),
                 ('_simhash_routed_key_allowed', NULL, 's', true, 's'),
                 ('_simhash_routed_lookup', NULL, 's', false, 'u'),
                 ('_simhash_create_routed', NULL, 'v', false, 'u'),
                 ('_simhash_drop_routed', NULL, 'v', false, 'u'),
                 ('_simhash_routed_ddl', NULL, 'v', false, 'u'),
                 ('_simhash_routed_view', NULL, 's', true, 's'),
                 ('_simhash_routed_make_view', NULL, 'v', false, 'u'),
                 ('_simhash_insert_columns', NULL, 's', true, 's'),
                 ('_simhash_routed_view_aside', NULL, 'v', false, 'u'),
                 ('_simhash_routed_drop_view', NULL, 'v', false, 'u'),
                 ('_simhash_routed_view_made_again', NULL, 's', true, 's'),
                 ('_simhash_routed_view_restore', NULL, 'v', false, 'u'),
                 ('_simhash_routed_ddl_start', NULL, 'v', false, 'u'),
                 ('_simhash_routed_views_aside', NULL, 'v', true, 'u'))
             SELECT count(*) FROM pg_proc p
               JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
               JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_pg'
               LEFT JOIN expected x ON x.name = p.proname AND coalesce(x.nargs, p.pronargs) = p.pronargs
              WHERE p.pronamespace <> 'tests'::regnamespace -- the #[pg_test] functions
                AND (p.provolatile <> coalesce(x.volatility, 'i')
                 OR p.proisstrict <> coalesce(x.strict, true)
                 OR p.proparallel <> coalesce(x.parallel, 's')
                 OR p.prosecdef
                 OR obj_description(p.oid, 'pg_proc') IS NULL)",
        );
        assert_eq!(bad, Ok(Some(0)));
    }

    #[pg_test]
    fn functions_that_read_texts_cost_more_than_a_distance() {
        // The planner orders a scan's conditions by cost: a distance (cost 1) is tested
        // before a text is read (a Jaccard check), and a feature-set comparison in between.
        let costs = Spi::get_one::<String>(
            "SELECT string_agg(p.oid::regprocedure::text || ' ' || p.procost, ', ' ORDER BY p.oid::regprocedure::text)
               FROM pg_proc p
              WHERE p.proname IN ('simhash', 'simhash_extract', 'simhash_jaccard', 'simhash_containment',
                                  'simhash_feature_set', 'simhash_set', 'hamming_distance')
                AND p.pronamespace = 'public'::regnamespace",
        );
        assert_eq!(
            costs,
            Ok(Some(
                "hamming_distance(simhash64,simhash64) 1, simhash(text) 100, simhash(text,jsonb) 100, \
                 simhash_containment(bigint[],bigint[]) 10, simhash_containment(text,text,jsonb) 100, \
                 simhash_extract(text,jsonb) 100, simhash_feature_set(text,jsonb) 100, \
                 simhash_jaccard(bigint[],bigint[]) 10, simhash_jaccard(text,text,jsonb) 100, \
                 simhash_set(text,integer) 100, simhash_set(text,integer,jsonb) 100"
                    .to_string()
            ))
        );
    }

    /// The objects the planner and `simhash_block_columns` use are the extension's own, found
    /// by signature and pg_depend, with pgvector's `hamming_distance(bit, bit)` beside ours in
    /// the same schema and look-alikes of every one of them (and of the type) ahead on the
    /// search_path: a lookup by bare name fails ("not unique") or takes a look-alike there.
    #[pg_test]
    fn the_extension_finds_its_own_objects_beside_lookalikes() {
        let setup = [
            "CREATE FUNCTION public.hamming_distance(bit, bit) RETURNS float8 LANGUAGE sql IMMUTABLE AS 'SELECT 0::float8'",
            "CREATE SCHEMA look",
            "CREATE TYPE look.simhash64 AS (a int4)",
            "CREATE FUNCTION look.hamming_distance(public.simhash64, public.simhash64) RETURNS int4 LANGUAGE sql AS 'SELECT 0'",
            "CREATE FUNCTION look.simhash_block(public.simhash64, int4, int4) RETURNS int8 LANGUAGE sql AS 'SELECT 0::int8'",
            "CREATE FUNCTION look._simhash_block_ball(public.simhash64, int4, int4, int4) RETURNS int8[] LANGUAGE sql AS 'SELECT NULL::int8[]'",
            "CREATE FUNCTION look._simhash_index_probe(regclass[], public.simhash64, int4) RETURNS tid[] LANGUAGE sql AS 'SELECT NULL::tid[]'",
            "SET search_path = look, public",
        ];
        for statement in setup {
            Spi::run(statement).expect(statement);
        }
        let ours = |signature: &str| {
            Spi::get_one::<pg_sys::Oid>(&format!("SELECT '{signature}'::pg_catalog.regprocedure::pg_catalog.oid"))
                .ok()
                .flatten()
                .expect(signature)
        };
        let near = ours("public.simhash_near(public.simhash64, public.simhash64, int4)");
        // SAFETY: a test runs inside a transaction.
        let found = unsafe { crate::ext_objects::ExtOids::of_member(near) };
        assert_eq!(
            found,
            Some(crate::ext_objects::ExtOids {
                block_fn: ours("public.simhash_block(public.simhash64, int4, int4)"),
                ball_fn: ours("public._simhash_block_ball(public.simhash64, int4, int4, int4)"),
                distance_fn: ours("public.hamming_distance(public.simhash64, public.simhash64)"),
                near_fn: near,
                probe_fn: ours("public._simhash_index_probe(regclass[], public.simhash64, int4)"),
                permute_fn: Some(ours("public._simhash_permute(public.simhash64, int4, int4)")),
                key_fn: Some(ours("public._simhash_block_key(public.simhash64, int8, int4)")),
                sets: Some(crate::ext_objects::SetOids {
                    set_type: Spi::get_one::<pg_sys::Oid>("SELECT 'public.simhash64[]'::pg_catalog.regtype::pg_catalog.oid")
                        .ok()
                        .flatten()
                        .expect("simhash64[]"),
                    set_fns: [ours("public.simhash_set(text, int4)"), ours("public.simhash_set(text, int4, jsonb)")],
                    distance_fn: ours("public.simhash_set_distance(public.simhash64[], public.simhash64[])"),
                    near_fn: ours("public.simhash_near_any(public.simhash64[], public.simhash64[], int4)"),
                    probe_fn: ours("public._simhash_index_probe(regclass[], public.simhash64[], int4, int4)"),
                }),
            })
        );
        // A function that is not the extension's finds nothing: its schema is not trusted.
        let stranger = ours("public.hamming_distance(bit, bit)");
        // SAFETY: as above.
        assert_eq!(unsafe { crate::ext_objects::ExtOids::of_member(stranger) }, None);
        // The type pgrx builds simhash64 Datums with (arrays, SPI arguments) is ours.
        let our_type = Spi::get_one::<pg_sys::Oid>("SELECT 'public.simhash64'::pg_catalog.regtype::pg_catalog.oid");
        assert_eq!(our_type, Ok(Some(<SimHash64 as IntoDatum>::type_oid())));
        // And the planner's rewrite and the block columns work there.
        Spi::run("CREATE TABLE public.lookalike_docs (id int8, fp public.simhash64)").unwrap();
        Spi::run(
            "INSERT INTO public.lookalike_docs
             SELECT g, pg_catalog.hashtextextended(g::text, 0)::public.simhash64 FROM pg_catalog.generate_series(1, 1000) g",
        )
        .unwrap();
        Spi::run("SELECT public.simhash_create_index('public.lookalike_docs', 'fp')").unwrap();
        Spi::run(
            "CREATE FUNCTION public.plan_of(query text) RETURNS text LANGUAGE plpgsql AS $$
             DECLARE line text; plan text := '';
             BEGIN
                 FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP plan := plan || line || E'\\n'; END LOOP;
                 RETURN plan;
             END $$",
        )
        .unwrap();
        let plan = Spi::get_one::<String>(
            "SELECT public.plan_of($$SELECT id FROM public.lookalike_docs
                                   WHERE public.simhash_near(fp, '0123456789abcdef'::public.simhash64, 3)$$)",
        );
        let plan = plan.ok().flatten().unwrap_or_default();
        // Ours are not the visible ones on this search_path, so EXPLAIN names their schema.
        assert!(plan.contains("public._simhash_index_probe("), "{plan}");
        assert!(plan.contains("public.hamming_distance("), "{plan}");
        // `<= k` on our distance is rewritten into the lookup; on the look-alike (a SQL function,
        // which the planner inlines) it is left alone.
        let plan_of = |query: &str| {
            Spi::get_one::<String>(&format!("SELECT public.plan_of($${query}$$)")).ok().flatten().unwrap_or_default()
        };
        let ours_le = plan_of(
            "SELECT id FROM public.lookalike_docs WHERE public.hamming_distance(fp, '0123456789abcdef'::public.simhash64) <= 3",
        );
        assert!(ours_le.contains("public._simhash_index_probe("), "{ours_le}");
        let operator_le = plan_of(
            "SELECT id FROM public.lookalike_docs WHERE fp OPERATOR(public.<->) '0123456789abcdef'::public.simhash64 < 4",
        );
        assert!(operator_le.contains("public._simhash_index_probe("), "{operator_le}");
        let theirs_le =
            plan_of("SELECT id FROM public.lookalike_docs WHERE hamming_distance(fp, '0123456789abcdef'::public.simhash64) <= 3");
        assert!(!theirs_le.contains("_simhash_index_probe"), "{theirs_le}");
        let blocks = Spi::get_one::<i64>("SELECT count(*) FROM public.simhash_block_columns('public.lookalike_docs')");
        assert_eq!(blocks, Ok(Some(4)));
    }
}
