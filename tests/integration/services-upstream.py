# SPDX-License-Identifier: LGPL-2.1-or-later
# The HTTPS upstream of test-services.sh: answers every request with
# "upstream saw PATH", appends each request's head to HEADS, prints its port.
import http.server
import socketserver
import ssl
import sys

cert, key, heads = sys.argv[1], sys.argv[2], sys.argv[3]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(heads, "a") as f:
            f.write(self.requestline + "\n" + str(self.headers) + "--\n")
        body = ("upstream saw " + self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
