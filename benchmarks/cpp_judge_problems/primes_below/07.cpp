#include <bits/stdc++.h>
using namespace std;

bitset<100001> is_composite;

int main() {
    int n;
    cin >> n;
    int answer = 0;
    for (int p = 2; p < n; p++) {
        if (is_composite[p]) continue;
        answer++;
        for (long long q = 1LL * p * p; q < n; q += p) is_composite[q] = true;
    }
    cout << answer << endl;
    return 0;
}
