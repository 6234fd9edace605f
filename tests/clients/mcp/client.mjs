// client.mjs: drive pipe-mcp with the official MCP SDK client (Client over
// StdioClientTransport), for tests/mcp.bats.
//
//   node client.mjs STEP...
//
// starts $PIPE_MCP (default: pipe-mcp on PATH) with the words of
// $PIPE_MCP_ARGS, with this environment, connects (initialize, then
// notifications/initialized), runs each STEP, a JSON object, and prints one
// JSON line per step.  The server's stderr is appended to $PIPE_MCP_STDERR
// when it is set (else dropped).
//
//   {"info": true}                     serverVersion, capabilities, instructions
//   {"tools": true}                    tools/list's result
//   {"resources": true}                resources/list's result
//   {"read": URI}                      resources/read's result
//   {"call": TOOL, "args": {...}}      tools/call's result; with "progress":
//                                      true, {"result", "progress": [...]}
//   {"cancel": TOOL, "args": {...}, "when": FILE}
//                                      call TOOL, and once FILE exists cancel
//                                      the request (notifications/cancelled)
//   {"until": TOOL, "args": {...}, "field": F, "is": V}
//                                      call TOOL until its structuredContent's
//                                      F is V (bounded by $WAIT_LIMIT seconds)
//
// A request that fails prints {"error": {"code", "message"}}.
import { appendFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const top = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const require = createRequire(join(process.env.MCP_SDK_DEPS || join(top, '.deps'), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const limit = Number(process.env.WAIT_LIMIT || 120) * 1000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const failure = (e) => ({ error: { code: e.code ?? null, message: String(e.message ?? e) } });

async function step(client, s) {
	if (s.info) {
		return {
			serverVersion: client.getServerVersion(),
			capabilities: client.getServerCapabilities(),
			instructions: client.getInstructions(),
		};
	}
	if (s.tools) return await client.listTools();
	if (s.resources) return await client.listResources();
	if (s.read) return await client.readResource({ uri: s.read });
	if (s.call) {
		const progress = [];
		const options = { timeout: limit };
		if (s.progress) options.onprogress = (p) => progress.push(p);
		const result = await client.callTool({ name: s.call, arguments: s.args ?? {} }, undefined, options);
		return s.progress ? { result, progress } : result;
	}
	if (s.cancel) {
		const abort = new AbortController();
		const call = client.callTool({ name: s.cancel, arguments: s.args ?? {} }, undefined,
			{ signal: abort.signal, timeout: limit });
		const start = Date.now();
		while (!existsSync(s.when)) {
			if (Date.now() - start > limit) throw new Error(`gave up waiting for ${s.when}`);
			await sleep(50);
		}
		abort.abort('the test cancels it');
		try {
			return { cancelled: false, result: await call };
		} catch (e) {
			return { cancelled: true, ...failure(e) };
		}
	}
	if (s.until) {
		const start = Date.now();
		for (;;) {
			const result = await client.callTool({ name: s.until, arguments: s.args ?? {} });
			if (result.structuredContent && result.structuredContent[s.field] === s.is) return result;
			if (Date.now() - start > limit) return { gaveUp: true, last: result };
			await sleep(100);
		}
	}
	throw new Error(`unknown step ${JSON.stringify(s)}`);
}

const transport = new StdioClientTransport({
	command: process.env.PIPE_MCP || 'pipe-mcp',
	args: (process.env.PIPE_MCP_ARGS || '').split(' ').filter((w) => w !== ''),
	env: process.env,
	stderr: 'pipe',
});
const client = new Client({ name: 'dataspoc-pipe-tests', version: '1.0.0' });
transport.stderr?.on('data', (chunk) => {
	if (process.env.PIPE_MCP_STDERR) appendFileSync(process.env.PIPE_MCP_STDERR, chunk);
});
await client.connect(transport);
let status = 0;
for (const arg of process.argv.slice(2)) {
	let out;
	try {
		out = await step(client, JSON.parse(arg));
	} catch (e) {
		out = failure(e);
	}
	process.stdout.write(JSON.stringify(out) + '\n');
}
await client.close();
process.exit(status);
