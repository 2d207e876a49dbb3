#include <bits/stdc++.h>
using namespace std;

int main() {
    string s;
    cin >> s;
    string r(s.rbegin(), s.rend());
    puts(s == r ? "YES" : "NO");
    return 0;
}
