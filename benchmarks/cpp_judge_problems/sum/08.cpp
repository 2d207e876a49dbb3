#include <bits/stdc++.h>
using namespace std;

int main() {
    size_t n;
    cin >> n;
    long long s = 0;
    istream_iterator<long long> it(cin), end;
    for (size_t i = 0; i < n && it != end; ++i, ++it) s += *it;
    cout << s << "\n";
}
