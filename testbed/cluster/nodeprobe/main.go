// Command nodeprobe is the workload of the testbed's real-node test (testbed/cluster,
// build tag realnode). It runs in pods on a real kubelet, from an image archive imported
// into the node's containerd:
//
//	nodeprobe check [--url URL --ca FILE --server-name NAME --expect TEXT]
//	    reads the API server through in-cluster config (the kubernetes Service,
//	    KUBERNETES_SERVICE_HOST and the ServiceAccount token): its version and a
//	    SelfSubjectReview of the pod's own identity; with --url, also GETs URL (a Service
//	    of another pod) trusting the CA in FILE and expects TEXT in the answer. Exits 0 when
//	    everything answered.
//	nodeprobe webhook --cert-dir DIR [--port 8443]
//	    serves HTTPS with DIR/tls.crt and DIR/tls.key: /healthz answers "ok <hostname>",
//	    /validate is a validating admission webhook that denies an object labelled
//	    pickyman.dev/nodeprobe=deny with a message naming the pod.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DenyLabel is the label whose value "deny" makes the webhook reject an object.
const DenyLabel = "pickyman.dev/nodeprobe"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: nodeprobe check|webhook [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "check":
		err = check(os.Args[2:])
	case "webhook":
		err = serveWebhook(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodeprobe:", err)
		os.Exit(1)
	}
}

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	url := fs.String("url", "", "a URL to GET (a Service of another pod)")
	caFile := fs.String("ca", "", "with --url: the CA bundle that signs its certificate")
	expect := fs.String("expect", "", "with --url: text the answer must contain")
	serverName := fs.String("server-name", "", "with --url: the name its certificate must carry (default: the URL's host)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("in-cluster config: %w", err)
	}
	fmt.Printf("in-cluster config: host %s (KUBERNETES_SERVICE_HOST=%s)\n", cfg.Host, os.Getenv("KUBERNETES_SERVICE_HOST"))
	cfg.Timeout = 10 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	v, err := kube.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("server version: %w", err)
	}
	fmt.Printf("server version: %s\n", v.GitVersion)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ssr, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("self subject review: %w", err)
	}
	fmt.Printf("authenticated as: %s\n", ssr.Status.UserInfo.Username)
	if *url == "" {
		return nil
	}
	pool := x509.NewCertPool()
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return err
		}
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("no certificate in %s", *caFile)
		}
	}
	client := &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: *serverName, MinVersion: tls.VersionTLS12}}}
	var body []byte
	for attempt := 0; ; attempt++ {
		resp, err := client.Get(*url)
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("status %s: %s", resp.Status, body)
		}
		if attempt == 20 {
			return fmt.Errorf("GET %s: %w", *url, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Printf("GET %s: %s\n", *url, strings.TrimSpace(string(body)))
	if !strings.Contains(string(body), *expect) {
		return fmt.Errorf("GET %s: answer %q lacks %q", *url, body, *expect)
	}
	return nil
}

func serveWebhook(args []string) error {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	dir := fs.String("cert-dir", "/certs", "directory of tls.crt and tls.key")
	port := fs.Int("port", 8443, "HTTPS port")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "ok %s\n", host) })
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad AdmissionReview", http.StatusBadRequest)
			return
		}
		var obj metav1.PartialObjectMetadata
		_ = json.Unmarshal(review.Request.Object.Raw, &obj)
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if obj.Labels[DenyLabel] == "deny" {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden,
				Message: fmt.Sprintf("denied by nodeprobe webhook in pod %s", host)}
		}
		fmt.Printf("admission %s %s/%s allowed=%v\n", review.Request.Operation, review.Request.Namespace, review.Request.Name, resp.Allowed)
		review.Response, review.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	})
	srv := &http.Server{Addr: fmt.Sprintf(":%d", *port), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("serving webhook on :%d as %s\n", *port, host)
	return srv.ListenAndServeTLS(filepath.Join(*dir, "tls.crt"), filepath.Join(*dir, "tls.key"))
}
