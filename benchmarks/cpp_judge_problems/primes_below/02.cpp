#include <bits/stdc++.h>
using namespace std;

bool isPrime(int x) {
    if (x < 2) return false;
    for (int d = 2; d * d <= x; d++)
        if (x % d == 0) return false;
    return true;
}

int main() {
    int n;
    cin >> n;
    int count = 0;
    for (int i = 2; i <= n; i++)
        if (isPrime(i)) count++;
    cout << count << endl;
    return 0;
}
