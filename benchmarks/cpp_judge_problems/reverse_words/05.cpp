#include <bits/stdc++.h>
using namespace std;

int main() {
    int k;
    cin >> k;
    vector<string> w(k);
    for (auto &s : w) cin >> s;
    for (int i = 0; i < k; i++) {
        cout << w[i];
        if (i + 1 < k) cout << ' ';
    }
    cout << '\n';
    return 0;
}
