# Lifts the recursion limit and recurses until the interpreter's C stack overflows (SIGSEGV).
import sys
sys.setrecursionlimit(10**9)
def down(n):
    return down(n + 1) + 1
down(0)
