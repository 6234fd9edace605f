// s3_fault_proxy.js: an HTTP proxy in front of an S3 server for the tests.
// It forwards every request as it came (the Host header too, so a server
// that checks signatures still can), except those its rules answer itself.
//
//   node s3_fault_proxy.js UPSTREAM_PORT LOGFILE [RULE...]
//
// Fixed rules:
//   503=N            the first N requests get 503 SlowDown
//   503every=K       every K-th request gets 503 SlowDown
//   reset=N          the first N requests: the connection is cut, no answer
//   head404=SUFFIX   HEAD of a path ending in SUFFIX: 404, not forwarded
//
// A seeded schedule: each request that is a candidate is faulted with
// probability P, drawn from a PRNG (mulberry32) seeded with S, so that the
// same requests in the same order meet the same faults.
//   rate=P           0.1, 10% or 1 (every candidate)
//   seed=S           an integer (default: one made up, logged either way)
//   kinds=K,...      the faults to pick from, evenly (default: all of them):
//                      500         500 InternalError, not forwarded
//                      503         503 ServiceUnavailable, not forwarded
//                      slowdown    503 SlowDown, not forwarded
//                      reset       the connection reset (RST) before forwarding
//                      resetafter  forwarded and answered upstream (the work is
//                                  done), then the client's connection reset
//                      stall       forwarded, the answer held back STALL
//                                  seconds (default 300) or until the client
//                                  hangs up
//                      truncate    forwarded; the answer's headers (with its
//                                  Content-Length) and half its body, then
//                                  the connection closed; of an answer
//                                  without a body, only the status line
//   only=REGEX       candidates: the requests whose "METHOD URL" matches
//                    (default: every request)
//   after=N          the first N candidates pass unharmed
//   count=N          at most N faults in all (default: no limit)
//   stall=SECONDS    how long stall holds an answer
//
// What s3rver 3.7 lacks, done on its storage folder (s3rver -d DIR):
//   s3dir=DIR        AbortMultipartUpload (DELETE ?uploadId=) removes the
//                    upload's folder DIR/BUCKET/._S3rver_uploads/ID (204, or
//                    404 NoSuchUpload), and ListMultipartUploads (GET
//                    /BUCKET?uploads) lists that folder; s3rver answers 405
//                    and 501 to them
//   conditional      with s3dir: a PutObject with If-None-Match: * of a key
//                    that exists, or with If-Match: ETAG of a key that is
//                    missing or whose content's MD5 is not ETAG, gets 412
//                    PreconditionFailed, as S3 answers (s3rver ignores both)
//   hold=REGEX       the first request whose "METHOD URL" matches is held,
//   release=FILE     unread, until FILE exists; then it goes on as any other
//
// Prints "listening on PORT" once listening on 127.0.0.1 (a free port).
// Appends to LOGFILE a first line "# seed=S rate=P kinds=..." when a
// schedule is set, then "<what> <method> <url>" for every request, <what>
// being "forwarded STATUS" (the upstream's answer), 503, reset or 404 (the
// fixed rules), "fault-KIND" (a scheduled fault that was not forwarded),
// "fault-KIND/STATUS" (one that was, STATUS the upstream's answer),
// "abort STATUS", "uploads STATUS" (done on s3dir) or "conditional 412".
'use strict';

const http = require('http');
const fs = require('fs');
const path = require('path');

const ALL_KINDS = ['500', '503', 'slowdown', 'reset', 'resetafter', 'stall', 'truncate'];

const [upstreamPort, logFile, ...ruleArgs] = process.argv.slice(2);
const rules = {
  first503: 0, every503: 0, reset: 0, head404: null,
  rate: 0, seed: null, kinds: ALL_KINDS, only: null, after: 0, count: Infinity, stall: 300,
  s3dir: null, conditional: false, hold: null, release: null,
};
for (const r of ruleArgs) {
  const [name, value] = r.split(/=(.*)/s);
  if (name === '503') rules.first503 = Number(value);
  else if (name === '503every') rules.every503 = Number(value);
  else if (name === 'reset') rules.reset = Number(value);
  else if (name === 'head404') rules.head404 = value;
  else if (name === 'rate') rules.rate = value.endsWith('%') ? Number(value.slice(0, -1)) / 100 : Number(value);
  else if (name === 'seed') rules.seed = Number(value) >>> 0;
  else if (name === 'kinds') rules.kinds = value.split(',');
  else if (name === 'only') rules.only = new RegExp(value);
  else if (name === 'after') rules.after = Number(value);
  else if (name === 'count') rules.count = Number(value);
  else if (name === 'stall') rules.stall = Number(value);
  else if (name === 's3dir') rules.s3dir = value;
  else if (name === 'conditional' && value === undefined) rules.conditional = true;
  else if (name === 'hold') rules.hold = new RegExp(value);
  else if (name === 'release') rules.release = value;
  else {
    console.error(`s3_fault_proxy: unknown rule '${r}'`);
    process.exit(2);
  }
}
for (const k of rules.kinds) {
  if (!ALL_KINDS.includes(k)) {
    console.error(`s3_fault_proxy: unknown fault kind '${k}' (${ALL_KINDS.join(', ')})`);
    process.exit(2);
  }
}
if (!(rules.rate >= 0 && rules.rate <= 1) || !(rules.stall >= 0) || !(rules.after >= 0) || !(rules.count >= 0)) {
  console.error('s3_fault_proxy: rate is from 0 to 1 (or 0% to 100%); stall, after and count at least 0');
  process.exit(2);
}
if ((rules.hold === null) !== (rules.release === null)) {
  console.error('s3_fault_proxy: hold=REGEX and release=FILE go together');
  process.exit(2);
}
if (rules.conditional && !rules.s3dir) {
  console.error('s3_fault_proxy: conditional needs s3dir=DIR');
  process.exit(2);
}
if (rules.seed === null) rules.seed = (Date.now() ^ (process.pid << 16)) >>> 0;

// mulberry32: small, fast, and the same sequence on every machine
let prng = rules.seed;
const random = () => {
  prng = (prng + 0x6d2b79f5) >>> 0;
  let t = prng;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const log = (what, req) => fs.appendFileSync(logFile, `${what} ${req.method} ${req.url}\n`);
if (rules.rate > 0)
  fs.appendFileSync(logFile, `# seed=${rules.seed} rate=${rules.rate} kinds=${rules.kinds.join(',')}` +
    `${rules.only ? ` only=${rules.only.source}` : ''}${rules.after ? ` after=${rules.after}` : ''}` +
    `${rules.count !== Infinity ? ` count=${rules.count}` : ''}\n`);

const xmlError = (code, message) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
const slowDown = xmlError('SlowDown', 'Please reduce your request rate.');
const errors = {
  500: [500, xmlError('InternalError', 'We encountered an internal error. Please try again.')],
  503: [503, xmlError('ServiceUnavailable', 'Service is unable to handle request.')],
  slowdown: [503, slowDown],
};
const xmlEscape = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// RST rather than FIN where node can (a "connection reset by peer")
const cut = (socket) => (socket.resetAndDestroy ? socket.resetAndDestroy() : socket.destroy());

// Answer with a status and a body once the request's body has been read.
const answer = (req, res, status, body, type = 'application/xml') => {
  req.resume();
  const send = () => {
    res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  if (req.complete) send();
  else req.on('end', send);
};

// The request's bucket, key and query (path-style urls).
const parse = (req) => {
  const u = new URL(req.url, 'http://proxy');
  const parts = u.pathname.split('/');
  return {
    bucket: decodeURIComponent(parts[1] || ''),
    key: decodeURIComponent(parts.slice(2).join('/')),
    query: u.searchParams,
  };
};

const uploadsDir = (bucket) => path.join(rules.s3dir, bucket, '._S3rver_uploads');

// Answers s3rver cannot give, made from its folder: {status, headers, body}, or null.
const emulate = (req) => {
  if (!rules.s3dir) return null;
  const { bucket, key, query } = parse(req);
  const xml = { 'Content-Type': 'application/xml' };
  if (req.method === 'DELETE' && query.has('uploadId') && key) {
    const dir = path.join(uploadsDir(bucket), path.basename(query.get('uploadId')));
    let owner = null;
    try {
      owner = fs.readFileSync(path.join(dir, 'key'), 'utf8');
    } catch (e) { /* no such upload */ }
    if (owner !== key)
      return { what: 'abort', status: 404, headers: xml, body: xmlError('NoSuchUpload', 'The specified upload does not exist.') };
    fs.rmSync(dir, { recursive: true, force: true });
    return { what: 'abort', status: 204, headers: {}, body: '' };
  }
  if (req.method === 'GET' && query.has('uploads') && !key) {
    const prefix = query.get('prefix') || '';
    let ids = [];
    try {
      ids = fs.readdirSync(uploadsDir(bucket)).sort();
    } catch (e) { /* none yet */ }
    let body = `<?xml version="1.0" encoding="UTF-8"?>\n<ListMultipartUploadsResult><Bucket>${xmlEscape(bucket)}</Bucket>` +
      `<Prefix>${xmlEscape(prefix)}</Prefix><IsTruncated>false</IsTruncated>`;
    for (const id of ids) {
      let k;
      try {
        k = fs.readFileSync(path.join(uploadsDir(bucket), id, 'key'), 'utf8');
      } catch (e) {
        continue;
      }
      if (k.startsWith(prefix))
        body += `<Upload><Key>${xmlEscape(k)}</Key><UploadId>${id}</UploadId></Upload>`;
    }
    body += '</ListMultipartUploadsResult>';
    return { what: 'uploads', status: 200, headers: xml, body };
  }
  const match = req.headers['if-match'];
  if (rules.conditional && req.method === 'PUT' && (req.headers['if-none-match'] === '*' || match) &&
      ![...query.keys()].length && key) {
    const dirs = key.split('/');
    const last = dirs.pop();
    const file = path.join(rules.s3dir, bucket, ...dirs, `${last}._S3rver_object`);
    let failed;
    if (match) {
      let etag = null;
      try {
        etag = require('crypto').createHash('md5').update(fs.readFileSync(file)).digest('hex');
      } catch (e) {
        etag = null;
      }
      failed = etag === null || match.replace(/"/g, '') !== etag;
    } else {
      failed = fs.existsSync(file);
    }
    if (failed)
      return {
        what: 'conditional', status: 412, headers: xml,
        body: xmlError('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold'),
      };
  }
  return null;
};

// Forward req upstream; cb(status, headers, body Buffer) once the whole answer came.
const forwardBuffered = (req, cb) => {
  const headers = { ...req.headers };
  delete headers.expect; // this side already said 100 Continue
  const up = http.request(
    { host: '127.0.0.1', port: Number(upstreamPort), method: req.method, path: req.url, headers },
    (upRes) => {
      const chunks = [];
      upRes.on('data', (c) => chunks.push(c));
      upRes.on('end', () => cb(upRes.statusCode, upRes.headers, Buffer.concat(chunks)));
    },
  );
  up.on('error', () => cut(req.socket));
  req.pipe(up);
};

// The answer (or the fault) once it is known: status, headers, body.
const deliver = (req, res, kind, what, status, headers, body) => {
  if (kind === null) {
    log(`${what} ${status}`, req);
    const h = { ...headers };
    delete h['transfer-encoding'];
    if (req.method !== 'HEAD') h['content-length'] = Buffer.byteLength(body);
    res.writeHead(status, h);
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  log(`fault-${kind}/${status}`, req);
  const socket = req.socket;
  if (kind === 'resetafter') {
    cut(socket);
  } else if (kind === 'stall') {
    const timer = setTimeout(() => cut(socket), rules.stall * 1000);
    socket.on('close', () => clearTimeout(timer));
  } else if (kind === 'truncate') {
    const buf = Buffer.from(body);
    let head = `HTTP/1.1 ${status} ${http.STATUS_CODES[status] || 'X'}\r\n`;
    for (const [name, value] of Object.entries(headers)) {
      if (['content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(name)) continue;
      for (const v of [].concat(value)) head += `${name}: ${v}\r\n`;
    }
    head += `Content-Length: ${buf.length}\r\nConnection: close\r\n\r\n`;
    const hasBody = buf.length >= 2 && req.method !== 'HEAD' && status !== 204 && status !== 304;
    const raw = Buffer.concat([Buffer.from(head), hasBody ? buf : Buffer.alloc(0)]);
    const n = hasBody ? Buffer.byteLength(head) + Math.floor(buf.length / 2) : head.indexOf('\r\n') + 2;
    socket.end(raw.subarray(0, n));
  }
};

let n = 0;
let candidates = 0;
let faults = 0;
let held = false;

const server = http.createServer((req, res) => {
  if (rules.hold !== null && !held && rules.hold.test(`${req.method} ${req.url}`)) {
    held = true;
    log('held', req);
    req.pause();
    const wait = setInterval(() => {
      if (!fs.existsSync(rules.release)) return;
      clearInterval(wait);
      handle(req, res);
    }, 50);
    return;
  }
  handle(req, res);
});

const handle = (req, res) => {
  n++;
  const path0 = req.url.split('?')[0];
  if (n <= rules.reset) {
    log('reset', req);
    req.socket.destroy();
    return;
  }
  if (n <= rules.first503 || (rules.every503 > 0 && n % rules.every503 === 0)) {
    log('503', req);
    answer(req, res, 503, slowDown);
    return;
  }
  if (rules.head404 !== null && req.method === 'HEAD' && path0.endsWith(rules.head404)) {
    log('404', req);
    answer(req, res, 404, '');
    return;
  }

  let kind = null;
  if (rules.rate > 0 && (rules.only === null || rules.only.test(`${req.method} ${req.url}`))) {
    candidates++;
    if (candidates > rules.after && faults < rules.count && random() < rules.rate) {
      kind = rules.kinds[Math.floor(random() * rules.kinds.length)];
      faults++;
    }
  }
  if (kind === 'reset') {
    log('fault-reset', req);
    cut(req.socket);
    return;
  }
  if (kind !== null && errors[kind]) {
    log(`fault-${kind}`, req);
    answer(req, res, errors[kind][0], errors[kind][1]);
    return;
  }

  const done = emulate(req);
  if (done) {
    req.resume();
    const go = () => deliver(req, res, kind, done.what, done.status, done.headers, done.body);
    if (req.complete) go();
    else req.on('end', go);
    return;
  }
  if (kind !== null) {
    forwardBuffered(req, (status, headers, body) => deliver(req, res, kind, 'forwarded', status, headers, body));
    return;
  }
  // no fault: stream the answer as it comes
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
};

// a client that gives up on a stalled answer is no error here
server.on('clientError', (err, socket) => socket.destroy());

server.listen(0, '127.0.0.1', () => {
  console.log(`listening on ${server.address().port}`);
});
