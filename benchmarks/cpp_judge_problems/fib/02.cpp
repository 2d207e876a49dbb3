#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    const int M = 1e9 + 7;
    vector<long long> f(n + 2);
    f[0] = 1;
    f[1] = 1;
    for (int i = 2; i <= n; i++) f[i] = (f[i - 1] + f[i - 2]) % M;
    cout << f[n] << endl;
    return 0;
}
