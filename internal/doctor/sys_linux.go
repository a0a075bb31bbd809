package doctor

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/layaapp/laya/internal/sysmem"
)

func osInfo() OSInfo {
	i := OSInfo{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		i.Release = "Linux " + unix.ByteSliceToString(u.Release[:])
	}
	if n, err := sysmem.Physical(); err == nil {
		i.MemoryB = int64(n)
	}
	return i
}

func cpuModel() string {
	if m, ok := procField("/proc/cpuinfo", "model name"); ok {
		return m
	}
	return ""
}

// maxProcBytes bounds what is read of a /proc file.
const maxProcBytes = 1 << 20

// procField returns the value of the first "key: value" line for key in a /proc file.
func procField(path, key string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxProcBytes))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if ok && string(bytes.TrimSpace(k)) == key {
			return string(bytes.TrimSpace(v)), true
		}
	}
	return "", false
}
