#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    multiset<int> s;
    for (int i = 0; i < n; ++i) {
        int x;
        cin >> x;
        s.insert(x);
    }
    bool first = true;
    for (int x : s) {
        cout << (first ? "" : " ") << x;
        first = false;
    }
    cout << endl;
}
