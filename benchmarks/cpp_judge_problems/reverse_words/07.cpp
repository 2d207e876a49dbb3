#include <bits/stdc++.h>
using namespace std;

int main() {
    int k;
    cin >> k;
    deque<string> dq;
    string s;
    while (k-- > 0 && cin >> s) dq.push_front(s);
    for (size_t i = 0; i < dq.size(); i++) cout << (i ? " " : "") << dq[i];
    cout << "\n";
}
