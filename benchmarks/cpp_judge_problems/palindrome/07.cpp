#include <bits/stdc++.h>
using namespace std;

bool palindrome(const string &s, int lo, int hi) {
    if (lo >= hi) return true;
    return s[lo] == s[hi] && palindrome(s, lo + 1, hi - 1);
}

int main() {
    string s;
    cin >> s;
    cout << (palindrome(s, 0, (int)s.size() - 1) ? "YES" : "NO") << '\n';
}
