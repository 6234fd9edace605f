#!/usr/bin/env node
// bench/tap-parquet.mjs: DuckDB's side of bench/tap-parquet.
//   gen DIR ROWS FILES     the lake: FILES zstd Parquet files of ROWS rows in all
//   copy GLOB OUT          time COPY (SELECT * FROM read_parquet(GLOB)) TO OUT
//                          (FORMAT json), one thread; prints the seconds
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.PARQUET_DEPS || path.join(here, '..', '.deps', 'node_modules');
const { DuckDBInstance } = createRequire(path.join(modules, 'x.js'))('@duckdb/node-api');
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
const lit = s => "'" + s.replace(/'/g, "''") + "'";
const [cmd, a, b, c] = process.argv.slice(2);

if (cmd === 'gen') {
	const rows = Number(b), files = Number(c), per = Math.ceil(rows / files);
	for (let f = 0; f < files; f++) {
		const lo = f * per, hi = Math.min(rows, lo + per);
		await con.run(`COPY (SELECT i AS id, 'customer ' || (i % 10007) AS name,
			round((i % 100000) / 7.0, 2)::DOUBLE AS amount,
			TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(i) AS created_at,
			i % 3 = 0 AS active, (i % 1000)::INTEGER AS qty,
			CASE WHEN i % 5 = 0 THEN NULL ELSE md5(i::VARCHAR) END AS note
			FROM range(${lo}, ${hi}) t(i)) TO ${lit(path.join(a, `part-${f}.parquet`))}
			(FORMAT parquet, COMPRESSION zstd)`);
	}
} else if (cmd === 'copy') {
	const t0 = process.hrtime.bigint();
	await con.run(`COPY (SELECT * FROM read_parquet(${lit(a)})) TO ${lit(b)} (FORMAT json)`);
	console.log((Number(process.hrtime.bigint() - t0) / 1e9).toFixed(3));
} else {
	console.error('usage: tap-parquet.mjs gen DIR ROWS FILES | copy GLOB OUT');
	process.exit(2);
}
