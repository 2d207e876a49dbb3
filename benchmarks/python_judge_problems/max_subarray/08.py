def max_subarray(nums: list[int]) -> int:
    best, current = nums[0], 0
    for num in nums:
        current += num
        best = max(best, current)
        if current < 0:
            current = 0
    return best


n = int(input())
print(max_subarray([int(x) for x in input().split()][:n]))
