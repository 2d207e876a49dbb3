#include <bits/stdc++.h>
using namespace std;

// Read one word, print the rest (reversed) first, then this one.
void rev(int left, bool last) {
    if (left == 0) return;
    string word;
    cin >> word;
    rev(left - 1, false);
    cout << word << (last ? "\n" : " ");
}

int main() {
    int k;
    cin >> k;
    rev(k, true);
    return 0;
}
