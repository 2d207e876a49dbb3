#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
typedef array<array<ll, 2>, 2> Mat;
const ll MOD = 1000000007LL;

Mat mul(const Mat &x, const Mat &y) {
    Mat r{};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 2; k++) r[i][j] = (r[i][j] + x[i][k] * y[k][j]) % MOD;
    return r;
}

int main() {
    ll n;
    cin >> n;
    Mat result = {{{1, 0}, {0, 1}}};
    Mat base = {{{1, 1}, {1, 0}}};
    while (n > 0) {
        if (n & 1) result = mul(result, base);
        base = mul(base, base);
        n >>= 1;
    }
    cout << result[0][1] << "\n";
    return 0;
}
