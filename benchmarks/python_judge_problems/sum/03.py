import sys


def main():
    n, *a = map(int, sys.stdin.buffer.read().split())
    sys.stdout.write(f"{sum(a[:n])}\n")


main()
