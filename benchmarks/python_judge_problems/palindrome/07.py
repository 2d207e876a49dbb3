s = input().strip()
half = len(s) // 2
print("YES" if s[:half] == s[::-1][:half] else "NO")
