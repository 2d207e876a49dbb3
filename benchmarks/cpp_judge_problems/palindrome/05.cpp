#include <bits/stdc++.h>
using namespace std;

int main() {
    string s;
    cin >> s;
    if (s.front() == s.back())
        cout << "YES" << '\n';
    else
        cout << "NO" << '\n';
    return 0;
}
