#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    long long g = 1;
    for (int i = 0; i < n; i++) {
        long long x;
        cin >> x;
        g = __gcd(g, x);
    }
    cout << g << "\n";
}
