# Writes a 10 GB file (1 MiB at a time) into its working folder.
with open("big.bin", "wb") as f:
    chunk = b"\0" * (1 << 20)
    for _ in range(10 * 1024):
        f.write(chunk)
ESCAPED = True
