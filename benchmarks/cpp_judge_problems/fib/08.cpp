#include <bits/stdc++.h>
using namespace std;

// Fibonacci modulo 1e9+7, two running terms.
int main() {
    unsigned long long steps;
    cin >> steps;
    unsigned long long x = 0, y = 1;
    while (steps--) {
        unsigned long long z = (x + y) % 1000000007ULL;
        x = y;
        y = z;
    }
    cout << x << "\n";
}
