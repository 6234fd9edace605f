#!/usr/bin/env python3
"""pg_refuse.py [--break-copy | --break-copy-tail | --break-copy-length | --inject-copy | --cut-copy |
--nul-copy | --long-copy-done | --empty-copy | --trickle | --stall-copy] PORT-FILE UPSTREAM-PORT WORD...: a PostgreSQL that
refuses settings, or sends COPY data not as the protocol says.

A proxy on 127.0.0.1 (its port written to PORT-FILE) to the server on
UPSTREAM-PORT that passes every byte as it comes, except that in each simple
Query message it changes the last letter of each WORD to 'X' (the length
kept), so that the server answers with an error where the client set WORD.
It counts the changed queries on stderr, one line each: "refused N".
With --break-copy, the second CopyData message the server sends on a
connection (a binary COPY's second row: the first comes with the header) gets
a field count of 0x7fff, and "broke N" is counted on stderr; with
--break-copy-tail, the length of its last field (a FULL_TABLE COPY's xmin,
8 bytes) says 7; with --break-copy-length, the message's own length says 3
(less than itself: what libpq calls lost synchronization); with --inject-copy,
a ParameterStatus, a NoticeResponse and a NotificationResponse come before
it ("injected N"); with
--cut-copy, the connection ends halfway through it ("cut N"); with
--nul-copy, a message of type 0 (no such type) comes before it, with
--empty-copy an empty CopyData ("injected N"); with --long-copy-done, the
CopyDone's length says 65540 ("broke N"); with --trickle, every COPY message
(CopyOutResponse, CopyData, CopyDone) comes one byte at a time; with
--stall-copy, the second CopyData never comes ("stalled N").
Runs until killed.
"""
import os
import queue
import socket
import struct
import sys
import threading
import time

SSL_REQUEST, GSS_REQUEST = 80877103, 80877104
lock = threading.Lock()
refused = 0
broke = 0


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


def server_to_client(s, c, untyped, mode):
    """The server's answers: one byte for each SSL or GSS request the
    client made (untyped says, in order: 'request', then 'startup'), then
    typed messages, the second CopyData broken."""
    global broke
    copydata = 0
    try:
        while untyped.get() == 'request':
            c.sendall(read(s, 1))
        while True:
            head = read(s, 5)
            body = read(s, struct.unpack('!i', head[1:])[0] - 4)
            if head[:1] == b'd':
                copydata += 1
                if copydata == 2 and mode == '--inject-copy':
                    ps = b'application_name\0injected\0'
                    nt = b'SNOTICE\0VNOTICE\0C00000\0Minjected mid-COPY\0\0'
                    nf = struct.pack('!i', 4242) + b'chan\0injected\0'
                    c.sendall(b'S' + struct.pack('!i', len(ps) + 4) + ps +
                              b'N' + struct.pack('!i', len(nt) + 4) + nt +
                              b'A' + struct.pack('!i', len(nf) + 4) + nf)
                    with lock:
                        broke += 1
                        print('injected %d' % broke, file=sys.stderr, flush=True)
                elif copydata == 2 and mode in ('--nul-copy', '--empty-copy'):
                    c.sendall((b'\0' if mode == '--nul-copy' else b'd') + struct.pack('!i', 4))
                    with lock:
                        broke += 1
                        print('injected %d' % broke, file=sys.stderr, flush=True)
                elif copydata == 2 and mode == '--stall-copy':
                    with lock:
                        broke += 1
                        print('stalled %d' % broke, file=sys.stderr, flush=True)
                    while True:
                        time.sleep(60)
                elif copydata == 2 and mode == '--cut-copy':
                    c.sendall(head + body[:len(body) // 2])
                    with lock:
                        broke += 1
                        print('cut %d' % broke, file=sys.stderr, flush=True)
                    break
                elif copydata == 2 and mode == '--break-copy-length':
                    head = head[:1] + struct.pack('!i', 3)
                    with lock:
                        broke += 1
                        print('broke %d' % broke, file=sys.stderr, flush=True)
                elif copydata == 2 and mode == '--break-copy-tail' and len(body) >= 12:
                    body = body[:-12] + struct.pack('!i', 7) + body[-8:]
                    with lock:
                        broke += 1
                        print('broke %d' % broke, file=sys.stderr, flush=True)
                elif copydata == 2 and mode == '--break-copy' and len(body) >= 2:
                    body = b'\x7f\xff' + body[2:]
                    with lock:
                        broke += 1
                        print('broke %d' % broke, file=sys.stderr, flush=True)
            if head[:1] == b'c' and mode == '--long-copy-done':
                head = head[:1] + struct.pack('!i', 65540)
                with lock:
                    broke += 1
                    print('broke %d' % broke, file=sys.stderr, flush=True)
            if head[:1] in (b'H', b'd', b'c') and mode == '--trickle':
                for i in range(len(head + body)):
                    c.sendall((head + body)[i:i + 1])
                    time.sleep(0.0002)
                continue
            c.sendall(head + body)
    except (EOFError, OSError):
        pass
    shut(s, c)


def client_to_server(c, s, words, untyped):
    global refused
    try:
        # untyped messages first: SSL or GSS requests, then the startup
        while True:
            head = read(c, 8)
            n, code = struct.unpack('!ii', head)
            msg = head + read(c, n - 8)
            if code in (SSL_REQUEST, GSS_REQUEST):
                untyped.put('request')
                s.sendall(msg)
                continue
            untyped.put('startup')
            s.sendall(msg)
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
    untyped.put('startup')
    shut(c, s)


def main():
    args = sys.argv[1:]
    modes = ('--break-copy', '--break-copy-tail', '--break-copy-length', '--inject-copy', '--cut-copy',
             '--nul-copy', '--long-copy-done', '--empty-copy', '--trickle', '--stall-copy')
    mode = args[0] if args[:1] and args[0] in modes else None
    break_copy = mode is not None
    if break_copy:
        args = args[1:]
    port_file, upstream = args[0], int(args[1])
    words = [w.encode() for w in args[2:]]
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('127.0.0.1', 0))
    ls.listen(16)
    with open(port_file + '.tmp', 'w') as f:
        f.write('%d\n' % ls.getsockname()[1])
    os.rename(port_file + '.tmp', port_file)
    while True:
        c, _ = ls.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s = socket.create_connection(('127.0.0.1', upstream))
        untyped = queue.Queue()
        threading.Thread(target=client_to_server, args=(c, s, words, untyped), daemon=True).start()
        if break_copy:
            threading.Thread(target=server_to_client, args=(s, c, untyped, mode), daemon=True).start()
        else:
            threading.Thread(target=pump, args=(s, c), daemon=True).start()


if __name__ == '__main__':
    main()
