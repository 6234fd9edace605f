#!/usr/bin/env python3
"""pg_refuse.py PORT-FILE UPSTREAM-PORT WORD...: a PostgreSQL that refuses settings.

A proxy on 127.0.0.1 (its port written to PORT-FILE) to the server on
UPSTREAM-PORT that passes every byte as it comes, except that in each simple
Query message it changes the last letter of each WORD to 'X' (the length
kept), so that the server answers with an error where the client set WORD.
It counts the changed queries on stderr, one line each: "refused N".
Runs until killed.
"""
import os
import socket
import struct
import sys
import threading

SSL_REQUEST, GSS_REQUEST = 80877103, 80877104
lock = threading.Lock()
refused = 0


def read(sock, n):
    buf = b''
    while len(buf) < n:
        b = sock.recv(n - len(buf))
        if not b:
            raise EOFError
        buf += b
    return buf


def shut(*socks):
    """End both directions of each socket, so that its peer pump ends too."""
    for x in socks:
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def pump(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    shut(src, dst)


def client_to_server(c, s, words):
    global refused
    try:
        # untyped messages first: SSL or GSS requests, then the startup
        while True:
            head = read(c, 8)
            n, code = struct.unpack('!ii', head)
            msg = head + read(c, n - 8)
            s.sendall(msg)
            if code in (SSL_REQUEST, GSS_REQUEST):
                continue
            break
        while True:
            head = read(c, 5)
            body = read(c, struct.unpack('!i', head[1:])[0] - 4)
            if head[:1] == b'Q':
                new = body
                for w in words:
                    new = new.replace(w, w[:-1] + b'X')
                if new != body:
                    with lock:
                        refused += 1
                        print('refused %d' % refused, file=sys.stderr, flush=True)
                body = new
            s.sendall(head + body)
    except (EOFError, OSError):
        pass
    shut(c, s)


def main():
    port_file, upstream = sys.argv[1], int(sys.argv[2])
    words = [w.encode() for w in sys.argv[3:]]
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('127.0.0.1', 0))
    ls.listen(16)
    with open(port_file + '.tmp', 'w') as f:
        f.write('%d\n' % ls.getsockname()[1])
    os.rename(port_file + '.tmp', port_file)
    while True:
        c, _ = ls.accept()
        s = socket.create_connection(('127.0.0.1', upstream))
        threading.Thread(target=client_to_server, args=(c, s, words), daemon=True).start()
        threading.Thread(target=pump, args=(s, c), daemon=True).start()


if __name__ == '__main__':
    main()
