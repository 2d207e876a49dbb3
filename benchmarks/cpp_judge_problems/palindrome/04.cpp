#include <bits/stdc++.h>
using namespace std;

int main() {
    ios::sync_with_stdio(false);
    string word;
    cin >> word;
    bool same = equal(word.begin(), word.begin() + word.size() / 2, word.rbegin());
    cout << (same ? "YES\n" : "NO\n");
}
