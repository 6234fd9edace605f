#!/usr/bin/env node
// blob.js: a real Azure Blob client (npm @azure/storage-blob) for the
// tests, to make containers and to read back what dataspoc-pipe landed.
//
//   node blob.js mb CONTAINER
//   node blob.js sync CONTAINER DIR        every blob into DIR/<name>
//   node blob.js keys CONTAINER [PREFIX]   one name a line, sorted bytewise
//   node blob.js put CONTAINER NAME        the blob from stdin
//   node blob.js rm CONTAINER NAME
//   node blob.js blocks CONTAINER NAME     the number of committed blocks
//   node blob.js sas CONTAINER             a container SAS (read, add, create, write, delete, list), valid an hour
//   node blob.js account-sas -             an account SAS to list any container, valid a day
//
// The account comes from AZURE_TEST_CONNECTION_STRING (AccountName,
// AccountKey, BlobEndpoint).  Exit 1 with one line on stderr on failure.
'use strict';

const path = require('path');
const fs = require('fs');
const sdk = require(path.join(__dirname, '..', '..', '..', '.deps', 'node_modules', '@azure', 'storage-blob'));

function conn() {
	const s = process.env.AZURE_TEST_CONNECTION_STRING;
	if (!s) throw new Error('AZURE_TEST_CONNECTION_STRING is not set');
	const parts = {};
	for (const seg of s.split(';')) {
		const i = seg.indexOf('=');
		if (i > 0) parts[seg.slice(0, i)] = seg.slice(i + 1);
	}
	return parts;
}

function service() {
	return sdk.BlobServiceClient.fromConnectionString(process.env.AZURE_TEST_CONNECTION_STRING);
}

function readStdin() {
	return new Promise((resolve, reject) => {
		const chunks = [];
		process.stdin.on('data', (c) => chunks.push(c));
		process.stdin.on('end', () => resolve(Buffer.concat(chunks)));
		process.stdin.on('error', reject);
	});
}

async function names(cc, prefix) {
	const out = [];
	for await (const b of cc.listBlobsFlat(prefix ? { prefix } : {}))
		out.push(b.name);
	out.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
	return out;
}

async function main() {
	const [cmd, container, arg] = process.argv.slice(2);
	const cc = service().getContainerClient(container);
	switch (cmd) {
	case 'mb':
		await cc.create();
		break;
	case 'keys':
		for (const n of await names(cc, arg))
			process.stdout.write(n + '\n');
		break;
	case 'sync':
		for (const n of await names(cc, '')) {
			const dst = path.join(arg, n);
			fs.mkdirSync(path.dirname(dst), { recursive: true });
			fs.writeFileSync(dst, await cc.getBlobClient(n).downloadToBuffer());
		}
		break;
	case 'put': {
		const data = await readStdin();
		await cc.getBlockBlobClient(arg).upload(data, data.length);
		break;
	}
	case 'rm':
		await cc.getBlobClient(arg).delete();
		break;
	case 'blocks': {
		const l = await cc.getBlockBlobClient(arg).getBlockList('committed');
		process.stdout.write(String(l.committedBlocks.length) + '\n');
		break;
	}
	case 'sas': {
		const c = conn();
		const cred = new sdk.StorageSharedKeyCredential(c.AccountName, c.AccountKey);
		const sas = sdk.generateBlobSASQueryParameters({
			containerName: container,
			permissions: sdk.ContainerSASPermissions.parse('racwdl'),
			startsOn: new Date(Date.now() - 5 * 60 * 1000),
			expiresOn: new Date(Date.now() + 60 * 60 * 1000),
		}, cred);
		process.stdout.write(sas.toString() + '\n');
		break;
	}
	case 'account-sas': {
		const c = conn();
		const cred = new sdk.StorageSharedKeyCredential(c.AccountName, c.AccountKey);
		const sas = sdk.generateAccountSASQueryParameters({
			services: 'b',
			resourceTypes: 'c',
			permissions: sdk.AccountSASPermissions.parse('l'),
			startsOn: new Date(Date.now() - 5 * 60 * 1000),
			expiresOn: new Date(Date.now() + 24 * 60 * 60 * 1000),
		}, cred);
		process.stdout.write(sas.toString() + '\n');
		break;
	}
	default:
		throw new Error('unknown command ' + cmd);
	}
}

main().catch((e) => {
	process.stderr.write('blob.js: ' + (e.code || '') + ' ' + String(e.message).split('\n')[0] + '\n');
	process.exit(1);
});
