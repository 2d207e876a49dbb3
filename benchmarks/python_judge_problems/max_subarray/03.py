import sys


def kadane(values):
    best = float("-inf")
    running = 0
    for v in values:
        running = v if running < 0 else running + v
        if running > best:
            best = running
    return best


def main():
    data = sys.stdin.read().split()
    n = int(data[0])
    print(kadane([int(x) for x in data[1 : n + 1]]))


if __name__ == "__main__":
    main()
