def main():
    int(input())
    stack = input().split()
    result = []
    while stack:
        result.append(stack.pop())
    print(" ".join(result))


if __name__ == "__main__":
    main()
