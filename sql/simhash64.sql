-- Everything the planner needs to use the simhash64 type (created in src/simhash64.rs):
-- operators, opclasses, casts, and a COMMENT on every object. pgrx declares the C functions from
-- src/*.rs; this script ties them together, pgvector-style, in one place.

-- Comparison, in unsigned order (the order of the hex text).
CREATE OPERATOR = (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);

CREATE OPERATOR CLASS simhash64_ops
    DEFAULT FOR TYPE simhash64 USING btree AS
        OPERATOR 1 <,
        OPERATOR 2 <=,
        OPERATOR 3 =,
        OPERATOR 4 >=,
        OPERATOR 5 >,
        FUNCTION 1 simhash64_cmp(simhash64, simhash64);
-- No FUNCTION 4 (equalimage): B-tree indexes with a simhash64 key never deduplicate, so the
-- two-key set indexes ((simhash_block(fps[e], i, m)), (fps[e])) hold no posting lists, which
-- the leaf-page probe (src/leaf_scan.rs) does not read. Adding one would need the probe to.

CREATE OPERATOR CLASS simhash64_hash_ops
    DEFAULT FOR TYPE simhash64 USING hash AS
        OPERATOR 1 =,
        FUNCTION 1 simhash64_hash(simhash64),
        FUNCTION 2 simhash64_hash_extended(simhash64, int8);

-- Distance.
CREATE OPERATOR <-> (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = hamming_distance, COMMUTATOR = <->
);
-- Between sets (simhash_set): the smallest same-position distance.
CREATE OPERATOR <-> (
    LEFTARG = simhash64[], RIGHTARG = simhash64[], FUNCTION = simhash_set_distance, COMMUTATOR = <->
);

-- Casts that keep every bit. simhash64 and int8 share one Datum representation, so that cast
-- needs no function; all casts are explicit so that no operator call becomes ambiguous.
CREATE CAST (simhash64 AS int8) WITHOUT FUNCTION;
CREATE CAST (int8 AS simhash64) WITHOUT FUNCTION;
CREATE CAST (simhash64 AS bytea) WITH FUNCTION simhash64_to_bytea(simhash64);
CREATE CAST (bytea AS simhash64) WITH FUNCTION simhash64_from_bytea(bytea);
CREATE CAST (simhash64 AS bit) WITH FUNCTION simhash64_to_bit(simhash64);
CREATE CAST (bit AS simhash64) WITH FUNCTION simhash64_from_bit(bit);

COMMENT ON OPERATOR <->(simhash64, simhash64) IS 'Hamming distance: number of differing bits (0..64)';
COMMENT ON OPERATOR =(simhash64, simhash64) IS 'equal fingerprints';
COMMENT ON OPERATOR <>(simhash64, simhash64) IS 'different fingerprints';
COMMENT ON OPERATOR <(simhash64, simhash64) IS 'less than, in unsigned order';
COMMENT ON OPERATOR <=(simhash64, simhash64) IS 'less than or equal, in unsigned order';
COMMENT ON OPERATOR >(simhash64, simhash64) IS 'greater than, in unsigned order';
COMMENT ON OPERATOR >=(simhash64, simhash64) IS 'greater than or equal, in unsigned order';

COMMENT ON FUNCTION simhash64_in(cstring) IS 'simhash64 text input: 16 hex digits, optional 0x prefix';
COMMENT ON FUNCTION simhash64_out(simhash64) IS 'simhash64 text output: 16 lowercase hex digits';
COMMENT ON FUNCTION simhash64_recv(internal) IS 'simhash64 binary input: 8 bytes, network order';
COMMENT ON FUNCTION simhash64_send(simhash64) IS 'simhash64 binary output: 8 bytes, network order';
COMMENT ON FUNCTION simhash64_eq(simhash64, simhash64) IS 'implementation of = for simhash64';
COMMENT ON FUNCTION simhash64_ne(simhash64, simhash64) IS 'implementation of <> for simhash64';
COMMENT ON FUNCTION simhash64_lt(simhash64, simhash64) IS 'implementation of < for simhash64 (unsigned order)';
COMMENT ON FUNCTION simhash64_le(simhash64, simhash64) IS 'implementation of <= for simhash64 (unsigned order)';
COMMENT ON FUNCTION simhash64_gt(simhash64, simhash64) IS 'implementation of > for simhash64 (unsigned order)';
COMMENT ON FUNCTION simhash64_ge(simhash64, simhash64) IS 'implementation of >= for simhash64 (unsigned order)';
COMMENT ON FUNCTION simhash64_cmp(simhash64, simhash64) IS 'B-tree comparison for simhash64: -1, 0 or 1 in unsigned order';
COMMENT ON FUNCTION simhash64_hash(simhash64) IS 'hash opclass support: 32-bit hash of a simhash64';
COMMENT ON FUNCTION simhash64_hash_extended(simhash64, int8) IS 'hash opclass support: seeded 64-bit hash of a simhash64';
COMMENT ON FUNCTION simhash64_to_bytea(simhash64) IS 'cast simhash64 to its 8 bytes, network order';
COMMENT ON FUNCTION simhash64_from_bytea(bytea) IS 'cast exactly 8 bytes (network order) to simhash64';
COMMENT ON FUNCTION simhash64_to_bit(simhash64) IS 'cast simhash64 to bit(64), most significant bit first';
COMMENT ON FUNCTION simhash64_from_bit(bit) IS 'cast exactly 64 bits (most significant first) to simhash64';
COMMENT ON FUNCTION hamming_distance(simhash64, simhash64) IS 'Hamming distance: number of differing bits (0..64); same as <->';
COMMENT ON FUNCTION simhash_near(simhash64, simhash64, int4) IS 'true when the fingerprints differ in at most k bits (k in 0..64)';
COMMENT ON FUNCTION simhash_similarity(simhash64, simhash64) IS 'fraction of equal bits: 1 - distance/64';
COMMENT ON FUNCTION simhash_cosine(simhash64, simhash64) IS 'Charikar''s cosine estimate of the underlying feature vectors: cos(pi * distance/64)';
COMMENT ON FUNCTION simhash_block(simhash64, int4, int4) IS 'unsigned value of block i of m contiguous blocks, most significant first, wider blocks first';
COMMENT ON FUNCTION simhash(text) IS 'SimHash fingerprint of a text with the default pipeline (version 1: NFKC, case folding, jieba/UAX #29 words, TF-IDF weights, xxh3-64)';
COMMENT ON FUNCTION simhash(text, jsonb) IS 'SimHash fingerprint of a text with options: tokenizer, ngram, weighting, top_k, case_fold, seed, markup, version';
COMMENT ON FUNCTION simhash_jaccard(text, text, jsonb) IS 'Jaccard similarity of the distinct features of two texts as simhash(text, options) reads them (word 3-shingles with {"ngram": 3}): the exact check of a near pair';
COMMENT ON FUNCTION simhash_containment(text, text, jsonb) IS 'share of the distinct features of the first text that the second has, as simhash(text, options) reads them: a text quoted whole in a longer one scores 1';
COMMENT ON FUNCTION simhash_feature_set(text, jsonb) IS 'the distinct features of a text as their 64-bit hashes, sorted: what simhash_jaccard compares, to compute once per row';
COMMENT ON FUNCTION simhash_jaccard(int8[], int8[]) IS 'Jaccard similarity of two feature sets (simhash_feature_set)';
COMMENT ON FUNCTION simhash_containment(int8[], int8[]) IS 'share of the first feature set (simhash_feature_set) that the second holds';
COMMENT ON FUNCTION simhash_extract(text, jsonb) IS 'the text simhash(body, options) reads before normalising: body itself, or with {"markup": "html"} the visible text of the page';
COMMENT ON FUNCTION simhash_weighted(text[], float8[]) IS 'SimHash fingerprint of caller-supplied features and weights (xxh3-64 of each feature, sums in array order)';
COMMENT ON FUNCTION simhash_features(text) IS 'the features, weights and hashes that simhash(text) adds up, in order of first occurrence';
COMMENT ON FUNCTION simhash_features(text, jsonb) IS 'the features, weights and hashes that simhash(text, options) adds up, in order of first occurrence';
COMMENT ON FUNCTION _simhash_block_ball(simhash64, int4, int4, int4) IS 'internal: every value within r bits of block i of m, the block''s own value first: the probes of a block index when k >= m';
COMMENT ON FUNCTION _simhash_near_support(internal) IS 'internal: planner support for simhash_near: rewrites it into conditions on indexed block columns';
COMMENT ON FUNCTION _simhash_distance_support(internal) IS 'internal: planner support for hamming_distance and simhash_set_distance: offers nothing, but loads the library in time for the planner to rewrite <-> comparisons (fp <-> q <= k) into simhash_near';
COMMENT ON FUNCTION simhash_block_columns(regclass) IS 'the block layouts of a table as the planner sees them: source column, block i of m, the B-tree index used (NULL: none), whether it covers the fingerprint, the element of a set column, and whether the index is a permuted one (_simhash_permute)';
COMMENT ON FUNCTION _simhash_permute(simhash64, int4, int4) IS 'internal: the fingerprint rotated left so that block i of m leads, as int8: the key of a permuted block index, which serves the block as a key range and holds the whole fingerprint';

COMMENT ON FUNCTION simhash_set(text, int4) IS 'b SimHash fingerprints of a text (default pipeline), seeds 0 .. b-1: element 1 is simhash(body); near when any same-position pair is within k (simhash_near_any)';
COMMENT ON FUNCTION simhash_set(text, int4, jsonb) IS 'b SimHash fingerprints of a text with options, seeds seed .. seed+b-1: element 1 is simhash(body, options)';
COMMENT ON FUNCTION simhash_set_distance(simhash64[], simhash64[]) IS 'smallest distance between same-position fingerprints of two sets (up to the shorter), NULL when no position has both; also <->';
COMMENT ON FUNCTION simhash_near_any(simhash64[], simhash64[], int4) IS 'true when some same-position pair of the two sets is within k bits; uses the block indexes of every element of a set column generated by simhash_set';
