package cluster

import (
	"fmt"
	"hash/fnv"
)

// Shards split the namespaces of one repository between gitaso processes,
// each with its own Lease and state file, when one process is not enough.
// A namespace belongs to shard fnv32a(namespace) mod n: the assignment needs
// no coordination and is the same in every process, but changes with n, so
// changing the number of shards moves namespaces between state files (see
// docs/ha.md).

// ShardOf returns the shard (0..n-1) a namespace belongs to among n shards;
// with n < 2 everything is shard 0.
func ShardOf(namespace string, n int) int {
	if n < 2 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	return int(h.Sum32() % uint32(n))
}

// ShardLeaseName returns the Lease name of a shard: id itself with a single
// shard, "<id>-shard-<k>" with several.
func ShardLeaseName(id string, shard, n int) string {
	if n < 2 {
		return id
	}
	return fmt.Sprintf("%s-shard-%d", id, shard)
}
