def main():
    n = int(input())
    mod = 10**9 + 7
    dp = [0, 1]
    for i in range(2, n + 1):
        dp.append((dp[i - 1] + dp[i - 2]) % mod)
    print(dp[n])


if __name__ == "__main__":
    main()
