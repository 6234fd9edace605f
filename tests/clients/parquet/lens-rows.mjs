#!/usr/bin/env node
// lens-rows.mjs [--map FROM=TO] [--tables] [--schema] MANIFEST KEY: a table
// read the way DataSpoc Lens reads it: the manifest's tables[KEY].location
// (none: raw/<source>/<table>; FROM=TO rewrites its start, for a local copy of an S3 bucket; a location
// with no scheme is, as Lens has it, relative to the bucket: the folder
// above MANIFEST's .dataspoc/), mounted as
// read_parquet('<location>/**/*.parquet', hive_partitioning=true,
// union_by_name=true).  Prints its rows, the Hive folders' columns left out
// (they are the layout's, not the tap's: every column the tap sent shows), one JSON object per line, sorted by
// every column's text, in the canonical form of duckdb-rows.mjs (BIGINT,
// DECIMAL, JSON -> strings; TIMESTAMP -> microseconds as a string; DATE ->
// days).  --schema: "name TYPE" per column instead.  --tables: the manifest's
// keys and locations, one "KEY LOCATION" a line, sorted, and no KEY.
// LENS_HIVE=1 in the environment: the Hive folders' columns are kept (partition_by's tests).
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { duckdb, line } from './deps.mjs';

let args = process.argv.slice(2), map = null, schemaOnly = false, tablesOnly = false;
for (;;) {
	if (args[0] === '--map') {
		const [from, to] = args[1].split('=');
		map = { from, to };
		args = args.slice(2);
	} else if (args[0] === '--schema') {
		schemaOnly = true;
		args = args.slice(1);
	} else if (args[0] === '--tables') {
		tablesOnly = true;
		args = args.slice(1);
	} else {
		break;
	}
}
const manifest = JSON.parse(readFileSync(args[0], 'utf8'));
if (tablesOnly) {
	for (const k of Object.keys(manifest.tables).sort())
		console.log(`${k} ${manifest.tables[k].location}`);
	process.exit(0);
}
const table = manifest.tables[args[1]];
if (!table) {
	console.error(`lens-rows: no table '${args[1]}' in ${args[0]}`);
	process.exit(1);
}
// Lens: no location is <bucket>/raw/<source>/<table> (the Python tool writes none)
let loc = table.location || (table.source && table.table ? `raw/${table.source}/${table.table}` : '');
if (map && loc.startsWith(map.from))
	loc = map.to + loc.slice(map.from.length);
if (!/^(s3|gs|az|file):\/\//.test(loc) && !loc.startsWith('/'))
	loc = 'file://' + path.resolve(path.dirname(args[0]), '..') + '/' + loc;
// The Hive keys of the folders under the table's folder.
const hive = new Set();
const walk = dir => {
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		if (!e.isDirectory())
			continue;
		const m = /^([^=]+)=/.exec(e.name);
		if (m)
			hive.add(m[1]);
		walk(path.join(dir, e.name));
	}
};
if (loc.startsWith('file://'))
	walk(loc.slice(7));
else if (loc.startsWith('/'))
	walk(loc);
const { DuckDBInstance } = duckdb();
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
const lit = s => "'" + s.replace(/'/g, "''") + "'";
const ident = s => '"' + s.replace(/"/g, '""') + '"';
const rows = async sql => (await con.runAndReadAll(sql)).getRowObjectsJS();

await con.run(`CREATE VIEW lens AS SELECT * FROM read_parquet(${lit(loc + '/**/*.parquet')}, ` +
	`hive_partitioning = true, union_by_name = true)`);
if (process.env.LENS_HIVE === '1')
	hive.clear();
const cols = (await rows('DESCRIBE SELECT * FROM lens')).filter(c => !hive.has(c.column_name));
if (schemaOnly) {
	for (const c of cols)
		console.log(`${c.column_name} ${c.column_type}`);
	process.exit(0);
}
const exprs = cols.map(c => {
	const q = ident(c.column_name), t = c.column_type;
	if (t === 'BIGINT' || t === 'HUGEINT' || t.startsWith('DECIMAL') || t === 'JSON')
		return `CAST(${q} AS VARCHAR) AS ${q}`;
	if (t === 'TIMESTAMP WITH TIME ZONE')
		return `CAST(epoch_us(${q}) AS VARCHAR) AS ${q}`;
	if (t === 'DATE')
		return `CAST(${q} - DATE '1970-01-01' AS INTEGER) AS ${q}`;
	return q;
});
const order = cols.map(c => `CAST(${ident(c.column_name)} AS VARCHAR)`).join(', ');
for (const r of await rows(`SELECT ${exprs.join(', ')} FROM lens ORDER BY ${order}`))
	console.log(line(r));
