package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kwokcrd "sigs.k8s.io/kwok/kustomize/crd"
)

// tokenLifetime of the reader and mutator kubeconfigs: long enough for any reused cluster.
const tokenLifetime = 30 * 24 * time.Hour

type authInfo func(*clientcmdapi.AuthInfo)

func clientCertAuth(cert, key string) authInfo {
	return func(a *clientcmdapi.AuthInfo) {
		a.ClientCertificate = cert
		a.ClientKey = key
	}
}

func tokenAuth(token string) authInfo {
	return func(a *clientcmdapi.AuthInfo) { a.Token = token }
}

func writeKubeconfig(path, server, ca string, auth authInfo, user string) error {
	caData, err := os.ReadFile(ca)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["triage-test"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	a := clientcmdapi.NewAuthInfo()
	auth(a)
	cfg.AuthInfos[user] = a
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: "triage-test", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = user
	return clientcmd.WriteToFile(*cfg, path)
}

// bootstrap applies manifests/*.yaml (nodes, identities, RBAC), writes token kubeconfigs for
// the ServiceAccounts and waits until the cluster can run a pod: nodes Ready (kwok) and the
// "default" ServiceAccount created (controller-manager).
func bootstrap(ctx context.Context, st *state, adminKubeconfig, manifestDir string, phase func(string)) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))

	// kwok serves pods/log from files named by Logs objects; its CRD ships in the kwok module
	// (kwokctl applies it the same way) and kwok only watches it.
	if err := applyBytes(ctx, dyn, mapper, kwokcrd.Logs); err != nil {
		return fmt.Errorf("kwok Logs CRD: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := applyBytes(ctx, dyn, mapper, b); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	phase("manifests")

	for _, sa := range []struct{ name, file string }{
		{"triage-reader", "reader.kubeconfig"},
		{"triage-mutator", "mutator.kubeconfig"},
	} {
		exp := int64(tokenLifetime.Seconds())
		tr, err := cs.CoreV1().ServiceAccounts("triage-system").CreateToken(ctx, sa.name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}},
			metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("token for %s: %w", sa.name, err)
		}
		path := filepath.Join(st.StateDir, sa.file)
		if err := writeKubeconfig(path, st.Server, st.CACert, tokenAuth(tr.Status.Token), sa.name); err != nil {
			return err
		}
		if sa.name == "triage-reader" {
			st.ReaderKubeconfig = path
		} else {
			st.MutatorKubeconfig = path
		}
	}
	if err := writeState(st); err != nil {
		return err
	}

	err = poll(ctx, "fake nodes Ready", func() (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return len(nodes.Items) > 0 && ready == len(nodes.Items), nil
	})
	if err != nil {
		return err
	}
	phase("nodes ready")
	err = poll(ctx, "ServiceAccount default/default", func() (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return err
	}
	phase("default serviceaccount")
	// kwok installs its Logs CRD itself; set_pod_logs needs it served.
	logsGVR := schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}
	err = poll(ctx, "kwok Logs API", func() (bool, error) {
		_, err := dyn.Resource(logsGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		return err
	}
	phase("kwok logs api")
	return nil
}

func applyBytes(ctx context.Context, dyn dynamic.Interface, mapper *restmapper.DeferredDiscoveryRESTMapper, b []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		// Create, not apply: Node status (capacity, allocatable) is only kept on create.
		if _, err := ri.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
}

func poll(ctx context.Context, what string, f func() (bool, error)) error {
	for {
		ok, err := f()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
