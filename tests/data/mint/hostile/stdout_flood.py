# Floods the real stdout and stderr descriptors (the runner only replaced sys.stdout).
import os
block = b"x" * 65536
while True:
    os.write(1, block)
    os.write(2, block)
