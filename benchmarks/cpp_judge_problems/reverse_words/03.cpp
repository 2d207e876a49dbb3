#include <bits/stdc++.h>
using namespace std;

int main() {
    int k;
    cin >> k;
    vector<string> words(k);
    for (auto &w : words) cin >> w;
    reverse(words.begin(), words.end());
    string out;
    for (size_t i = 0; i < words.size(); ++i) {
        if (i) out += ' ';
        out += words[i];
    }
    cout << out << endl;
}
