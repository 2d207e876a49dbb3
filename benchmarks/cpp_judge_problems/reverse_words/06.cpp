#include <bits/stdc++.h>
using namespace std;

int main() {
    int k;
    cin >> k >> ws;
    string line;
    getline(cin, line);
    istringstream in(line);
    vector<string> parts;
    string part;
    while (in >> part) parts.push_back(part);
    for (int i = (int)parts.size() - 1; i >= 0; --i)
        cout << parts[i] << (i ? " " : "\n");
    return 0;
}
