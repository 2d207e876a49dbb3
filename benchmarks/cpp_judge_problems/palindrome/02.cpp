#include <bits/stdc++.h>
using namespace std;

int main() {
    string s;
    cin >> s;
    int n = s.size();
    bool pal = true;
    for (int i = 0; i < n / 2; i++)
        if (s[i] != s[n - i]) pal = false;
    cout << (pal ? "YES" : "NO") << endl;
    return 0;
}
