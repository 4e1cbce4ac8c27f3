# Allocates and touches memory without end (100 MiB per step).
blocks = []
while True:
    blocks.append(bytearray(100 << 20))
    blocks[-1][::4096] = b"x" * len(blocks[-1][::4096])
