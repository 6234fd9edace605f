#!/usr/bin/env node
// hyparquet-rows.mjs [--schema] FILE...: the same as duckdb-rows.mjs, read by
// hyparquet (pure JavaScript, with hyparquet-compressors for ZSTD and GZIP).
// DECIMAL columns are read as their raw bytes and decoded here (hyparquet
// would make them doubles).  --schema prints "name PHYSICAL CONVERTED" lines
// and "row_groups N rows R,...".
import { hyparquet, line } from './deps.mjs';

const args = process.argv.slice(2);
const schemaOnly = args[0] === '--schema';
const files = schemaOnly ? args.slice(1) : args;
const { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, compressors } = await hyparquet();
const text = new TextDecoder('utf-8', { fatal: true });

function decimal(bytes, scale) {
	let v = 0n;
	for (const b of bytes)
		v = v * 256n + BigInt(b);
	if (bytes.length && bytes[0] & 0x80)
		v -= 1n << BigInt(bytes.length * 8);
	if (!scale)
		return v.toString();
	// DECIMAL(p,s), s > 0: the digits with the point s places from the right, as DuckDB prints it
	const neg = v < 0n, d = (neg ? -v : v).toString().padStart(scale + 1, '0');
	return (neg ? '-' : '') + d.slice(0, -scale) + '.' + d.slice(-scale);
}

for (const f of files) {
	const file = await asyncBufferFromFile(f);
	const metadata = await parquetMetadataAsync(file);
	const cols = metadata.schema.slice(1);
	if (schemaOnly) {
		for (const c of cols) {
			let conv = c.converted_type || '';
			if (conv === 'DECIMAL')
				conv += `(${c.precision},${c.scale})`;
			const type = c.type + (c.type_length ? `(${c.type_length})` : '');
			console.log([c.name, type, conv, c.repetition_type].filter(Boolean).join(' '));
		}
		console.log(`row_groups ${metadata.row_groups.length} rows ` +
			metadata.row_groups.map(g => String(g.num_rows)).join(','));
		continue;
	}
	const decimals = new Map();
	for (const c of cols) {
		if (c.converted_type === 'DECIMAL') {
			decimals.set(c.name, c.scale || 0);
			delete c.converted_type;
			delete c.logical_type;
		}
	}
	const rows = await parquetReadObjects({
		file, metadata, compressors,
		parsers: {
			timestampFromMicroseconds: us => us.toString(),
			dateFromDays: d => d,
			jsonFromBytes: b => b && text.decode(b),
			stringFromBytes: b => b && text.decode(b),
		},
	});
	for (const r of rows) {
		const o = {};
		for (const c of cols) {
			let v = r[c.name];
			if (v === undefined)
				v = null;
			else if (decimals.has(c.name) && v !== null)
				v = decimal(v, decimals.get(c.name));
			else if (typeof v === 'bigint')
				v = v.toString();
			o[c.name] = v;
		}
		console.log(line(o));
	}
}
