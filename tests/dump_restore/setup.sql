-- A database with every kind of simhash_pg object a user makes: simhash64 columns, a generated
-- fingerprint with block expression indexes, block columns (covering and plain), hand-made
-- block columns and indexes, a partitioned table, a view, and a column default.
CREATE EXTENSION simhash_pg;
CREATE TABLE docs (id int8 PRIMARY KEY, body text NOT NULL,
                   fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO docs (id, body)
SELECT g, 'report ' || (g % 900) || ' from bureau ' || (g % 17) || ' day ' || (g % 6)
  FROM generate_series(1, 5000) g;
SELECT simhash_create_index('docs', 'fp');
CREATE TABLE fps (id int8 PRIMARY KEY, fp simhash64 DEFAULT '0000000000000000');
INSERT INTO fps SELECT id, fp FROM docs;
SELECT simhash_create_index('fps', 'fp', 7, 8);
CREATE TABLE fps_plain (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO fps_plain SELECT id, fp FROM docs;
SELECT simhash_create_index('fps_plain', 'fp', 3, 4, covering => false);
CREATE TABLE hand (id int8, doc simhash64,
                   b0 int8 GENERATED ALWAYS AS (simhash_block(doc, 0, 4)) STORED,
                   b1 int8 GENERATED ALWAYS AS (simhash_block(doc, 1, 4)) STORED,
                   b2 int8 GENERATED ALWAYS AS (simhash_block(doc, 2, 4)) STORED,
                   b3 int8 GENERATED ALWAYS AS (simhash_block(doc, 3, 4)) STORED);
CREATE INDEX ON hand (b0) INCLUDE (doc);
CREATE INDEX ON hand (b1) INCLUDE (doc);
CREATE INDEX ON hand (b2) INCLUDE (doc);
CREATE INDEX ON hand (b3) INCLUDE (doc);
INSERT INTO hand (id, doc) SELECT id, fp FROM docs;
CREATE TABLE parted (id int8, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (0) TO (2500);
CREATE TABLE parted_high PARTITION OF parted FOR VALUES FROM (2500) TO (10000);
INSERT INTO parted SELECT id, fp FROM docs;
SELECT simhash_create_index('parted', 'fp');
CREATE VIEW near_pairs AS
SELECT a.id AS a, b.id AS b FROM fps a JOIN fps b ON simhash_near(a.fp, b.fp, 3) AND a.id < b.id;
CREATE INDEX fps_fp_hash ON fps USING hash (fp);
-- A guarded table (simhash_guard): its triggers name no OID, so they hold in the restored copy.
CREATE TABLE guarded (id int8, fp simhash64);
INSERT INTO guarded VALUES (1, '0000000000000000'), (2, '00000000ffffffff');
SELECT simhash_guard('guarded', 'fp', 2);
SELECT simhash_guard('parted', 'fp', 0, on_conflict => 'skip');
