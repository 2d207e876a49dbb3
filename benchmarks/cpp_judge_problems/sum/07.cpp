#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    vector<long long> a(n);
    long long s = 0;
    for (long long &x : a) {
        cin >> x;
    }
    for (long long x : a) {
        s += x;
    }
    cout << s << endl;
    return 0;
}
