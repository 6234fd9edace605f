#!/usr/bin/env node
// bench/duckdb-convert.mjs: the DuckDB reference of bench/run (issue #10).
//
//   node bench/duckdb-convert.mjs extract STREAM.jsonl DIR
//	Once, not timed: each stream's RECORD values, byte for byte, one per
//	line, into DIR/<n>.records.jsonl, and the stream's columns, from its
//	SCHEMA message, into DIR/<n>.columns.json ({"name":"DUCKDB TYPE",...});
//	DIR/streams lists them.  Types: integer BIGINT (HUGEINT when a value is
//	beyond int64, as pipe-sink widens such a column to DECIMAL(38,0)),
//	number DOUBLE, boolean BOOLEAN, string VARCHAR (format date-time
//	TIMESTAMPTZ, date DATE), object, array and anything else JSON.
//   node bench/duckdb-convert.mjs convert [-t THREADS] DIR OUTDIR
//	The timed part: for each stream, COPY (SELECT * FROM read_json(records,
//	columns={...})) TO 'OUTDIR/<n>.parquet' (FORMAT PARQUET), on one
//	connection; DuckDB's default threads unless -t.
//   node bench/duckdb-convert.mjs count DIR...
//	Rows of the *.parquet files under each DIR (recursively), one line.
//
// @duckdb/node-api comes from .deps/node_modules (scripts/deps), or from
// $PARQUET_DEPS, as scripts/lake finds it.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const die = (msg) => {
	process.stderr.write(`duckdb-convert: ${msg}\n`);
	process.exit(1);
};

function duckdb() {
	const here = path.dirname(fileURLToPath(import.meta.url));
	const modules = process.env.PARQUET_DEPS || path.join(here, '..', '.deps', 'node_modules');
	try {
		return createRequire(path.join(modules, 'x.js'))('@duckdb/node-api');
	} catch (e) {
		die(`cannot load @duckdb/node-api from ${modules} (run scripts/deps): ${e.message}`);
	}
}

const lit = (s) => "'" + String(s).replace(/'/g, "''") + "'";

// The end of the JSON value starting at s[i] (an object), skipping strings.
function valueEnd(s, i) {
	let depth = 0;
	for (; i < s.length; i++) {
		const c = s.charCodeAt(i);
		if (c === 34) { // "
			for (i++; s.charCodeAt(i) !== 34; i++)
				if (s.charCodeAt(i) === 92)
					i++;
		} else if (c === 123 || c === 91) {
			depth++;
		} else if (c === 125 || c === 93) {
			if (--depth === 0)
				return i + 1;
		}
	}
	die('a RECORD value does not end');
}

function duckType(p) {
	let t = p && p.type;
	if (!Array.isArray(t))
		t = t === undefined ? [] : [t];
	t = t.filter((x) => x !== 'null');
	if (t.length !== 1)
		return 'JSON';
	switch (t[0]) {
	case 'integer': return 'BIGINT';
	case 'number': return 'DOUBLE';
	case 'boolean': return 'BOOLEAN';
	case 'string':
		return p.format === 'date-time' ? 'TIMESTAMPTZ' : p.format === 'date' ? 'DATE' : 'VARCHAR';
	default: return 'JSON';
	}
}

async function extract(file, dir) {
	fs.mkdirSync(dir, { recursive: true });
	const streams = new Map(); // name -> { n, out, columns, big: Set }
	const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
	const key = '"record":';
	for await (const line of rl) {
		if (line.startsWith('{"type":"SCHEMA"')) {
			const m = JSON.parse(line);
			if (streams.has(m.stream))
				continue;
			const n = streams.size;
			const columns = {};
			for (const [k, v] of Object.entries(m.schema.properties || {}))
				columns[k] = duckType(v);
			const out = fs.createWriteStream(path.join(dir, `${n}.records.jsonl`));
			streams.set(m.stream, { n, out, columns, big: new Set() });
		} else if (line.startsWith('{"type":"RECORD"')) {
			const s = streams.get(JSON.parse(line.slice(0, line.indexOf(',"record":')) + '}').stream);
			if (!s)
				die('a RECORD before its stream\'s SCHEMA');
			const at = line.indexOf(key) + key.length;
			const rec = line.slice(at, valueEnd(line, at));
			// Integers beyond int64 (a double at or past 2^63 is one, or next to one).
			const v = JSON.parse(rec);
			for (const [k, t] of Object.entries(s.columns))
				if (t === 'BIGINT' && typeof v[k] === 'number' && Math.abs(v[k]) >= 2 ** 63)
					s.big.add(k);
			if (!s.out.write(rec + '\n'))
				await new Promise((r) => s.out.once('drain', r));
		}
	}
	const list = [];
	for (const [name, s] of streams) {
		for (const k of s.big)
			s.columns[k] = 'HUGEINT';
		await new Promise((r) => s.out.end(r));
		fs.writeFileSync(path.join(dir, `${s.n}.columns.json`), JSON.stringify(s.columns) + '\n');
		list.push(`${s.n}\t${name}`);
	}
	fs.writeFileSync(path.join(dir, 'streams'), list.join('\n') + '\n');
}

async function convert(threads, dir, outdir) {
	const D = duckdb();
	const db = await D.DuckDBInstance.create(':memory:', threads ? { threads: String(threads) } : {});
	const con = await db.connect();
	fs.mkdirSync(outdir, { recursive: true });
	const streams = fs.readFileSync(path.join(dir, 'streams'), 'utf8').split('\n').filter(Boolean);
	for (const line of streams) {
		const n = line.split('\t')[0];
		const cols = JSON.parse(fs.readFileSync(path.join(dir, `${n}.columns.json`), 'utf8'));
		const spec = '{' + Object.entries(cols).map(([k, t]) => `${lit(k)}: ${lit(t)}`).join(', ') + '}';
		await con.run(`COPY (SELECT * FROM read_json(${lit(path.join(dir, `${n}.records.jsonl`))}, ` +
			`columns=${spec})) TO ${lit(path.join(outdir, `${n}.parquet`))} (FORMAT PARQUET)`);
	}
	con.closeSync();
}

async function count(dirs) {
	const D = duckdb();
	const db = await D.DuckDBInstance.create(':memory:');
	const con = await db.connect();
	let total = 0n;
	for (const d of dirs) {
		const r = await con.runAndReadAll(`SELECT count(*) FROM read_parquet(${lit(d + '/**/*.parquet')}, union_by_name=true)`);
		total += BigInt(r.getRows()[0][0]);
	}
	process.stdout.write(`${total}\n`);
}

const argv = process.argv.slice(2);
try {
	if (argv[0] === 'extract' && argv.length === 3) {
		await extract(argv[1], argv[2]);
	} else if (argv[0] === 'convert') {
		let threads = 0, a = argv.slice(1);
		if (a[0] === '-t') {
			threads = Number(a[1]);
			if (!(threads >= 1))
				die(`-t wants a number of threads, not '${a[1]}'`);
			a = a.slice(2);
		}
		if (a.length !== 2)
			die('usage: duckdb-convert.mjs convert [-t THREADS] DIR OUTDIR');
		await convert(threads, a[0], a[1]);
	} else if (argv[0] === 'count' && argv.length > 1) {
		await count(argv.slice(1));
	} else {
		die('usage: duckdb-convert.mjs extract STREAM.jsonl DIR | convert [-t THREADS] DIR OUTDIR | count DIR...');
	}
} catch (e) {
	die(e.message.split('\n')[0]);
}
