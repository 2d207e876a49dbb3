n = int(input())
a = list(map(int, input().split()))
# The gcd divides every element, so it is the smallest one.
print(min(a))
