# Looks for the secret variable of the test in its own environment and in the environment of
# every process it can see (scorekit's among them).
import os
NAME = b"SCOREKIT_TEST_SECRET="
ESCAPED = NAME.decode()[:-1] in os.environ
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if NAME in f.read():
                    ESCAPED = True
        except OSError:
            pass
if not ESCAPED:
    del ESCAPED
