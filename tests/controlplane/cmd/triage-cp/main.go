// Command triage-cp is the Triage test control plane as one multi-call binary.
//
// The real kube-apiserver, kube-controller-manager and kube-scheduler (from k8s.io/kubernetes)
// and an embedded etcd share one set of compiled packages, which keeps a cold build on a
// small machine tolerable. Each component still runs as its own process, started by `up`,
// exactly as the upstream binaries would be: `triage-cp kube-apiserver --flags...`.
package main

import (
	"fmt"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: triage-cp {up|down|kubectl|etcd|kube-apiserver|kube-controller-manager|kube-scheduler} [flags]")
		os.Exit(2)
	}
	sub := os.Args[1]
	os.Args = append([]string{os.Args[0] + " " + sub}, os.Args[2:]...)
	switch sub {
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kubectl":
		// For people poking at the cluster by hand (up.sh prints how); the tests use Python.
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
		os.Exit(0)
	case "etcd":
		os.Exit(runEtcd(os.Args[1:]))
	case "up":
		os.Exit(runUp(os.Args[1:]))
	case "down":
		os.Exit(runDown(os.Args[1:]))
	default:
		fmt.Fprintf(os.Stderr, "unknown subcommand %q\n", sub)
		os.Exit(2)
	}
}
