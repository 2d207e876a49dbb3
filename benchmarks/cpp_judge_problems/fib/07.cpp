#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    long long f[2] = {0, 1};
    for (int i = 2; i <= n; i++) f[i % 2] = (f[0] + f[1]) % 1000000007;
    cout << f[n % 2] << endl;
    return 0;
}
