MOD = 10**9 + 7


def mat_mult(x, y):
    return [[sum(x[i][k] * y[k][j] for k in range(2)) % MOD for j in range(2)] for i in range(2)]


def mat_pow(m, p):
    result = [[1, 0], [0, 1]]
    while p:
        if p & 1:
            result = mat_mult(result, m)
        m = mat_mult(m, m)
        p >>= 1
    return result


n = int(input())
print(mat_pow([[1, 1], [1, 0]], n)[0][1])
