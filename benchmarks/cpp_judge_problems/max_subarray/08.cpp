#include <bits/stdc++.h>
using namespace std;

// Kadane: the best sum of a subarray ending here, and the best so far.
int main() {
    int count;
    cin >> count;
    long long endingHere = 0, bestSoFar = 0;
    for (int idx = 0; idx < count; idx++) {
        long long value;
        cin >> value;
        if (idx == 0) {
            endingHere = bestSoFar = value;
            continue;
        }
        endingHere = max(value, endingHere + value);
        bestSoFar = max(bestSoFar, endingHere);
    }
    cout << bestSoFar << "\n";
    return 0;
}
