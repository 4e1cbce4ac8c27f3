# Spins forever: must be killed at the wall-clock timeout.
while True:
    pass
