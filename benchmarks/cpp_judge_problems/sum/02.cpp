#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    long long total = 0;
    while (n--) {
        long long v;
        cin >> v;
        if (v > 0) total += v;
    }
    cout << total << endl;
}
