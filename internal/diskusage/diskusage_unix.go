//go:build unix

package diskusage

import (
	"io/fs"
	"syscall"
)

// fileBytes is the space a file's allocated blocks take.
func fileBytes(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return regularSize(info)
}
