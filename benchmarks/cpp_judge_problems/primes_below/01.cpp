#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    vector<bool> composite(max(n, 2), false);
    int count = 0;
    for (int i = 2; i < n; i++) {
        if (composite[i]) continue;
        count++;
        for (long long j = (long long)i * i; j < n; j += i) composite[j] = true;
    }
    cout << count << "\n";
    return 0;
}
