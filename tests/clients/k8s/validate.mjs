// validate.mjs: check each YAML document of a file (or stdin) against the
// Kubernetes API's schema of its apiVersion and kind, as kubernetes-models
// publishes it; print "KIND NAME ok" a document, or the errors and exit 1.
// Usage: node validate.mjs [FILE]
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const modules = process.env.EXPORT_DEPS || path.join(here, '..', '..', '..', '.deps', 'node_modules');
const require = createRequire(path.join(modules, 'x.js'));
const YAML = require('yaml');

const text = fs.readFileSync(process.argv[2] || 0, 'utf8');
let bad = 0, n = 0;
for (const doc of YAML.parseAllDocuments(text)) {
	if (doc.errors.length) {
		console.log(`yaml: ${doc.errors[0].message}`);
		bad = 1;
		continue;
	}
	const obj = doc.toJS();
	if (obj == null)
		continue;
	n++;
	const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
	const dir = group === '' ? version : `${group}/${version}`;
	let Model;
	try {
		Model = require(`kubernetes-models/${dir}/${obj.kind}`)[obj.kind];
	} catch (e) {
		console.log(`${obj.apiVersion} ${obj.kind}: no such kind`);
		bad = 1;
		continue;
	}
	try {
		new Model(obj).validate();
		console.log(`${obj.kind} ${obj.metadata.name} ok`);
	} catch (e) {
		console.log(`${obj.kind} ${obj.metadata && obj.metadata.name}: ${e.message}`);
		bad = 1;
	}
}
if (n === 0) {
	console.log('no documents');
	bad = 1;
}
process.exit(bad);
