k = int(input())
w = input().split()
print(" ".join(w[i] for i in range(k)))
