def euclid(a: int, b: int) -> int:
    return a if b == 0 else euclid(b, a % b)


def main() -> None:
    n = int(input())
    values = [int(v) for v in input().split()]
    answer = values[0]
    for v in values[1:n]:
        answer = euclid(answer, v)
    print(answer)


main()
