#include <bits/stdc++.h>
using namespace std;

long long euclid(long long a, long long b) {
    while (b != 0) {
        long long r = a % b;
        a = b;
        b = r;
    }
    return a;
}

int main() {
    int n;
    cin >> n;
    long long answer = 0;
    while (n--) {
        long long v;
        cin >> v;
        answer = euclid(answer, v);
    }
    cout << answer << endl;
    return 0;
}
