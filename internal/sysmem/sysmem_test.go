package sysmem

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestPhysical(t *testing.T) {
	ram, err := Physical()
	if err != nil || ram < 64<<20 {
		t.Fatalf("physical memory %d: %v", ram, err)
	}
	if runtime.GOOS != "linux" {
		return
	}
	// The kernel's own account, in kB.
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if ram != kb<<10 {
				t.Errorf("Physical %d bytes, /proc/meminfo's MemTotal %d", ram, kb<<10)
			}
			return
		}
	}
	t.Error("no MemTotal in /proc/meminfo")
}
