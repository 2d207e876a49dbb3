MOD = 10**9 + 7


def mat_mult(x, y):
    return [
        [(x[0][0] * y[0][0] + x[0][1] * y[1][0]) % MOD, (x[0][0] * y[0][1] + x[0][1] * y[1][1]) % MOD],
        [(x[1][0] * y[0][0] + x[1][1] * y[1][0]) % MOD, (x[1][0] * y[0][1] + x[1][1] * y[1][1]) % MOD],
    ]


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
