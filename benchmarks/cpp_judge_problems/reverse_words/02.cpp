#include <bits/stdc++.h>
using namespace std;

int main() {
    int k;
    cin >> k;
    vector<string> words(k);
    for (int i = 0; i < k; i++) cin >> words[i];
    for (int i = k - 1; i > 0; i--) {
        if (i != k - 1) cout << " ";
        cout << words[i];
    }
    cout << "\n";
    return 0;
}
