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
            "WITH expected(name, volatility, strict, parallel) AS (VALUES
                 ('simhash_block_columns', 's', true, 's'),
                 ('simhash_index_probe', 's', true, 's'),
                 ('simhash_check_indexable', 's', false, 's'),
                 ('simhash_check_column', 's', false, 's'),
                 ('simhash_check_pairable', 's', false, 's'),
                 ('simhash_pairs', 's', false, 'r'),
                 ('simhash_clusters', 's', false, 'r'),
                 ('simhash_ingest', 'v', false, 'u'),
                 ('simhash_create_index', 'v', false, 'u'),
                 ('simhash_drop_index', 'v', false, 'u'),
                 ('simhash_nearest', 's', true, 'r'),
                 ('simhash_took', 'v', true, 's'))
             SELECT count(*) FROM pg_proc p
               JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
               JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_pg'
               LEFT JOIN expected x ON x.name = p.proname
              WHERE p.pronamespace <> 'tests'::regnamespace -- the #[pg_test] functions
                AND (p.provolatile <> coalesce(x.volatility, 'i')
                 OR p.proisstrict <> coalesce(x.strict, true)
                 OR p.proparallel <> coalesce(x.parallel, 's')
                 OR p.prosecdef
                 OR obj_description(p.oid, 'pg_proc') IS NULL)",
        );
        assert_eq!(bad, Ok(Some(0)));
    }
}
