#!/usr/bin/env node
// gen.mjs ROWS SEED EXPECTED: a Singer stream of ROWS random records of
// stream "r" on stdout (a SCHEMA, the RECORDs, pipe-tap's end line), and in
// the file EXPECTED the rows a Parquet reader must give back, in the
// canonical form of duckdb-rows.mjs.  Values are made here, independently
// of the writer: int64 over its whole range, doubles printed as JavaScript
// prints them (the shortest text that reads back exactly), date-times with
// offsets, dates, strings with escapes and non-ASCII, nested JSON kept as
// text, nulls, and undeclared members (the _extra column).
import { writeFileSync } from 'node:fs';

const [rowsArg, seedArg, expectedFile] = process.argv.slice(2);
const N = Number(rowsArg);
let s = BigInt(seedArg) || 1n;
function rnd() {		// xorshift64*
	s ^= s >> 12n; s ^= (s << 25n) & 0xffffffffffffffffn; s ^= s >> 27n;
	return (s * 2685821657736338717n) & 0xffffffffffffffffn;
}
const r = n => Number(rnd() % BigInt(n));
const frand = () => Number(rnd() >> 11n) / 2 ** 53;
const pick = a => a[r(a.length)];
const pad = (n, w) => String(n).padStart(w, '0');

const schema = {
	type: 'object',
	properties: {
		id: { type: 'integer' },
		i: { type: ['null', 'integer'] },
		x: { type: ['null', 'number'] },
		ok: { type: ['null', 'boolean'] },
		name: { type: ['null', 'string'] },
		at: { type: ['null', 'string'], format: 'date-time' },
		day: { type: ['null', 'string'], format: 'date' },
		doc: { type: ['null', 'object'] },
		tags: { type: ['null', 'array'] },
	},
};
const out = [JSON.stringify({ type: 'SCHEMA', stream: 'r', schema, key_properties: ['id'] })];
const expected = [];
const words = ['a', 'é', 'ü', '日本', '😀', 'tab\t', 'quote"', 'back\\slash', 'nl\n', 'z', ''];

for (let n = 0; n < N; n++) {
	const raw = [], exp = {};
	const nul = () => r(5) === 0;
	const put = (k, text, value) => { raw.push(`${JSON.stringify(k)}:${text}`); exp[k] = value; };

	put('id', String(n + 1), String(n + 1));
	if (nul()) put('i', 'null', null);
	else {
		const v = BigInt.asIntN(64, rnd() >> BigInt(r(64)));
		const v2 = r(20) === 0 ? pick([-(1n << 63n), (1n << 63n) - 1n, 0n, -1n]) : v;
		put('i', v2.toString(), v2.toString());
	}
	if (nul()) put('x', 'null', null);
	else {
		const v = pick([() => (r(2000001) - 1000000) / 1000, () => frand() * 1e300,
			() => -frand() * 1e-300, () => r(1000), () => 0.1 + 0.2]);
		const x = Number(v());
		const text = r(4) === 0 ? x.toExponential() : String(x);
		put('x', text, Number(text));
	}
	if (nul()) put('ok', 'null', null); else { const b = r(2) === 1; put('ok', String(b), b); }
	if (nul()) put('name', 'null', null);
	else {
		const str = Array.from({ length: r(6) }, () => pick(words)).join(' ');
		// Sometimes the non-ASCII as \u escapes, as Python's json.dumps writes them.
		const text = r(2) ? JSON.stringify(str) :
			JSON.stringify(str).replace(/[\u0080-\uffff]/g, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
		put('name', text, str);
	}
	if (nul()) put('at', 'null', null);
	else {
		const us = BigInt(r(4102444800)) * 1000000n + BigInt(r(1000000)) - 2208988800000000n;
		const offMin = pick([0, 60, -300, 330, 545, -720, 840]);
		const local = new Date(Number(us / 1000n - (us % 1000n < 0n ? 1n : 0n)) + offMin * 60000);
		let micro = us % 1000000n; if (micro < 0n) micro += 1000000n;
		const sign = offMin < 0 ? '-' : '+', a = Math.abs(offMin);
		const zone = offMin === 0 && r(2) ? 'Z' : `${sign}${pad(Math.floor(a / 60), 2)}:${pad(a % 60, 2)}`;
		const frac = r(3) === 0 ? '' : '.' + pad(micro, 6);
		const usOut = frac ? us : us - micro;
		const text = `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1, 2)}-${pad(local.getUTCDate(), 2)}T` +
			`${pad(local.getUTCHours(), 2)}:${pad(local.getUTCMinutes(), 2)}:${pad(local.getUTCSeconds(), 2)}${frac}${zone}`;
		put('at', JSON.stringify(text), usOut.toString());
	}
	if (nul()) put('day', 'null', null);
	else {
		const d = r(80000) - 25000, dt = new Date(d * 86400000);
		put('day', JSON.stringify(`${pad(dt.getUTCFullYear(), 4)}-${pad(dt.getUTCMonth() + 1, 2)}-${pad(dt.getUTCDate(), 2)}`), d);
	}
	if (nul()) put('doc', 'null', null);
	else {
		const text = pick(['{}', '{"a": 1, "b": [true, null]}', `{"big":${(1n << 70n) + BigInt(n)},"s":"\\u00e9"}`,
			'{ "spaced" : { "deep" : [ 1 , 2 ] } }']);
		put('doc', text, text);
	}
	if (r(3) === 0) { /* absent: null */ exp.tags = null; }
	else {
		const text = pick(['[]', '[1,2,3]', '["x",{"y":null}]', `[${n}]`]);
		put('tags', text, text);
	}
	let members = [];
	if (r(10) === 0) {
		members = [`"note${n % 3}":"extra é"`, `"n":${n}`].slice(0, 1 + r(2));
		raw.push(...members);
	}
	// Reverse some records' members: matching is by name, not position;
	// the extra column keeps the record's order.
	if (r(7) === 0) {
		raw.reverse();
		members.reverse();
	}
	exp._extra = members.length ? `{${members.join(',')}}` : null;
	out.push(`{"type":"RECORD","stream":"r","record":{${raw.join(',')}}}`);
	const ordered = {};
	for (const k of ['id', 'i', 'x', 'ok', 'name', 'at', 'day', 'doc', 'tags', '_extra'])
		ordered[k] = k in exp ? exp[k] : null;
	expected.push(JSON.stringify(ordered));
}
out.push('{"type":"DATASPOC_TAP_END","status":"success"}');
process.stdout.write(out.join('\n') + '\n');
writeFileSync(expectedFile, expected.join('\n') + (expected.length ? '\n' : ''));
