#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    long long best = 0, cur = 0;
    for (int i = 0; i < n; i++) {
        long long x;
        cin >> x;
        cur = max(0LL, cur + x);
        best = max(best, cur);
    }
    cout << best << "\n";
    return 0;
}
