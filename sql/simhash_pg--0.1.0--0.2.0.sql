-- simhash_pg 0.1.0 -> 0.2.0, run by ALTER EXTENSION simhash_pg UPDATE.
-- Each change to the SQL surface since 0.1.0 goes here as well as in the install script;
-- tests/pg_regress/sql/upgrade.sql checks that an updated database has exactly the objects,
-- definitions and comments of a fresh install.
\echo Use "ALTER EXTENSION simhash_pg UPDATE" to load this file. \quit
