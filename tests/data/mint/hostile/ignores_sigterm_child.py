# A child that ignores SIGTERM (and SIGHUP) and sleeps on after its parent has exited.
import posix, signal, time
if posix.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while True:
        time.sleep(1)
raise SystemExit(1)
