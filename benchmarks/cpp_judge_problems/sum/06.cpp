#include <bits/stdc++.h>
using namespace std;

// Sum of the array: 64-bit, since n * 1e9 overflows an int.
int main() {
    long long n, answer = 0;
    cin >> n;
    for (long long k = 0; k < n; ++k) {
        long long value;
        cin >> value;
        answer = answer + value;
    }
    cout << answer << '\n';
}
