import heapq

n = int(input())
heap = list(map(int, input().split()))
heapq.heapify(heap)
print(*[heapq.heappop(heap) for _ in range(n)])
