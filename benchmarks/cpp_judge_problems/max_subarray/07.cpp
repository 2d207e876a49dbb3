#include <bits/stdc++.h>
using namespace std;
using ll = long long;

int main() {
    ios_base::sync_with_stdio(false);
    int n;
    cin >> n;
    ll running = 0, answer = LLONG_MIN;
    while (n--) {
        ll v;
        cin >> v;
        running += v;
        answer = max(answer, running);
        if (running < 0) running = 0;
    }
    cout << answer << '\n';
    return 0;
}
