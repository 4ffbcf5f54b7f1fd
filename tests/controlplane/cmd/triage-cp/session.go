package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Several test sessions (and people, through up.sh) may share one state dir. Everything that
// reads or changes it — reuse check, start, user registration, stop — happens under one
// exclusive flock per state dir, held by this binary, so no caller can wipe a control plane
// another one is starting or using.

// lockStateDir takes the state dir's lock (a file next to the binary, so that nothing
// outside git-ignored paths is created) and returns its release.
func lockStateDir(self, stateDir string) (func(), error) {
	name := ".lock" + strings.ReplaceAll(stateDir, string(filepath.Separator), "_")
	f, err := os.OpenFile(filepath.Join(filepath.Dir(self), name), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// healthy: every recorded process is alive and ours, and the apiserver answers /readyz.
func healthy(st *state) bool {
	if st.ReaderKubeconfig == "" || len(st.Processes) == 0 {
		return false // `up` never finished
	}
	for _, p := range st.Processes {
		if !alive(p.PID) || !ours(p.PID) {
			return false
		}
	}
	pki := filepath.Join(st.StateDir, "pki")
	tlsCfg, err := clientTLS(st.CACert, filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err != nil {
		return false
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	resp, err := c.Get(st.Server + "/readyz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func usersDir(stateDir string) string { return filepath.Join(stateDir, "users") }

// registerUser records a pid (a pytest session) as using the control plane.
func registerUser(stateDir string, pid int) error {
	if pid <= 0 {
		return nil
	}
	if err := os.MkdirAll(usersDir(stateDir), 0o755); err != nil {
		return err
	}
	liveUsers(stateDir, 0) // prunes users that are gone
	return os.WriteFile(filepath.Join(usersDir(stateDir), strconv.Itoa(pid)), nil, 0o644)
}

// liveUsers lists registered pids that are still running, except `except`.
func liveUsers(stateDir string, except int) []int {
	entries, err := os.ReadDir(usersDir(stateDir))
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == except {
			continue
		}
		if alive(pid) {
			out = append(out, pid)
		} else {
			_ = os.Remove(filepath.Join(usersDir(stateDir), e.Name()))
		}
	}
	return out
}

func printUsage(st *state, verb string) {
	fmt.Printf("control plane %s %s at %s (started in %.1fs)\n", st.KubernetesVersion, verb, st.Server, st.StartupSeconds)
	fmt.Printf("  export KUBECONFIG=%s    # admin (system:masters)\n", st.AdminKubeconfig)
	fmt.Printf("  reader kubeconfig (ServiceAccount triage-system/triage-reader): %s\n", st.ReaderKubeconfig)
	fmt.Printf("  state: %s\n", filepath.Join(st.StateDir, "state.json"))
}
