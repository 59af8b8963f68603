package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine is what the numbers were measured on.
type Machine struct {
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Kernel  string `json:"kernel,omitempty"`
	Date    string `json:"date"`
	LoadAvg string `json:"loadavg_at_start,omitempty"`
}

func machine() Machine {
	m := Machine{CPU: "unknown", Cores: runtime.NumCPU(), Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Date: time.Now().UTC().Format("2006-01-02 15:04 MST")}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

// RSS is a process's resident set: all of it, and the anonymous (heap,
// stacks) and file-backed (the binary and libraries) parts.
type RSS struct {
	Total int64 `json:"rss_bytes"`
	Anon  int64 `json:"anon_bytes"`
	File  int64 `json:"file_bytes"`
}

// rssOf reads a process's resident set from /proc.
func rssOf(pid int) (RSS, error) {
	var r RSS
	var e1, e2, e3 error
	r.Total, e1 = vmRSS(pid)
	r.Anon, e2 = procStatus(pid, "RssAnon")
	r.File, e3 = procStatus(pid, "RssFile")
	return r, errors.Join(e1, e2, e3)
}
