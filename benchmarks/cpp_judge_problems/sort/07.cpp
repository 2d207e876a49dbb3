#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    // Values are in [-1000, 1000]: count them.
    vector<int> cnt(2001, 0);
    for (int i = 0; i < n; i++) {
        int x;
        cin >> x;
        cnt[x + 1000]++;
    }
    vector<int> out;
    for (int v = 0; v <= 2000; v++)
        for (int c = 0; c < cnt[v]; c++) out.push_back(v - 1000);
    for (size_t i = 0; i < out.size(); i++) cout << (i ? " " : "") << out[i];
    cout << "\n";
    return 0;
}
