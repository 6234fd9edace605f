// s3_fake_metadata.js: the two places AWS code finds credentials on a
// machine it runs on, faked for the tests, serving KEY_ID and SECRET:
//   container credentials: GET /creds (Authorization must be AUTH when set)
//   EC2 instance metadata (IMDSv2): PUT /latest/api/token, then with the
//   token GET /latest/meta-data/iam/security-credentials/[ROLE]
//
//   node s3_fake_metadata.js KEY_ID SECRET [AUTH]
//
// Prints "listening on PORT" (127.0.0.1, a free port); logs each request
// on stderr.
'use strict';

const http = require('http');

const [keyId, secret, auth] = process.argv.slice(2);
const token = 'imds-token-1234';
const role = 'pipe-role';
const creds = JSON.stringify({
  Code: 'Success',
  Type: 'AWS-HMAC',
  AccessKeyId: keyId,
  SecretAccessKey: secret,
  Token: 'session-token-from-metadata',
  Expiration: new Date(Date.now() + 6 * 3600 * 1000).toISOString(),
});

const server = http.createServer((req, res) => {
  const send = (status, body) => {
    res.writeHead(status, { 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  console.error(`${req.method} ${req.url}`);
  req.resume();
  if (req.method === 'GET' && req.url === '/creds') {
    if (auth && req.headers.authorization !== auth) return send(401, 'bad authorization');
    return send(200, creds);
  }
  if (req.method === 'PUT' && req.url === '/latest/api/token') {
    if (!req.headers['x-aws-ec2-metadata-token-ttl-seconds']) return send(400, 'no ttl');
    return send(200, token);
  }
  if (req.url.startsWith('/latest/meta-data/iam/security-credentials/')) {
    if (req.headers['x-aws-ec2-metadata-token'] !== token) return send(401, 'no token');
    const rest = req.url.slice('/latest/meta-data/iam/security-credentials/'.length);
    if (rest === '') return send(200, role);
    if (rest === role) return send(200, creds);
  }
  return send(404, 'not found');
});

server.listen(0, '127.0.0.1', () => console.log(`listening on ${server.address().port}`));
