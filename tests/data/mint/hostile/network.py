# Opens a TCP connection to the test's listener on 127.0.0.1 ({PORT} is filled in by the test).
import socket
s = socket.create_connection(("127.0.0.1", {PORT}), timeout=1)
s.sendall(b"escaped")
ESCAPED = True
