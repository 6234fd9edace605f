#!/usr/bin/env node
// lens-rows.mjs [--map FROM=TO] [--tables] [--schema] MANIFEST KEY: a table
// read the way DataSpoc Lens reads it: the manifest's tables[KEY].location
// (FROM=TO rewrites its start, for a local copy of an S3 bucket), mounted as
// read_parquet('<location>/**/*.parquet', hive_partitioning=true,
// union_by_name=true).  Prints its rows, one JSON object per line, sorted by
// every column's text, in the canonical form of duckdb-rows.mjs (BIGINT,
// DECIMAL, JSON -> strings; TIMESTAMP -> microseconds as a string; DATE ->
// days).  --schema: "name TYPE" per column instead.  --tables: the manifest's
// keys and locations, one "KEY LOCATION" a line, sorted, and no KEY.
import { readFileSync } from 'node:fs';
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
let loc = table.location;
if (map && loc.startsWith(map.from))
	loc = map.to + loc.slice(map.from.length);
const { DuckDBInstance } = duckdb();
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
const lit = s => "'" + s.replace(/'/g, "''") + "'";
const ident = s => '"' + s.replace(/"/g, '""') + '"';
const rows = async sql => (await con.runAndReadAll(sql)).getRowObjectsJS();

await con.run(`CREATE VIEW lens AS SELECT * FROM read_parquet(${lit(loc + '/**/*.parquet')}, ` +
	`hive_partitioning = true, union_by_name = true)`);
const cols = (await rows('DESCRIBE SELECT * FROM lens')).filter(c => c.column_name !== 'dt');
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
