# Writes outside its working folder: into the test's folder and into the parent of its
# working folder ({OUTSIDE} is filled in by the test).
import posix
written = 0
for path in ["{OUTSIDE}/escaped.txt", "../escaped-from-workdir.txt"]:
    try:
        fd = posix.open(path, posix.O_WRONLY | posix.O_CREAT, 0o644)
        posix.write(fd, b"escaped")
        posix.close(fd)
        written += 1
    except OSError:
        pass
ESCAPED = written > 0
assert ESCAPED
