package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

// runEtcd runs a single-member etcd, embedded, on loopback plain HTTP. It is reachable only
// from this machine and only by the apiserver; certificates would add nothing here.
func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "etcd data directory")
	clientURL := fs.String("listen-client-url", "http://127.0.0.1:2379", "client URL")
	peerURL := fs.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.Name = "triage"
	cfg.LogLevel = "warn"
	cu, err := url.Parse(*clientURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	pu, err := url.Parse(*peerURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	// Tests do not need durability across a power cut; skipping fsync makes etcd fast on
	// shared CI disks.
	cfg.UnsafeNoFsync = true
	// A single member elects itself; short ticks make that take milliseconds, not a second.
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 1
	}
	defer e.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintln(os.Stderr, "etcd ready on", cu.String())
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 1
	}
	select {
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 1
	case <-sig:
		return 0
	}
}
