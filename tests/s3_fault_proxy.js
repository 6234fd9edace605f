// s3_fault_proxy.js: an HTTP proxy in front of an S3 server for the tests.
// It forwards every request as it came (the Host header too, so a server
// that checks signatures still can), except those its rules answer itself.
//
//   node s3_fault_proxy.js UPSTREAM_PORT LOGFILE [RULE...]
//
// Rules:
//   503=N            the first N requests get 503 SlowDown
//   503every=K       every K-th request gets 503 SlowDown
//   reset=N          the first N requests: the connection is cut, no answer
//   head404=SUFFIX   HEAD of a path ending in SUFFIX: 404, not forwarded
//
// Prints "listening on PORT" once listening on 127.0.0.1 (a free port), and
// appends "<what> <method> <url>" to LOGFILE for every request, <what> being
// "forwarded STATUS" (the upstream's answer), 503, reset or 404.
'use strict';

const http = require('http');
const fs = require('fs');

const [upstreamPort, logFile, ...ruleArgs] = process.argv.slice(2);
const rules = { first503: 0, every503: 0, reset: 0, head404: null };
for (const r of ruleArgs) {
  const [name, value] = r.split(/=(.*)/s);
  if (name === '503') rules.first503 = Number(value);
  else if (name === '503every') rules.every503 = Number(value);
  else if (name === 'reset') rules.reset = Number(value);
  else if (name === 'head404') rules.head404 = value;
  else {
    console.error(`s3_fault_proxy: unknown rule '${r}'`);
    process.exit(2);
  }
}

let n = 0;
const log = (what, req) => fs.appendFileSync(logFile, `${what} ${req.method} ${req.url}\n`);

const slowDown =
  '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>' +
  '<Message>Please reduce your request rate.</Message></Error>';

const server = http.createServer((req, res) => {
  n++;
  const path = req.url.split('?')[0];
  if (n <= rules.reset) {
    log('reset', req);
    req.socket.destroy();
    return;
  }
  if (n <= rules.first503 || (rules.every503 > 0 && n % rules.every503 === 0)) {
    log('503', req);
    req.resume();
    req.on('end', () => {
      res.writeHead(503, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(slowDown) });
      res.end(slowDown);
    });
    return;
  }
  if (rules.head404 !== null && req.method === 'HEAD' && path.endsWith(rules.head404)) {
    log('404', req);
    req.resume();
    req.on('end', () => {
      res.writeHead(404, { 'Content-Length': 0 });
      res.end();
    });
    return;
  }
  const headers = { ...req.headers };
  delete headers.expect; // this side already said 100 Continue
  const up = http.request(
    { host: '127.0.0.1', port: Number(upstreamPort), method: req.method, path: req.url, headers },
    (upRes) => {
      log(`forwarded ${upRes.statusCode}`, req);
      res.writeHead(upRes.statusCode, upRes.headers);
      upRes.pipe(res);
    },
  );
  up.on('error', () => req.socket.destroy());
  req.pipe(up);
});

server.listen(0, '127.0.0.1', () => {
  console.log(`listening on ${server.address().port}`);
});
