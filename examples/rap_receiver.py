"""A RAP callback receiver to try async invocations with: prints each message POSTed to it.
python3 examples/rap_receiver.py [PORT]   (on 127.0.0.1; port 9999 by default)"""
import http.server, sys

class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        print(self.rfile.read(int(self.headers["content-length"])).decode(), flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):  # the messages only, no access log
        pass

server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1] if sys.argv[1:] else 9999)), Receiver)
print(f"receiving callbacks on http://127.0.0.1:{server.server_port}", flush=True)
server.serve_forever()
