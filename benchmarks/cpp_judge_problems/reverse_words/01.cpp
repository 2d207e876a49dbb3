#include <bits/stdc++.h>
using namespace std;

int main() {
    int k;
    cin >> k;
    vector<string> w(k);
    for (auto &s : w) cin >> s;
    for (int i = k - 1; i >= 0; i--) {
        cout << w[i];
        if (i > 0) cout << ' ';
    }
    cout << '\n';
    return 0;
}
