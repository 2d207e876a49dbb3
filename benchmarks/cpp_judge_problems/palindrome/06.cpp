#include <bits/stdc++.h>
using namespace std;

int main() {
    string s;
    cin >> s;
    size_t n = s.size();
    for (size_t i = 0; i < n / 2; ++i) {
        if (s[i] != s[n - 1 - i]) {
            cout << "NO\n";
            return 0;
        }
    }
    cout << "YES\n";
    return 0;
}
