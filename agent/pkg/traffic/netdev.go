package traffic

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ParseNetDev sums the receive byte counters of every interface except loopback in the
// format of /proc/<pid>/net/dev.
func ParseNetDev(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	var total int64
	line := 0
	for sc.Scan() {
		line++
		if line <= 2 { // two header lines
			continue
		}
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			return 0, fmt.Errorf("net/dev line %d: no interface name", line)
		}
		if strings.TrimSpace(name) == "lo" {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) < 9 {
			return 0, fmt.Errorf("net/dev line %d: %d fields, want 16", line, len(fields))
		}
		rx, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("net/dev line %d: rx bytes: %w", line, err)
		}
		total += rx
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if line < 2 {
		return 0, fmt.Errorf("net/dev: missing header")
	}
	return total, nil
}

// ReadNetDev reads the receive bytes of the network namespace of process pid under procRoot
// (normally /proc).
func ReadNetDev(procRoot string, pid int) (int64, error) {
	f, err := os.Open(filepath.Join(procRoot, strconv.Itoa(pid), "net", "dev"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return ParseNetDev(f)
}
