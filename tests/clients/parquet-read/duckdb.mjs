#!/usr/bin/env node
// duckdb.mjs: DuckDB (npm @duckdb/node-api, single-threaded) for
// tests/dataspoc-tap-parquet.bats.
//
//   duckdb.mjs write OUT.parquet 'SELECT ...' ['COPY OPTIONS']
//	COPY (SELECT ...) TO OUT.parquet (FORMAT parquet[, OPTIONS]), e.g.
//	"COMPRESSION snappy, ROW_GROUP_SIZE 100, PARQUET_VERSION V2"
//   duckdb.mjs sql 'SQL'...
//	run each statement; rows of the last as JSON lines
//   duckdb.mjs compare TAP_OUTPUT FILE...
//	the RECORD messages of TAP_OUTPUT against the rows DuckDB reads from
//	FILE... (file after file, in row order): the same columns in the same
//	order and every value equal (see same() below); prints "N rows equal",
//	or the differences and exits 1
//   duckdb.mjs encodings FILE
//	"COLUMN TYPE ENCODINGS CODEC" of each column chunk
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const modules = process.env.PARQUET_DEPS || path.join(here, '..', '..', '..', '.deps', 'node_modules');
const { DuckDBInstance } = createRequire(path.join(modules, 'x.js'))('@duckdb/node-api');
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
const lit = s => "'" + s.replace(/'/g, "''") + "'";
const ident = s => '"' + s.replace(/"/g, '""') + '"';
const rows = async sql => (await con.runAndReadAll(sql)).getRowObjectsJS();
const big = (k, v) => typeof v === 'bigint' ? v.toString() : v;

// JSON text with numbers kept as their text: { num: "12345678901234567891" }.
function parseExact(s) {
	let i = 0;
	const ws = () => { while (/\s/.test(s[i])) i++; };
	function val() {
		ws();
		const c = s[i];
		if (c === '{') {
			const o = {}, keys = [];
			i++; ws();
			if (s[i] === '}') { i++; return { obj: o, keys }; }
			for (;;) {
				ws();
				const k = str();
				ws(); i++; // ':'
				o[k] = val(); keys.push(k);
				ws();
				if (s[i++] === '}') return { obj: o, keys };
			}
		}
		if (c === '[') {
			const a = [];
			i++; ws();
			if (s[i] === ']') { i++; return a; }
			for (;;) { a.push(val()); ws(); if (s[i++] === ']') return a; }
		}
		if (c === '"') return str();
		if (s.startsWith('true', i)) { i += 4; return true; }
		if (s.startsWith('false', i)) { i += 5; return false; }
		if (s.startsWith('null', i)) { i += 4; return null; }
		const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(s.slice(i));
		if (!m) throw new Error(`bad JSON at ${i}: ${s.slice(i, i + 20)}`);
		i += m[0].length;
		return { num: m[0] };
	}
	function str() {
		const m = /^"(?:[^"\\]|\\.)*"/.exec(s.slice(i));
		if (!m) throw new Error(`bad string at ${i}`);
		i += m[0].length;
		return JSON.parse(m[0]);
	}
	return val();
}

// Plain JS value of a parseExact() value (for JSON columns).
function plain(v) {
	if (v === null || typeof v !== 'object') return v;
	if (Array.isArray(v)) return v.map(plain);
	if ('num' in v) return Number(v.num);
	const o = {};
	for (const k of v.keys) o[k] = plain(v.obj[k]);
	return o;
}

// "YYYY-MM-DD[THH:MM:SS[.f]][Z]" or "HH:MM:SS[.f][Z]" -> BigInt units of 10^-digits s.
function epoch(text, digits) {
	const m = /^(?:([+-]?\d{4,})-(\d\d)-(\d\d))?(?:T?(\d\d):(\d\d):(\d\d)(?:\.(\d+))?)?(Z?)$/.exec(text);
	if (!m) return null;
	let days = 0n;
	if (m[1] !== undefined) {
		const d = new Date(0);
		d.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
		days = BigInt(Math.round(d.getTime() / 86400000));
	}
	let secs = days * 86400n;
	if (m[4] !== undefined)
		secs += BigInt(Number(m[4]) * 3600 + Number(m[5]) * 60 + Number(m[6]));
	const f = (m[7] || '').padEnd(digits, '0');
	if (f.length > digits) return null;
	return secs * 10n ** BigInt(digits) + BigInt(f || '0');
}

// The SQL that gives a column's values in the form same() compares.
function expr(c) {
	const q = ident(c.column_name), t = c.column_type;
	if (/INT|^DECIMAL|^UUID|^VARCHAR$/.test(t)) return `CAST(${q} AS VARCHAR)`;
	if (t === 'TIMESTAMP_NS') return `CAST(epoch_ns(${q}) AS VARCHAR)`;
	if (t === 'TIMESTAMP_MS' || t === 'TIMESTAMP_S') return `CAST(epoch_ms(${q}) AS VARCHAR)`;
	if (/^TIMESTAMP/.test(t)) return `CAST(epoch_us(${q}) AS VARCHAR)`;
	if (t === 'DATE') return `strftime(${q}, '%Y-%m-%d')`;
	if (/^TIME/.test(t)) return `CAST(epoch_us(DATE '1970-01-01' + ${q}) AS VARCHAR)`;
	if (t === 'BLOB') return `to_base64(${q})`;
	if (t === 'JSON') return `CAST(${q} AS VARCHAR)`;
	return q;
}

// Is the tap's value v (parseExact) DuckDB's d for a column of type t?
function same(t, v, d) {
	if (d === null || v === null) return d === null && v === null;
	if (/INT|^DECIMAL/.test(t)) return typeof v === 'object' && v.num === d;
	if (t === 'DOUBLE' || t === 'FLOAT') {
		if (typeof v === 'string')
			return (v === 'NaN' && Number.isNaN(d)) || (v === 'Infinity' && d === Infinity) ||
				(v === '-Infinity' && d === -Infinity);
		const x = t === 'FLOAT' ? Math.fround(Number(v.num)) : Number(v.num);
		return Object.is(x, d);
	}
	if (t === 'TIMESTAMP_NS') return epoch(v, 9) === BigInt(d);
	if (t === 'TIMESTAMP_MS' || t === 'TIMESTAMP_S') return epoch(v, 3) === BigInt(d);
	if (/^TIMESTAMP|^TIME/.test(t)) return epoch(v, 6) === BigInt(d);
	if (t === 'JSON') return JSON.stringify(plain(v)) === JSON.stringify(JSON.parse(d));
	return v === d;
}

const show = v => v !== null && typeof v === 'object' && 'num' in v ? v.num : JSON.stringify(plain(v));

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'write') {
	const [out, sql, opts] = args;
	await con.run(`COPY (${sql}) TO ${lit(out)} (FORMAT parquet${opts ? ', ' + opts : ''})`);
} else if (cmd === 'sql') {
	let r = [];
	for (const s of args) r = await rows(s);
	for (const row of r) console.log(JSON.stringify(row, big));
} else if (cmd === 'encodings') {
	for (const r of await rows(`SELECT path_in_schema, type, encodings, compression FROM ` +
		`parquet_metadata(${lit(args[0])}) ORDER BY row_group_id, column_id`))
		console.log(`${r.path_in_schema} ${r.type} ${r.encodings} ${r.compression}`);
} else if (cmd === 'compare') {
	const [tapOut, ...files] = args;
	const recs = readFileSync(tapOut, 'utf8').split('\n').filter(l => l !== '')
		.map(parseExact).filter(m => m.obj.type === 'RECORD').map(m => m.obj.record);
	let n = 0, bad = 0;
	const fail = msg => { if (bad++ < 10) console.log(msg); };
	for (const f of files) {
		const src = `read_parquet(${lit(f)}, hive_partitioning = false, file_row_number = true)`;
		const cols = (await rows(`DESCRIBE SELECT * FROM ${src}`)).filter(c => c.column_name !== 'file_row_number');
		const want = await rows(`SELECT ${cols.map(c => expr(c) + ' AS ' + ident(c.column_name)).join(', ')} ` +
			`FROM ${src} ORDER BY file_row_number`);
		// pipe-sink's last column _extra (JSON) holds the members beyond the
		// schema: the tap gives them back as the record's own members.
		const last = cols[cols.length - 1];
		const extra = last && last.column_type === 'JSON' && /^_+extra$/.test(last.column_name) &&
			(await rows(`SELECT created_by FROM parquet_file_metadata(${lit(f)})`))[0].created_by
				.startsWith('dataspoc-pipe ') ? last.column_name : null;
		for (const w of want) {
			const r = recs[n++];
			if (r === undefined) { fail(`${f}: row ${n}: missing from the tap's output`); continue; }
			const more = extra && w[extra] !== null ? JSON.parse(w[extra]) : {};
			const names = cols.map(c => c.column_name).filter(c => c !== extra).concat(Object.keys(more)).join(',');
			if (r.keys.join(',') !== names) fail(`${f}: row ${n}: columns ${r.keys.join(',')}, DuckDB ${names}`);
			for (const [k, d] of Object.entries(more))
				if (JSON.stringify(plain(r.obj[k])) !== JSON.stringify(d))
					fail(`${f}: row ${n}: ${k} (in ${extra}): tap ${show(r.obj[k])}, DuckDB ${JSON.stringify(d)}`);
			for (const c of cols) {
				if (c.column_name === extra) continue;
				const v = r.obj[c.column_name], d = w[c.column_name];
				if (!same(c.column_type, v === undefined ? null : v, typeof d === 'bigint' ? d.toString() : d))
					fail(`${f}: row ${n}: ${c.column_name} (${c.column_type}): tap ${show(v)}, DuckDB ${JSON.stringify(d, big)}`);
			}
		}
	}
	if (recs.length !== n) fail(`the tap printed ${recs.length} records, DuckDB read ${n}`);
	if (bad) process.exit(1);
	console.log(`${n} rows equal`);
} else {
	console.error('usage: duckdb.mjs write|sql|compare|encodings ...');
	process.exit(2);
}
