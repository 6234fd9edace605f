#!/usr/bin/python3
# gsheets.py DIR LOG: a stand-in for Google Sheets' CSV export, for
# tests/dataspoc-tap-google-sheets-public.bats, on 127.0.0.1 and a free
# port, which it prints ("listening on PORT").  Each request's path goes to
# LOG.  Answers:
#   /spreadsheets/d/ID/export?format=csv[&gid=G]   DIR/ID/G.csv (G 0 when absent)
#   /spreadsheets/d/ID/gviz/tq?tqx=out:csv&sheet=N DIR/ID/sheet-N.csv
#   ID "private": a 302 to the sign-in page (/ServiceLogin, HTML), as Google
#   answers for a sheet that is not shared; ID "moved": a 307 to /cdn/...,
#   as Google answers for a public one; ID "broken": HTTP 500; a file that
#   is not there: HTTP 404 (HTML).
import http.server
import os
import sys
import time
import urllib.parse

root, log = sys.argv[1], sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send(self, code, ctype, body, headers=()):
        self.send_response(code)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def csv(self, path):
        try:
            with open(path, 'rb') as f:
                body = f.read()
        except OSError:
            return self.send(404, 'text/html', b'<html>Not Found</html>')
        self.send(200, 'text/csv', body)

    def do_GET(self):
        with open(log, 'a') as f:
            f.write(self.path + '\n')
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        parts = u.path.split('/')
        if u.path == '/ServiceLogin':
            return self.send(200, 'text/html; charset=utf-8', b'<html>Sign in</html>')
        if len(parts) == 4 and parts[1] == 'cdn':
            return self.csv(os.path.join(root, parts[2], parts[3]))
        if len(parts) < 5 or parts[1:3] != ['spreadsheets', 'd']:
            return self.send(404, 'text/html', b'<html>Not Found</html>')
        sid = parts[3]
        if sid == 'private':
            return self.send(302, 'text/html', b'', [('Location', '/ServiceLogin?continue=x')])
        if sid == 'drip':
            # a server that never ends: a byte every 0.4 s, for ever
            self.send_response(200)
            self.send_header('Content-Type', 'text/csv')
            self.send_header('Content-Length', '100000')
            self.end_headers()
            try:
                while True:
                    self.wfile.write(b'a')
                    self.wfile.flush()
                    time.sleep(0.4)
            except OSError:
                return
        if sid == 'broken':
            return self.send(500, 'text/html', b'<html>Error</html>')
        if parts[4:] == ['export']:
            gid = q.get('gid', ['0'])[0]
            if sid == 'moved':
                return self.send(307, 'text/html', b'', [('Location', '/cdn/moved/%s.csv' % gid)])
            return self.csv(os.path.join(root, sid, gid + '.csv'))
        if parts[4:] == ['gviz', 'tq']:
            return self.csv(os.path.join(root, sid, 'sheet-' + q.get('sheet', [''])[0] + '.csv'))
        return self.send(404, 'text/html', b'<html>Not Found</html>')


srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
print('listening on %d' % srv.server_address[1], flush=True)
srv.serve_forever()
