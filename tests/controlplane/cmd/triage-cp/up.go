package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// kubernetesVersion is the k8s.io/kubernetes release pinned in go.mod; reported in state.json.
const kubernetesVersion = "v1.36.3"

// process is one component started by `up`, recorded in state.json so that `down`, a later
// `up`, or the Python fixture can find it again.
type process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Log  string `json:"log"`
}

// state is .run/state.json, the contract between `up`, `down` and tests/support/controlplane.py.
type state struct {
	Server            string            `json:"server"`
	StateDir          string            `json:"state_dir"`
	CACert            string            `json:"ca_cert"`
	AdminKubeconfig   string            `json:"admin_kubeconfig"`
	ReaderKubeconfig  string            `json:"reader_kubeconfig"`
	MutatorKubeconfig string            `json:"mutator_kubeconfig"`
	PodLogsDir        string            `json:"pod_logs_dir"`
	Ports             map[string]int    `json:"ports"`
	Processes         []process         `json:"processes"`
	KubernetesVersion string            `json:"kubernetes_version"`
	StartedAt         string            `json:"started_at"`
	StartupSeconds    float64           `json:"startup_seconds"`
	Phases            map[string]string `json:"phases"`
}

type upOptions struct {
	stateDir  string
	configDir string
	timeout   time.Duration
}

func runUp(args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// bin/triage-cp -> tests/controlplane
	defaultConfig := filepath.Dir(filepath.Dir(self))
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	o := upOptions{}
	fs.StringVar(&o.stateDir, "state-dir", filepath.Join(defaultConfig, ".run"), "state directory (wiped on start)")
	fs.StringVar(&o.configDir, "config-dir", defaultConfig, "directory holding manifests/ and kwok/")
	fs.DurationVar(&o.timeout, "timeout", 120*time.Second, "give up when not ready after this long")
	reuse := fs.Bool("reuse", false, "keep a healthy control plane recorded in the state dir (prints \"reused\")")
	userPID := fs.Int("user-pid", 0, "record this pid as a user; `down --release-pid` leaves it running while users live")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.stateDir, err = filepath.Abs(o.stateDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if o.configDir, err = filepath.Abs(o.configDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	unlock, err := lockStateDir(self, o.stateDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lock:", err)
		return 1
	}
	defer unlock()
	if *reuse {
		if old, err := readState(o.stateDir); err == nil && healthy(old) {
			if err := registerUser(o.stateDir, *userPID); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			printUsage(old, "reused")
			return 0
		}
	}
	st, err := up(self, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "up:", err)
		if st != nil {
			stopProcesses(st.Processes)
			for _, p := range st.Processes {
				fmt.Fprintf(os.Stderr, "  %s log: %s\n", p.Name, p.Log)
			}
		}
		return 1
	}
	if err := registerUser(o.stateDir, *userPID); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	printUsage(st, "started")
	return 0
}

func up(self string, o upOptions) (*state, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	// A previous run recorded here is stopped first: one state dir, one control plane.
	if old, err := readState(o.stateDir); err == nil {
		stopProcesses(old.Processes)
	}
	if err := os.RemoveAll(o.stateDir); err != nil {
		return nil, err
	}
	logDir := filepath.Join(o.stateDir, "logs")
	for _, d := range []string{logDir, filepath.Join(o.stateDir, "pod-logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}

	ports, err := freePorts("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok")
	if err != nil {
		return nil, err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(ports["apiserver"])
	st := &state{
		Server:            server,
		StateDir:          o.stateDir,
		Ports:             ports,
		KubernetesVersion: kubernetesVersion,
		StartedAt:         start.UTC().Format(time.RFC3339),
		PodLogsDir:        filepath.Join(o.stateDir, "pod-logs"),
		Phases:            map[string]string{},
	}
	phase := func(name string) { st.Phases[name] = fmt.Sprintf("%.2fs", time.Since(start).Seconds()) }

	p, err := newPKI(filepath.Join(o.stateDir, "pki"))
	if err != nil {
		return nil, err
	}
	st.CACert = p.path("ca.crt")
	certs := []struct{ name, cn, org string }{
		{"admin", "triage-admin", "system:masters"},
		{"controller-manager", "system:kube-controller-manager", ""},
		{"scheduler", "system:kube-scheduler", ""},
		{"kwok", "kwok-controller", "system:masters"},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"},
	}
	for _, c := range certs {
		var orgs []string
		if c.org != "" {
			orgs = []string{c.org}
		}
		if err := p.issue(c.name, c.cn, orgs, nil); err != nil {
			return nil, err
		}
	}
	if err := p.issue("apiserver", "kube-apiserver", nil, []string{
		"127.0.0.1", "10.96.0.1", "localhost", "kubernetes", "kubernetes.default",
		"kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	}); err != nil {
		return nil, err
	}
	// kwok serves the kubelet API (pods/log, exec) for every fake node on 127.0.0.1.
	if err := p.issue("kubelet-serving", "kwok-kubelet", nil, []string{"127.0.0.1", "localhost"}); err != nil {
		return nil, err
	}
	if err := p.serviceAccountKey(); err != nil {
		return nil, err
	}
	kubeconfigs := map[string]string{}
	for _, c := range certs {
		path := filepath.Join(o.stateDir, c.name+".kubeconfig")
		if err := writeKubeconfig(path, server, p.path("ca.crt"), clientCertAuth(p.path(c.name+".crt"), p.path(c.name+".key")), c.name); err != nil {
			return nil, err
		}
		kubeconfigs[c.name] = path
	}
	st.AdminKubeconfig = kubeconfigs["admin"]
	phase("pki")

	spawn := func(name string, args ...string) error {
		pr, err := startProcess(self, logDir, name, args...)
		if err != nil {
			return err
		}
		st.Processes = append(st.Processes, pr)
		return writeState(st)
	}

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports["etcd"])
	if err := spawn("etcd", "etcd",
		"--data-dir="+filepath.Join(o.stateDir, "etcd"),
		"--listen-client-url="+etcdURL,
		"--listen-peer-url=http://127.0.0.1:"+strconv.Itoa(ports["etcd-peer"]),
	); err != nil {
		return st, err
	}
	if err := waitHTTP(ctx, nil, etcdURL+"/health", st.Processes[0]); err != nil {
		return st, fmt.Errorf("etcd: %w", err)
	}
	phase("etcd")

	if err := spawn("kube-apiserver", "kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports["apiserver"]),
		"--tls-cert-file="+p.path("apiserver.crt"),
		"--tls-private-key-file="+p.path("apiserver.key"),
		"--client-ca-file="+p.path("ca.crt"),
		// Published for delegated authentication (controller-manager, scheduler); no front
		// proxy exists, so no certificate carries the allowed name.
		"--requestheader-client-ca-file="+p.path("ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.path("sa.pub"),
		"--service-account-signing-key-file="+p.path("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		// The apiserver reaches the fake nodes' kubelet API (kwok) for pods/log, verifying
		// kwok's serving certificate against our CA and presenting its own client cert.
		"--kubelet-client-certificate="+p.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p.path("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+p.path("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// The "kubernetes" Service's endpoints would be 127.0.0.1, which Endpoints
		// validation rejects; nothing in the tests dials the in-cluster service.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
		"--v=1",
	); err != nil {
		return st, err
	}
	tlsCfg, err := clientTLS(p.path("ca.crt"), p.path("admin.crt"), p.path("admin.key"))
	if err != nil {
		return st, err
	}
	if err := waitHTTP(ctx, tlsCfg, server+"/readyz", st.Processes[1]); err != nil {
		return st, fmt.Errorf("kube-apiserver: %w", err)
	}
	phase("apiserver")

	delegated := func(kc string) []string {
		return []string{
			"--kubeconfig=" + kc,
			"--authentication-kubeconfig=" + kc,
			"--authorization-kubeconfig=" + kc,
			"--bind-address=127.0.0.1",
			"--leader-elect=false",
			"--profiling=false",
			// Defaults (20 QPS) make the controller-manager's start, ~40 controllers each
			// fetching its ServiceAccount token, take seconds on its client-side rate limit.
			"--kube-api-qps=500",
			"--kube-api-burst=1000",
			"--v=1",
		}
	}
	kcm := append([]string{"kube-controller-manager"}, delegated(kubeconfigs["controller-manager"])...)
	kcm = append(kcm,
		"--secure-port="+strconv.Itoa(ports["controller-manager"]),
		// No metrics API here: scenarios write HPA status themselves, so the HPA controller
		// must not overwrite it.
		"--controllers=*,-horizontal-pod-autoscaler-controller",
		"--service-account-private-key-file="+p.path("sa.key"),
		"--root-ca-file="+p.path("ca.crt"),
		"--cluster-signing-cert-file="+p.path("ca.crt"),
		"--cluster-signing-key-file="+p.path("ca.key"),
		"--use-service-account-credentials=true",
		"--node-monitor-grace-period=60s",
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
	)
	if err := spawn("kube-controller-manager", kcm...); err != nil {
		return st, err
	}
	sched := append([]string{"kube-scheduler"}, delegated(kubeconfigs["scheduler"])...)
	sched = append(sched, "--secure-port="+strconv.Itoa(ports["scheduler"]))
	if err := spawn("kube-scheduler", sched...); err != nil {
		return st, err
	}

	kwokBin := filepath.Join(filepath.Dir(self), "kwok")
	kwokArgs := []string{
		"--kubeconfig=" + kubeconfigs["kwok"],
		"--config=" + filepath.Join(o.configDir, "kwok", "stages.yaml"),
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-ip=127.0.0.1",
		"--node-port=" + strconv.Itoa(ports["kwok"]),
		"--server-address=127.0.0.1:" + strconv.Itoa(ports["kwok"]),
		"--tls-cert-file=" + p.path("kubelet-serving.crt"),
		"--tls-private-key-file=" + p.path("kubelet-serving.key"),
		"--cidr=10.244.0.1/16",
		"--node-lease-duration-seconds=40",
		"--enable-crds=Logs",
	}
	pr, err := startBinary(kwokBin, logDir, "kwok", kwokArgs...)
	if err != nil {
		return st, err
	}
	st.Processes = append(st.Processes, pr)
	if err := writeState(st); err != nil {
		return st, err
	}
	phase("components started")

	if err := bootstrap(ctx, st, kubeconfigs["admin"], filepath.Join(o.configDir, "manifests"), phase); err != nil {
		return st, err
	}
	st.StartupSeconds = time.Since(start).Seconds()
	phase("ready")
	return st, writeState(st)
}

func freePorts(names ...string) (map[string]int, error) {
	out := map[string]int{}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for _, n := range names {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out[n] = l.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}

func startProcess(self, logDir, name string, args ...string) (process, error) {
	return startBinary(self, logDir, name, args...)
}

// startBinary starts a component in its own session, detached from `up`, with output in
// logs/<name>.log: it outlives `up` and is stopped by `down` through the recorded pid.
func startBinary(bin, logDir, name string, args ...string) (process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return process{}, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return process{}, fmt.Errorf("start %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	// Reap it if it dies while `up` is still running, so alive() does not see a zombie.
	go func() { _ = cmd.Wait() }()
	return process{Name: name, PID: pid, Log: logPath}, nil
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie answers kill(0); /proc tells the truth.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	for i := 0; i < len(b)-2; i++ {
		if b[i] == ')' {
			return b[i+2] != 'Z'
		}
	}
	return true
}

func clientTLS(ca, cert, key string) (*tls.Config, error) {
	pool := x509.NewCertPool()
	b, err := os.ReadFile(ca)
	if err != nil {
		return nil, err
	}
	pool.AppendCertsFromPEM(b)
	kp, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}, nil
}

func waitHTTP(ctx context.Context, tlsCfg *tls.Config, url string, pr process) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	var last error
	for {
		resp, err := c.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
		}
		last = err
		if !alive(pr.PID) {
			return fmt.Errorf("%s exited; see %s", pr.Name, pr.Log)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %v)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readState(dir string) (*state, error) {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return nil, err
	}
	st := &state{}
	return st, json.Unmarshal(b, st)
}

func writeState(st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(st.StateDir, "state.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(st.StateDir, "state.json"))
}

// ours tells whether pid still runs one of our binaries: a pid in a stale state.json may have
// been reused by an unrelated process since (after a reboot, say).
func ours(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0 := string(bytes.SplitN(b, []byte{0}, 2)[0])
	base := filepath.Base(argv0)
	return base == "triage-cp" || base == "kwok"
}

// stopProcesses stops components in reverse start order: SIGTERM, then SIGKILL after 10 s.
func stopProcesses(ps []process) {
	for i := len(ps) - 1; i >= 0; i-- {
		pr := ps[i]
		if !alive(pr.PID) || !ours(pr.PID) {
			continue
		}
		_ = syscall.Kill(pr.PID, syscall.SIGTERM)
		deadline := time.Now().Add(10 * time.Second)
		for alive(pr.PID) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pr.PID) {
			_ = syscall.Kill(pr.PID, syscall.SIGKILL)
		}
	}
}

func runDown(args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	dir := fs.String("state-dir", filepath.Join(filepath.Dir(filepath.Dir(self)), ".run"), "state directory")
	release := fs.Int("release-pid", 0, "unregister this user pid, and stop only if no other registered user still runs")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir, err = filepath.Abs(*dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	unlock, err := lockStateDir(self, *dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lock:", err)
		return 1
	}
	defer unlock()
	if *release > 0 {
		_ = os.Remove(filepath.Join(usersDir(*dir), strconv.Itoa(*release)))
		if users := liveUsers(*dir, *release); len(users) > 0 {
			fmt.Printf("control plane left running: still used by pids %v\n", users)
			return 0
		}
	}
	st, err := readState(*dir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Println("no control plane recorded in", *dir)
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stopProcesses(st.Processes)
	_ = os.Remove(filepath.Join(*dir, "state.json"))
	fmt.Println("control plane stopped")
	return 0
}
