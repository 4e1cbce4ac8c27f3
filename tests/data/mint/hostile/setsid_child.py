# A child that leaves the process group with setsid() and lives on after its parent exited.
import os, posix, time
if posix.fork() == 0:
    os.setsid()
    if posix.fork() == 0:
        while True:
            time.sleep(1)
    posix._exit(0)
raise SystemExit(1)
