def check(s):
    if len(s) <= 1:
        return True
    return s[0] == s[-1] and check(s[1:-1])


word = input().strip()
print(["NO", "YES"][check(word)])
