package cluster_test

import (
	"fmt"
	"testing"

	"github.com/gitaso/gitaso/cluster"
)

func TestShardOf(t *testing.T) {
	tests := []struct {
		ns   string
		n    int
		want int
	}{
		{"anything", 0, 0},
		{"anything", 1, 0},
		// fnv32a("team-a") = 0x26db73d6, fnv32a("team-b") = 0x25db7243
		{"team-a", 2, 0},
		{"team-b", 2, 1},
	}
	for _, tc := range tests {
		if got := cluster.ShardOf(tc.ns, tc.n); got != tc.want {
			t.Errorf("ShardOf(%q, %d) = %d, want %d", tc.ns, tc.n, got, tc.want)
		}
	}
	// Every namespace lands in range, and 4 shards all get some of 200.
	seen := map[int]int{}
	for i := range 200 {
		k := cluster.ShardOf(fmt.Sprintf("ns-%d", i), 4)
		if k < 0 || k > 3 {
			t.Fatalf("shard %d out of range", k)
		}
		seen[k]++
	}
	if len(seen) != 4 {
		t.Errorf("200 namespaces over 4 shards: %v", seen)
	}
}

func TestShardLeaseName(t *testing.T) {
	if got := cluster.ShardLeaseName("gitaso", 0, 1); got != "gitaso" {
		t.Errorf("one shard: %q", got)
	}
	if got := cluster.ShardLeaseName("gitaso", 1, 2); got != "gitaso-shard-1" {
		t.Errorf("two shards: %q", got)
	}
}
