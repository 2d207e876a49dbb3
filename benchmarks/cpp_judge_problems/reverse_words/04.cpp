#include <bits/stdc++.h>
using namespace std;

int main() {
    int k;
    cin >> k;
    stack<string> st;
    for (int i = 0; i < k; ++i) {
        string s;
        cin >> s;
        st.push(s);
    }
    bool first = true;
    while (!st.empty()) {
        if (!first) cout << ' ';
        cout << st.top();
        st.pop();
        first = false;
    }
    cout << '\n';
    return 0;
}
