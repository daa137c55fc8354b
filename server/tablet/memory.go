package tablet

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Row cache sizing when the node sets none: a quarter of the memory the
// node may use, at least 64 MiB. A lookup store is expected to hold its hot
// rows in memory (Redis holds all of them); the cache only takes memory as
// reads fill it, and it lives outside the Go heap.
const (
	rowCacheMemoryShare   = 4
	minDefaultRowCache    = 64 << 20
	fallbackRowCacheBytes = 256 << 20 // when the memory cannot be read
)

// DefaultKVRowCacheBytes is the row cache of a node that sets none: a
// quarter of memoryLimit.
func DefaultKVRowCacheBytes() int64 {
	limit := memoryLimit()
	if limit <= 0 {
		return fallbackRowCacheBytes
	}
	return max(limit/rowCacheMemoryShare, minDefaultRowCache)
}

// memoryLimit is the memory this process may use: the machine's RAM, or
// its cgroup's limit when that is lower; 0 when neither can be read.
func memoryLimit() int64 {
	var limit int64
	var info unix.Sysinfo_t
	if unix.Sysinfo(&info) == nil {
		limit = int64(info.Totalram) * int64(info.Unit)
	}
	if cg := cgroupMemoryLimit(); cg > 0 && (limit == 0 || cg < limit) {
		limit = cg
	}
	return limit
}

// cgroupMemoryLimit reads the memory limit of this process's cgroup (v2
// memory.max, else v1 memory.limit_in_bytes); 0 when there is none.
func cgroupMemoryLimit() int64 {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			file = "/sys/fs/cgroup" + parts[2] + "/memory.max"
		case hasController(parts[1], "memory"):
			file = "/sys/fs/cgroup/memory" + parts[2] + "/memory.limit_in_bytes"
		default:
			continue
		}
		if n := readLimit(file); n > 0 {
			return n
		}
	}
	return 0
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit parses a cgroup limit file: a byte count, or "max" (none). v1
// reports "no limit" as a huge number, which the caller's min with the RAM
// discards.
func readLimit(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
