#!/usr/bin/env node
// py-parquet.mjs FILE: the JSON lines on stdin (one object each) written
// to FILE as one Parquet file, as the Python DataSpoc Pipe leaves a batch
// (pyarrow, one file per batch of up to 10,000 records).  DuckDB writes it
// here: the tests need its place and its rows, not pyarrow's bytes.
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { duckdb } from './deps.mjs';

const src = path.join(mkdtempSync(path.join(tmpdir(), 'pyparquet-')), 'rows.jsonl');
writeFileSync(src, readFileSync(0));
const lit = s => "'" + s.replace(/'/g, "''") + "'";
const { DuckDBInstance } = duckdb();
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
await con.run(`COPY (SELECT * FROM read_json_auto(${lit(src)}, format = 'newline_delimited')) ` +
	`TO ${lit(process.argv[2])} (FORMAT parquet)`);
