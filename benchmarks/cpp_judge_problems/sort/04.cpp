#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    if (scanf("%d", &n) != 1) return 0;
    priority_queue<int, vector<int>, greater<int>> pq;
    for (int i = 0; i < n; i++) {
        int x;
        if (scanf("%d", &x) != 1) break;
        pq.push(x);
    }
    for (int i = 0; !pq.empty(); i++) {
        printf(i ? " %d" : "%d", pq.top());
        pq.pop();
    }
    printf("\n");
    return 0;
}
