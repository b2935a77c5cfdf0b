#!/usr/bin/env bash
# Gives root a superuser role on the local PostgreSQL (the benchmarks connect as root over the
# socket) and recreates database $1 with simhash_pg in it. Used by the run_*.sh scripts.
set -euo pipefail
db=$1
runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -d postgres -v db="$db" <<'SQL'
SELECT 'CREATE ROLE root SUPERUSER LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'root')
\gexec
DROP DATABASE IF EXISTS :"db" WITH (FORCE);
CREATE DATABASE :"db" OWNER root;
SQL
psql -X -q -d "$db" -c 'CREATE EXTENSION simhash_pg'
