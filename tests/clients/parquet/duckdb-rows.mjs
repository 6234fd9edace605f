#!/usr/bin/env node
// duckdb-rows.mjs [--schema] FILE...: the rows of Parquet files, read by
// DuckDB, one JSON object per line in file and row order, values in the
// canonical form of tests/parquet.bats:
//   INT64, DECIMAL -> "digits" (a string: exact)   DOUBLE -> a number
//   BOOLEAN -> true/false   STRING -> the string   JSON -> its text
//   TIMESTAMP -> "microseconds since the epoch"    DATE -> days since the epoch
//   null -> null
// --schema: instead, one line per column: "name TYPE" as DuckDB maps it,
// then "row_groups N rows R,R,...".  --encodings: "ROW_GROUP COLUMN ENCODINGS" lines.
import { duckdb, line } from './deps.mjs';

const args = process.argv.slice(2);
const schemaOnly = args[0] === '--schema', encodings = args[0] === '--encodings';
const files = schemaOnly || encodings ? args.slice(1) : args;
const { DuckDBInstance } = duckdb();
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
const lit = s => "'" + s.replace(/'/g, "''") + "'";
const ident = s => '"' + s.replace(/"/g, '""') + '"';

async function rows(sql) {
	return (await con.runAndReadAll(sql)).getRowObjectsJS();
}

for (const f of files) {
	if (encodings) {
		const e = await rows(`SELECT row_group_id, path_in_schema, encodings FROM parquet_metadata(${lit(f)}) ` +
			`ORDER BY row_group_id, column_id`);
		for (const r of e)
			console.log(`${r.row_group_id} ${r.path_in_schema} ${r.encodings}`);
		continue;
	}
	const src = `read_parquet(${lit(f)}, hive_partitioning = false, file_row_number = true)`;
	const cols = (await rows(`DESCRIBE SELECT * FROM ${src}`))
		.filter(c => c.column_name !== 'file_row_number');
	if (schemaOnly) {
		for (const c of cols)
			console.log(`${c.column_name} ${c.column_type}`);
		const rg = await rows(`SELECT row_group_id, any_value(row_group_num_rows) AS n FROM ` +
			`parquet_metadata(${lit(f)}) GROUP BY row_group_id ORDER BY row_group_id`);
		console.log(`row_groups ${rg.length} rows ${rg.map(r => String(r.n)).join(',')}`);
		continue;
	}
	const exprs = cols.map(c => {
		const q = ident(c.column_name), t = c.column_type;
		if (t === 'BIGINT' || t.startsWith('DECIMAL') || t === 'JSON')
			return `CAST(${q} AS VARCHAR) AS ${q}`;
		if (t === 'TIMESTAMP WITH TIME ZONE')
			return `CAST(epoch_us(${q}) AS VARCHAR) AS ${q}`;
		if (t === 'DATE')
			return `CAST(${q} - DATE '1970-01-01' AS INTEGER) AS ${q}`;
		return q;
	});
	const out = await rows(`SELECT ${exprs.join(', ')} FROM ${src} ORDER BY file_row_number`);
	for (const r of out)
		console.log(line(r));
}
