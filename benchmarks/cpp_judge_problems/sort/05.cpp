#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    vector<int> v(n);
    for (auto &x : v) cin >> x;
    sort(v.begin(), v.end() - 1);
    for (int i = 0; i < n; i++) cout << v[i] << (i == n - 1 ? "\n" : " ");
    return 0;
}
