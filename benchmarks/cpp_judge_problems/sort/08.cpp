#include <bits/stdc++.h>
using namespace std;

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    size_t n;
    cin >> n;
    vector<long long> values(n);
    for (auto &value : values) cin >> value;
    stable_sort(values.begin(), values.end());
    string line;
    for (auto value : values) {
        if (!line.empty()) line += ' ';
        line += to_string(value);
    }
    cout << line << '\n';
}
