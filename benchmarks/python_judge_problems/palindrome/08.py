s = input().strip()
t = "".join(reversed(s))
print("Yes" if s == t else "No")
