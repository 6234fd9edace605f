// deps.mjs: the npm packages of the Parquet tests, from .deps/ (scripts/deps),
// or from $PARQUET_DEPS (a node_modules folder).
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
export const modules = process.env.PARQUET_DEPS || path.join(here, '..', '..', '..', '.deps', 'node_modules');

export function duckdb() {
	return createRequire(path.join(modules, 'x.js'))('@duckdb/node-api');
}

export async function hyparquet() {
	const hp = await import(pathToFileURL(path.join(modules, 'hyparquet', 'src', 'node.js')));
	const hc = await import(pathToFileURL(path.join(modules, 'hyparquet-compressors', 'src', 'index.js')));
	return { ...hp, compressors: hc.compressors };
}

// One line of JSON for a row whose values are already canonical.
export function line(row) {
	return JSON.stringify(row);
}
